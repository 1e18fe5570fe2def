"""``optimal`` beside ResiSpec and SpecInfer in every paper table, and the findings on each method's
distance to its bound (synthetic tidy results of conftest.py plus optimal rows)."""

from __future__ import annotations

import shutil

import numpy as np
import pandas as pd
import pytest

from resispec.report import ReportSources, build_report
from resispec.report.beside import beside_cells, paper_rows, twin_method
from resispec.report.bounds import bound_findings
from resispec.report.ours_only import AR_METRIC
from resispec.report.paper import load_paper_values
from resispec.report.tidy import read_nodes, read_tidy

PAPER_TABLES = tuple(f"table{i}" for i in range(1, 7))
RATIO_METRICS = ("speedup_vs_specinfer", "accepted_length_gain_vs_specinfer", AR_METRIC)


def beside(comparison: pd.DataFrame) -> pd.DataFrame:
    """The ours-only rows set beside paper cells (the autoregressive speedup rows are ours-only too)."""
    return comparison[comparison["ours_only"] & (comparison["metric"] != AR_METRIC)]


def add_optimal_rows(tables_dir) -> None:
    """Every resispec row of the synthetic tables again as method 'optimal' (accepted lengths +5%)."""
    for path in sorted(tables_dir.glob("*.csv")):
        frame = pd.read_csv(path)
        rows = frame[frame["method"] == "resispec"].copy()
        rows["method"] = "optimal"
        # means and their paired ratios to a baseline (speedups, gains) alike
        lengths = rows["metric"].isin(["accepted_length", "throughput", *RATIO_METRICS])
        rows.loc[lengths, ["mean", "ci_low", "ci_high"]] *= 1.05
        pd.concat([frame, rows]).to_csv(path, index=False)


def optimal_nodes(rng, count: int = 30) -> pd.DataFrame:
    alpha = rng.uniform(0.4, 0.95, count)
    key = dict(method="optimal", dataset="cnn_dailymail", temperature=1.0, tree="d5b3")
    return pd.DataFrame(
        [
            {
                **key,
                "node": i,
                "acceptance": a,
                "alpha_star": a,
                "bound": a,
                "kl": 1e-17,
                "tv": 1e-12,
                "law_err": 0.0,
            }
            for i, a in enumerate(alpha)
        ]
    )


@pytest.fixture(scope="module")
def report(tmp_path_factory, synthetic_results, synthetic_config):
    root = tmp_path_factory.mktemp("beside") / "results"
    paths = {name: shutil.copytree(synthetic_results[name], root / name) for name in ("tables", "nodes")}
    add_optimal_rows(paths["tables"])
    optimal_nodes(np.random.default_rng(3)).to_csv(paths["nodes"] / "cnn_t1_optimal.csv", index=False)
    out = root.parent / "out"
    result = build_report(
        paths["tables"],
        out / "figures",
        out / "reports",
        config=synthetic_config,
        sources=ReportSources(audit=paths["nodes"]),
        pdf=False,
    )
    return {"comparison": pd.read_csv(result["comparison"]), "html": result["html"].read_text(), **paths}


@pytest.mark.parametrize(
    "method,twin",
    [
        ("resispec", "optimal"),
        ("specinfer", "optimal"),
        ("sequoia+resispec", "sequoia+optimal"),
        ("sequoia", None),
        ("eagle", None),
        ("any", None),
    ],
)
def test_twin_method(method, twin):
    assert twin_method(method, "optimal") == twin


def test_every_resispec_and_specinfer_cell_gets_an_optimal_cell():
    paper = load_paper_values()
    cells = beside_cells(paper, "optimal")
    sources = paper[paper["method"].map(lambda m: twin_method(m, "optimal") is not None)]
    expected = {(r.table, r.order, twin_method(r.method, "optimal"), r.metric) for r in sources.itertuples()}
    assert set(zip(cells["table"], cells["order"], cells["method"], cells["metric"], strict=True)) == expected
    assert set(cells["table"]) == set(PAPER_TABLES)
    assert cells["value"].isna().all()
    speedup = cells[(cells["table"] == "table1") & (cells["metric"] == "speedup")]
    assert set(speedup["baseline"]) == {"specinfer"}


