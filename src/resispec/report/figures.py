"""Report figures (matplotlib, object API: no pyplot state). Each maker returns a ``Figure``."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

from resispec.report.bounds import ordered_methods, own_bound
from resispec.report.compare import FP_KL_LEVEL, candidates
from resispec.report.exactness import draws, kl_by_method
from resispec.verify.registry import names

#: Figure 3's five disjoint parts of a step (``resispec.audit.statistics.TIME_PARTS``). The paper splits a
#: step into drafting, target verification and ResiSpec shaping: its "target verification" is our target
#: forward + verification + commit, its shaping our shaping (docs/reproduction-notes.md).
TIME_PARTS = {
    "time_draft_s": "drafting",
    "time_target_s": "target forward",
    "time_verify_s": "verification",
    "time_shaping_s": "shaping",
    "time_commit_s": "commit (cache cuts, drafter update)",
}
#: methods whose rows lack the commit part come from records written before the five-way split
OLD_SPLIT_NOTE = "* records before the five-way split: verification includes shaping and commit"
SHAPING_PARTS = {
    "shaping_budgeting_s": "budgeting",
    "shaping_redistribution_s": "redistribution",
    "shaping_proxy_s": "proxy formulation",
}


def placeholder(title: str, reason: str) -> Figure:
    """A small figure that says why the real one could not be drawn."""
    fig = Figure(figsize=(6, 2.2))
    ax = fig.add_subplot()
    ax.set_axis_off()
    ax.text(0.5, 0.6, title, ha="center", fontsize=12, weight="bold", transform=ax.transAxes)
    ax.text(0.5, 0.3, reason, ha="center", fontsize=10, wrap=True, transform=ax.transAxes)
    return fig


def _errorbar(ax, x, rows: pd.DataFrame, **kwargs):
    err = np.vstack([rows["mean"] - rows["ci_low"], rows["ci_high"] - rows["mean"]]).clip(min=0)
    ax.errorbar(x, rows["mean"], yerr=err, capsize=3, **kwargs)


AR_METRIC = "speedup_vs_autoregressive"


def _ar_rows(frame: pd.DataFrame | None) -> pd.DataFrame:
    """Our speedups over autoregressive decoding in a tidy table (empty when not recorded)."""
    if frame is None or frame.empty:
        return pd.DataFrame(columns=["method", "temperature", "tree", "mean", "ci_low", "ci_high"])
    return frame[(frame["metric"] == AR_METRIC) & frame["mean"].notna()]


def _ar_title(method: str, ar: pd.DataFrame) -> str:
    rows = ar[ar["method"] == method].groupby("temperature")["mean"].mean()
    parts = [f"T={t:g}: {v:.2f}×" for t, v in rows.items()]
    return f"{method}\n(vs autoregressive: {', '.join(parts)})" if parts else method


def _ar_panel(ax, ar: pd.DataFrame, x_of, xlabel: str) -> None:
    """Speedup over autoregressive decoding per method (95% CI) against x_of(row)."""
    if ar.empty:
        ax.set_axis_off()
        ax.text(0.5, 0.5, "no autoregressive baseline recorded", ha="center", transform=ax.transAxes)
        return
    for method, rows in ar.groupby("method", sort=True):
        rows = rows.assign(x=[x_of(r) for r in rows.to_dict("records")]).sort_values("x")
        _errorbar(ax, rows["x"], rows, marker="o", label=method)
    ax.axhline(1.0, color="0.5", lw=0.8, ls="--")
    ax.set(xlabel=xlabel, ylabel="speedup vs autoregressive (×)", title="Ours: over plain decoding")
    ax.legend(fontsize=7)


def figure1(frame: pd.DataFrame | None) -> Figure:
    """Acceptance rate of the i-th sibling candidate, one panel per method, one line per temperature."""
    pos = frame[frame["metric"].str.fullmatch(r"position_acceptance_\d+")] if frame is not None else None
    if pos is not None:  # a verifier that selects among all candidates at once has no sequential trials
        pos = pos[~pos["method"].str.split("+").str[-1].isin(names(sequential=False))]
    if pos is None or pos.empty:
        return placeholder("Figure 1", "no position_acceptance_{i} rows in results/tables/figure1.csv")
    pos = pos.assign(position=pos["metric"].str.rsplit("_", n=1).str[1].astype(int))
    methods = sorted(pos["method"].unique())
    fig = Figure(figsize=(3.6 * len(methods), 3.2), layout="constrained")
    axes = fig.subplots(1, len(methods), sharey=True, squeeze=False)[0]
    for ax, method in zip(axes, methods, strict=True):
        for temperature, rows in pos[pos["method"] == method].groupby("temperature"):
            rows = rows.groupby("position", as_index=False)[["mean", "ci_low", "ci_high"]].mean()
            _errorbar(ax, rows["position"], rows, marker="o", label=f"T={temperature:g}")
        ax.set(
            title=_ar_title(method, _ar_rows(frame)),
            xlabel="sibling position i",
            xticks=sorted(pos["position"].unique()),
        )
        ax.legend(fontsize=8)
    axes[0].set_ylabel("acceptance rate of the i-th candidate")
    return fig


def _metric_table(frame: pd.DataFrame, parts: dict[str, str]) -> pd.DataFrame:
    rows = frame[frame["metric"].isin(parts)]
    return rows.pivot_table(index="method", columns="metric", values="mean", aggfunc="mean").reindex(
        columns=list(parts)
    )


def figure3(frame: pd.DataFrame | None) -> Figure:
    """Left: time per step split into drafting / target forward / verification / shaping / commit (a
    method marked * has no commit part: its records predate the split). Right: the shaping-cost split."""
    times = _metric_table(frame, TIME_PARTS).dropna(how="all") if frame is not None else pd.DataFrame()
    if times.empty:
        return placeholder("Figure 3", "no time_*_s rows in results/tables/figure3.csv")
    shaping = _metric_table(frame, SHAPING_PARTS).dropna(how="all")
    old_split = times["time_commit_s"].isna()
    times.index = [f"{m} *" if old else m for m, old in zip(times.index, old_split, strict=True)]
    fig = Figure(figsize=(15, 0.5 * len(times) + 2.6), layout="constrained")
    left, right, speed = fig.subplots(1, 3)
    _stacked(left, times.fillna(0.0), TIME_PARTS, scale=1e3)
    left.set(xlabel="milliseconds per decoding step", title="Runtime breakdown per method")
    if old_split.any():
        left.text(0.0, 1.08, OLD_SPLIT_NOTE, fontsize=7, transform=left.transAxes)
    if shaping.empty:
        right.set_axis_off()
        right.text(0.5, 0.5, "no shaping_*_s rows recorded", ha="center", transform=right.transAxes)
    else:
        share = shaping.fillna(0.0).div(shaping.fillna(0.0).sum(axis=1), axis=0) * 100
        _stacked(right, share, SHAPING_PARTS, scale=1.0)
        right.set(xlabel="% of shaping time", title="Shaping cost split", xlim=(0, 100))
    ar = _ar_rows(frame).groupby("method", as_index=False)[["mean", "ci_low", "ci_high"]].mean()
    if ar.empty:
        speed.set_axis_off()
        speed.text(0.5, 0.5, "no autoregressive baseline recorded", ha="center", transform=speed.transAxes)
    else:
        err = np.vstack([ar["mean"] - ar["ci_low"], ar["ci_high"] - ar["mean"]]).clip(min=0)
        speed.barh(ar["method"], ar["mean"], xerr=err, capsize=3, color="tab:gray")
        speed.axvline(1.0, color="k", lw=0.8, ls="--")
        speed.set(xlabel="speedup vs autoregressive (×, 95% CI)", title="Ours: over plain decoding")
        speed.invert_yaxis()
    return fig


def _stacked(ax, table: pd.DataFrame, parts: dict[str, str], scale: float) -> None:
    start = np.zeros(len(table))
    for metric, label in parts.items():
        width = table[metric].to_numpy(dtype=float) * scale
        ax.barh(table.index, width, left=start, label=label)
        start += width
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.2), ncol=min(len(parts), 3))
    ax.invert_yaxis()


def _paper_vs_ours(ax, rows: pd.DataFrame, x, *, label: str) -> None:
    ok = rows["ours"].notna().to_numpy()
    err = np.vstack([rows["ours"] - rows["ours_low"], rows["ours_high"] - rows["ours"]])[:, ok]
    ax.errorbar(np.asarray(x)[ok], rows["ours"][ok], yerr=err, fmt="o-", capsize=3, label=f"ours ({label})")
    ax.plot(x, rows["value"], "s--", color="0.4", label="paper")


def table3_plot(comparison: pd.DataFrame) -> Figure:
    """Speedup of ResiSpec over SpecInfer per tree: ours (95% CI) against the paper's."""
    rows = comparison[(comparison["table"] == "table3") & (comparison["metric"] == "speedup")]
    if rows.empty or rows["ours"].isna().all():
        return placeholder("Table 3", "no speedup per tree could be computed from results/tables/table3.csv")
    fig = Figure(figsize=(11, 3.4), layout="constrained")
    ax, speed = fig.subplots(1, 2)
    x = np.arange(len(rows))
    _paper_vs_ours(ax, rows, x, label="resispec / specinfer")
    ax.axhline(1.0, color="0.7", lw=0.8)
    ax.set(xticks=x, xticklabels=rows["tree"], xlabel="tree (depth d, branching b)", ylabel="speedup (×)")
    ax.set_title("Table 3: speedup by tree topology")
    ax.legend(fontsize=8)
    position = {tree: i for i, tree in enumerate(rows["tree"])}
    ar = _ar_comparison(comparison, "table3")
    ar = ar[ar["tree"].isin(position)]
    _ar_panel(speed, ar, lambda r: position[r["tree"]], "tree (depth d, branching b)")
    speed.set(xticks=x, xticklabels=rows["tree"])
    return fig


