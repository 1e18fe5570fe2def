"""Findings written from the numbers: exactness (KL, Monte Carlo, acceptance vs alpha*), the engine's
exactness, speed against autoregressive decoding, and verdicts against the paper."""

from __future__ import annotations

import pandas as pd

from resispec.audit.prompt_count import prompts_needed
from resispec.report.beside import paper_rows
from resispec.report.bounds import bound_findings
from resispec.report.compare import AR_METRIC, COMPARABLE, FP_KL_LEVEL, HALF_WIDTH_LIMIT, VERDICTS
from resispec.report.exactness import SCOPE_LABELS, draws, kl_by_method, monte_carlo_rows
from resispec.report.tables import display_rows, fmt_number

ALPHA_TOLERANCE = 1e-9  #: acceptance above alpha* + this counts as an excess (exact per-node values)
ENGINE_EXACTNESS = (
    "Node-level KL of an exact verifier (specinfer, sequoia, ers, optimal) is ~0 by construction: its "
    "output law equals p on every node up to float64 rounding, so the KL table checks the law computation, "
    "not the decoding engine. The engine's exactness (that tree decoding with these verifiers samples the "
    "target's own sequence law) is established by the sequence-law chi-square tests of "
    "tests/decoding/test_engine_exact.py: every exact method, with the model drafter and the EAGLE "
    "drafter, at T = 1 and 0.6, on a complete tree, a Sequoia DP tree and the EAGLE tree, with (specinfer, "
    "ers) and without (sequoia) replacement, at a stated significance level and power."
)


def _kl_sentence(method: str, row: pd.Series) -> str:
    if row["n"] == 0:
        return f"{method}: no audited node, so its KL is not judged."
    upper = f"; certified upper end {fmt_number(row['upper'])}" if row["n_truncated"] else ""
    head = (
        f"{method}: over {row['n']} nodes of {row['n_prompts']:.0f} prompts, mean KL(p || law) = "
        f"{fmt_number(row['mean'])} [{fmt_number(row['ci_low'])}, {fmt_number(row['ci_high'])}]{upper}, "
        f"max {fmt_number(row['max'])}"
    )
    if row["n_inf"]:
        head += f", KL = inf on {row['n_inf']} (the law gives zero mass to a token p can emit)"
    if row["n_truncated"]:
        worst = fmt_number(row["max_law_err"])
        head += f"; {row['n_truncated']} nodes had a pruned law (pruned mass up to {worst})"
    if row["upper_high"] < FP_KL_LEVEL and not row["n_inf"]:
        return head + ": at floating-point level."
    if row["ci_low"] >= FP_KL_LEVEL or row["n_inf"]:
        return head + ": NOT at floating-point level."
    return head + ": undecided (the certified interval straddles floating-point level)."


def kl_findings(tables: dict, nodes: pd.DataFrame | None) -> list[str]:
    """One sentence per method: is its KL at floating-point level (certified bounds included)?"""
    kl = kl_by_method(tables, nodes)
    if kl.empty:
        return ["No KL was measured in this run (no per-node audit, no kl rows in the tables)."]
    head = (
        f"Source: {kl['source'].iloc[0]}; KL(p || law) per node (certified lower and upper ends where the "
        f"law recursion was pruned), 95% intervals from a bootstrap over prompts; floating-point level means "
        f"below {FP_KL_LEVEL:g}."
    )
    if SCOPE_LABELS["lumped"] in kl["source"].iloc[0]:
        head += " No node kept its full-vocabulary rows, so these are the lumped figures."
    return [head] + [_kl_sentence(method, row) for method, row in kl.iterrows()]