def test_optimal_rows_stand_beside_the_paper_rows(report):
    comparison = report["comparison"]
    for table in PAPER_TABLES:
        rows = comparison[comparison["table"] == table]
        mine = beside(rows)
        assert len(mine) > 0 and mine["method"].str.endswith("optimal").all(), table
        assert mine["value"].isna().all() and mine["agrees"].isna().all() and mine["ratio"].isna().all()
        assert (rows["order"].diff().fillna(0) >= 0).all(), table  # page order kept
        for order, part in rows.groupby("order", sort=False):  # optimal rows right after their page row
            flags = (part["ours_only"] & (part["metric"] != AR_METRIC)).astype(int)
            assert (flags.diff().fillna(0) >= 0).all() and flags.iloc[0] == 0, (table, order)
    ran = beside(comparison)
    ran = ran[ran["ours"].notna()]
    assert ran["note"].str.startswith("not in the paper").all()
    assert len(ran) > 0
    kl = ran[ran["metric"] == "kl"]  # no paper value, so no paper-agreement rule in the note
    assert len(kl) > 0 and not kl["note"].str.contains("agreement").any()


def test_optimal_speedup_is_derived_from_our_throughputs(report):
    comparison = report["comparison"]
    ours = read_tidy(report["tables"] / "table1.csv")
    key = (ours["dataset"] == "c4") & np.isclose(ours["temperature"], 1.0) & (ours["metric"] == "throughput")
    expected = ours[key & (ours["method"] == "optimal")]["mean"].iloc[0]
    expected /= ours[key & (ours["method"] == "specinfer")]["mean"].iloc[0]
    row = comparison[
        (comparison["table"] == "table1")
        & (comparison["method"] == "optimal")
        & (comparison["dataset"] == "c4")
        & np.isclose(comparison["temperature"], 1.0)
        & (comparison["metric"] == "speedup")
    ]
    assert row["ours"].iloc[0] == pytest.approx(expected, rel=1e-12)


def test_html_shows_optimal_rows_without_paper_values(report):
    text = report["html"]
    assert text.count("not in the paper: our optimal exact verifier") == int(
        beside(report["comparison"])["ours"].notna().sum()
    )


def test_agreement_findings_count_paper_cells_only(report):
    paper = paper_rows(report["comparison"])
    keys = ["table", "method", "metric", "order"]
    total = len(paper.drop_duplicates(keys))
    assert f"of the {total} paper cells" in report["html"]


def test_bound_findings_from_the_numbers(synthetic_results):
    nodes = pd.concat([read_nodes(synthetic_results["nodes"]), optimal_nodes(np.random.default_rng(2))])
    lines = bound_findings(nodes, ("specinfer", "ers", "optimal", "sequoia", "deterministic"))
    assert [line.split(":")[0] for line in lines] == [
        "specinfer (exact)",
        "ers (exact)",
        "optimal (exact)",
        "resispec (not exact)",
    ]
    optimal = nodes[nodes["method"] == "optimal"]
    assert f"within 1e-09 of alpha* on {len(optimal)} of {len(optimal)} nodes" in lines[2]
    resispec = nodes[nodes["method"] == "resispec"]
    excess = resispec["acceptance"] - resispec["alpha_star"]
    assert f"above alpha* on {int((excess > 1e-9).sum())} of {len(resispec)} nodes" in lines[3]
    assert f"by up to {excess.max():.3g}" in lines[3]
    ers = nodes[nodes["method"] == "ers"]
    assert f"on average {(ers['alpha_star'] - ers['acceptance']).mean():.3g} below alpha*" in lines[1]


def test_figure1_leaves_optimal_out(report):
    """Per-position acceptance needs sequential trials; optimal selects among all candidates at once."""
    from resispec.report.figures import figure1

    frame = read_tidy(report["tables"] / "figure1.csv")
    assert "optimal" in set(frame["method"])
    titles = sorted(ax.get_title() for ax in figure1(frame).axes)
    assert titles == sorted(set(frame["method"]) - {"optimal"})