def _ar_comparison(comparison: pd.DataFrame, table: str) -> pd.DataFrame:
    """Our speedups over autoregressive decoding as the comparison holds them, in tidy-table columns."""
    rows = comparison[(comparison["table"] == table) & (comparison["metric"] == AR_METRIC)]
    rows = rows[rows["ours"].notna()]
    return rows.rename(columns={"ours": "mean", "ours_low": "ci_low", "ours_high": "ci_high"})


def table5_plot(comparison: pd.DataFrame) -> Figure:
    """Expected accepted length and efficiency against the number of candidates N (depth 4)."""
    rows = comparison[comparison["table"] == "table5"]
    if rows.empty or rows["ours"].isna().all():
        return placeholder("Table 5", "no accepted lengths for trees d4bN in results/tables/table5.csv")
    fig = Figure(figsize=(14, 3.4), layout="constrained")
    panels = {"accepted_length": "expected accepted length (EAL)", "efficiency": "efficiency η = ΔEAL / ΔN"}
    axes = fig.subplots(1, 3)
    ar = _ar_comparison(comparison, "table5")
    _ar_panel(
        axes[2], ar[ar["tree"].str.fullmatch(r"k\d+d\d+")], lambda r: candidates(r["tree"]), "candidates N"
    )
    for ax, (metric, ylabel) in zip(axes[:2], panels.items(), strict=True):
        part = rows[rows["metric"] == metric]
        n = [candidates(t) for t in part["tree"]]
        _paper_vs_ours(ax, part, n, label="specinfer")
        ax.set(xscale="log", xticks=n, xticklabels=[str(v) for v in n], xlabel="candidates N", ylabel=ylabel)
        ax.minorticks_off()
        ax.legend(fontsize=8)
    fig.suptitle("Table 5: scaling of multi-candidate schemes")
    return fig