def monte_carlo_findings(nodes: pd.DataFrame | None) -> list[str]:
    """Per method: does the real sampler's Monte Carlo agree with the full-vocabulary law recursion?"""
    rows = monte_carlo_rows(nodes)
    if rows.empty:
        return ["No node was cross-checked by Monte Carlo in this run."]
    out = []
    for method, part in rows.groupby("method", sort=True):
        agree = int(part["mc_consistent"].astype(str).str.lower().eq("true").sum())
        out.append(
            f"{method}: the real sampler, run {int(part['mc_draws'].min()):,} times on each of {len(part)} "
            f"full-vocabulary nodes, agrees with the law recursion's certified intervals (acceptance, and "
            f"TV on the set where the law exceeds p) on {agree} of {len(part)} nodes; MC TV there "
            f"{fmt_number(part['mc_tv'].mean())} (95% intervals of half-width up to "
            f"{fmt_number(((part['mc_tv_high'] - part['mc_tv_low']) / 2).max())}), recursion "
            f"[{fmt_number(part['tv'].mean())}, {fmt_number(part['tv_upper'].mean())}] (two 95% intervals "
            "per node: a correct law still misses one by chance on up to ~10% of nodes)."
        )
    return out


def alpha_findings(nodes: pd.DataFrame | None, tolerance: float = ALPHA_TOLERANCE) -> list[str]:
    """Per method: nodes accepting above alpha*, which proves an i.i.d.-candidate verifier inexact."""
    if nodes is None or nodes.empty:
        return ["No per-node audit was recorded, so acceptance was not checked against alpha*."]
    out = []
    for method, rows in nodes.groupby("method"):
        excess = rows["acceptance"] - rows["alpha_star"]
        above, how = int((excess > tolerance).sum()), draws(method)
        if how != "with_replacement":
            out.append(
                f"{method}: draws its candidates {(how or 'in an unknown way').replace('_', ' ')}, so alpha* "
                f"(the bound for k i.i.d. candidates) does not bound it; above it on {above} of "
                f"{len(rows)} nodes."
            )
        elif above:
            out.append(
                f"{method}: acceptance exceeds alpha* on {above} of {len(rows)} nodes "
                f"(max excess {excess.max():.3g}); no exact verifier can do that, so {method} is inexact."
            )
        else:
            gap = (rows["alpha_star"] - rows["acceptance"]).mean()
            out.append(f"{method}: acceptance never exceeds alpha* ({len(rows)} nodes; mean gap {gap:.3g}).")
    return out


def verdict_counts(comparison: pd.DataFrame, comparable: bool = True) -> dict[str, int]:
    """Verdicts of the paper cells we computed (comparable quantities only, or the others)."""
    cells = comparison[comparison["value"].notna() & comparison["verdict"].notna()]
    cells = cells[cells["metric"].isin(COMPARABLE) == comparable]
    return {name: int((cells["verdict"] == name).sum()) for name in VERDICTS}


def _counts_text(counts: dict[str, int]) -> str:
    return ", ".join(f"{n} {name}" for name, n in counts.items())


def paper_findings(comparison: pd.DataFrame) -> list[str]:
    """Coverage and verdicts (never bare interval overlap); every comparable disagreement stated plainly."""
    paper = comparison[comparison["value"].notna()]
    computed = paper["ours"].notna()
    keys = ["table", "method", "metric", "order"]
    cells, done = paper.drop_duplicates(keys), paper[computed].drop_duplicates(keys)
    out = [
        f"We computed {len(done)} of the {len(cells)} paper cells from our runs ({int(computed.sum())} "
        f"table rows: one per model pair of ours); {len(cells) - len(done)} were not run (each says why in "
        "its table).",
        f"Verdicts on the comparable cells (ratios, KL levels, verification costs, Table 5 gains): "
        f"{_counts_text(verdict_counts(comparison))}. A cell agrees only when the paper's value lies inside "
        f"our 95% interval and that interval's half-width is at most {HALF_WIDTH_LIMIT:.0%} of our value; it "
        "is inconclusive when the value lies inside a wider interval.",
        f"Absolute quantities (accepted lengths; our models differ from the paper's, so agreement is not "
        f"expected): {_counts_text(verdict_counts(comparison, comparable=False))}.",
    ]
    disagree = paper[computed & (paper["verdict"] == "disagrees") & paper["metric"].isin(COMPARABLE)]
    for table, part in disagree.groupby("table", sort=True):
        items = [
            f"{r['Method']} {r['Quantity']} ({r['Dataset']}, T={r['T']}, {r['Tree']}): "
            f"paper {r['Paper']}, ours {r['Ours (95% CI)']}"
            for r in display_rows(part)
        ]
        out.append(
            {"text": f"{table}: our numbers disagree with the paper on {len(items)} cells:", "items": items}
        )
    return out


def speed_findings(comparison: pd.DataFrame) -> list[str]:
    """Our speedup over autoregressive decoding of the same prompts, per table."""
    rows = comparison[(comparison["metric"] == AR_METRIC) & comparison["ours"].notna()]
    if rows.empty:
        return ["No run recorded an autoregressive baseline, so no speedup over plain decoding is known."]
    out = []
    for table, part in rows.groupby("table", sort=True):
        faster = int((part["ours_low"] > 1).sum())
        slower = int((part["ours_high"] < 1).sum())
        best = part.loc[part["ours"].idxmax()]
        out.append(
            f"{table}: speedup over autoregressive decoding from {fmt_number(part['ours'].min())}× to "
            f"{fmt_number(part['ours'].max())}× (best: {best['method']} on {best['tree']}); "
            f"{faster} of {len(part)} configurations are faster than plain decoding (95% interval above 1), "
            f"{slower} slower (below 1)."
        )
    return out


def prompt_findings(comparison: pd.DataFrame, table: str = "table1") -> list[str]:
    """Table 1's accepted-length gains: their 95% half-widths and the prompts that would bring each to
    ``HALF_WIDTH_LIMIT`` of the gain (1 / sqrt(n) shrinkage assumed)."""
    rows = comparison[(comparison["table"] == table) & (comparison["metric"] == "accepted_length_gain")]
    rows = rows[rows["ours"].notna()]
    if rows.empty:
        return [f"{table}: no accepted-length gain was computed, so no prompt count is estimated."]
    half = (rows["ours_high"] - rows["ours_low"]) / 2 / rows["ours"].abs()
    needed = [prompts_needed(h, int(n), HALF_WIDTH_LIMIT) for h, n in zip(half, rows["n"], strict=True)]
    known = [n for n in needed if n is not None]
    most = (
        f"{max(known)} prompts per cell would bring every one to {HALF_WIDTH_LIMIT:.0%}"
        if known
        else ("no interval could be computed")
    )
    return [
        f"{table}: the accepted-length gains rest on {int(rows['n'].min())}-{int(rows['n'].max())} prompts; "
        f"their 95% half-widths are {half.min():.1%}-{half.max():.1%} of the gain; about {most} "
        "(1/sqrt(n) shrinkage assumed; `resispec prompt-count` computes this from a run's records)."
    ]


def findings(comparison: pd.DataFrame, tables: dict, nodes: pd.DataFrame | None) -> dict:
    """All findings grouped by heading (agreement with the paper: paper cells only, not ours_only rows)."""
    from resispec.verify import EXACT_METHODS

    return {
        "Exactness: KL per method": kl_findings(tables, nodes),
        "Exactness: Monte Carlo cross-check of the full-vocabulary laws": monte_carlo_findings(nodes),
        "Exactness: acceptance against alpha*": alpha_findings(nodes),
        "Exactness of the decoding engine": [ENGINE_EXACTNESS],
        "Speed against autoregressive decoding": speed_findings(comparison),
        "Exactness: distance to each method's bound": bound_findings(nodes, EXACT_METHODS),
        "Agreement with the paper": paper_findings(paper_rows(comparison)),
        "Prompt counts": prompt_findings(comparison),
    }