def audit_scatter(nodes: pd.DataFrame | None) -> Figure:
    """Per-node acceptance against its bound: alpha* for i.i.d. candidates (specinfer, ers, optimal,
    resispec; optimal lies on the diagonal), alpha*_wor for sequoia. Points above the diagonal prove a
    verifier inexact."""
    if nodes is None or nodes.empty:
        return placeholder("Exactness audit", "no per-node audit file (results/audit/nodes.csv)")
    fig = Figure(figsize=(5.2, 4.6), layout="constrained")
    ax = fig.add_subplot()
    for method in ordered_methods(nodes):
        rows = nodes[nodes["method"] == method]
        bound, name = own_bound(rows, method)
        iid = draws(method) == "with_replacement"
        if bound is None:
            bound, name = rows["alpha_star"], "alpha*, which does not bound it"
        label = method if iid else f"{method} (vs {name})"
        ax.scatter(bound, rows["acceptance"], s=12, alpha=0.6, label=label, marker="o" if iid else "x")
    lims = [0.0, 1.0]
    ax.plot(lims, lims, color="k", lw=0.8, label="acceptance = bound")
    ax.set(
        xlim=lims, ylim=lims, xlabel="bound: α* (i.i.d. candidates), α*_wor (sequoia)", ylabel="acceptance"
    )
    ax.set_title("Per-node acceptance vs its bound")
    ax.legend(fontsize=8)
    return fig


def audit_kl(tables: dict, nodes: pd.DataFrame | None, floor: float = 1e-18) -> Figure:
    """KL(p || output law) per method, log scale: mean (95% CI) and max; floating-point level marked."""
    kl = kl_by_method(tables, nodes)
    if kl.empty:
        return placeholder("KL per method", "no kl values in the per-node audit nor in results/tables/")
    fig = Figure(figsize=(6.4, 3.8), layout="constrained")
    ax = fig.add_subplot()
    values = kl[["mean", "ci_low", "ci_high", "max"]].astype(float)
    shown = values.where(np.isfinite(values), np.nan).clip(lower=floor).fillna(floor)
    err = np.vstack([shown["mean"] - shown["ci_low"], shown["ci_high"] - shown["mean"]]).clip(min=0)
    label = "mean over exact-law nodes (95% CI)"
    ax.bar(shown.index, shown["mean"], yerr=err, capsize=3, color="tab:blue", label=label)
    ax.scatter(shown.index, shown["max"], marker="v", color="k", zorder=3, label="max (finite)")
    for x, (method, row) in enumerate(kl.iterrows()):
        notes = [
            f"inf on {row['n_inf']}" if row["n_inf"] else "",
            f"{row['n_truncated']} trunc." * bool(row["n_truncated"]),
        ]
        text = ", ".join(filter(None, notes))
        if text:
            where = (x, shown.loc[method, "max"])
            ax.annotate(
                text, where, textcoords="offset points", xytext=(0, 8), ha="center", fontsize=7, color="r"
            )
    ax.axhline(FP_KL_LEVEL, color="tab:red", ls="--", lw=1, label=f"floating-point level ({FP_KL_LEVEL:g})")
    ax.set(yscale="log", ylabel="KL(p || output law)", title=f"KL per method ({kl['source'].iloc[0]})")
    ax.set_ylim(top=max(1.0, float(shown["max"].max()) * 1e3))
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=3)
    return fig


def save(fig: Figure, figures_dir: str | Path, name: str) -> dict[str, Path]:
    """Write ``{name}.png`` (150 dpi) and ``{name}.pdf``; returns their paths."""
    figures_dir = Path(figures_dir)
    figures_dir.mkdir(parents=True, exist_ok=True)
    paths = {"png": figures_dir / f"{name}.png", "pdf": figures_dir / f"{name}.pdf"}
    fig.savefig(paths["png"], dpi=150)
    fig.savefig(paths["pdf"])
    return paths


FIGURE_NAMES = ("figure1", "figure3", "table3_plot", "table5_plot", "audit_scatter", "audit_kl")


def make_figures(tables: dict, comparison: pd.DataFrame, nodes: pd.DataFrame | None, figures_dir) -> dict:
    """Draw and save every report figure; returns ``{name: {"png": path, "pdf": path}}``."""
    figures = {
        "figure1": figure1(tables.get("figure1")),
        "figure3": figure3(tables.get("figure3")),
        "table3_plot": table3_plot(comparison),
        "table5_plot": table5_plot(comparison),
        "audit_scatter": audit_scatter(nodes),
        "audit_kl": audit_kl(tables, nodes),
    }
    return {name: save(fig, figures_dir, name) for name, fig in figures.items()}
