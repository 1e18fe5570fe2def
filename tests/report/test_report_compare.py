"""Matching paper cells with our tidy rows: derived ratios, wildcards, model pairs, reasons."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from resispec.report.compare import AR_METRIC, compare_all, compare_table
from resispec.report.paper import load_paper_values
from resispec.report.tidy import load_tables, method_label, read_nodes, read_tidy
from resispec.report.verdicts import verdict

AR = "autoregressive"


@pytest.fixture(scope="module")
def comparison(synthetic_results, synthetic_config):
    tables = load_tables(synthetic_results["tables"])
    return compare_all(load_paper_values(), tables, reasons=synthetic_config["report"]["reasons"])


def _one(frame: pd.DataFrame, **key) -> pd.Series:
    rows = frame
    for field, value in key.items():
        rows = rows[np.isclose(rows[field], value)] if field == "temperature" else rows[rows[field] == value]
    assert len(rows) == 1, f"{key}: {len(rows)} rows"
    return rows.iloc[0]


@pytest.mark.parametrize(
    ("host", "verifier", "label"),
    [
        ("specinfer", "resispec", "resispec"),
        ("", "ers", "ers"),
        ("sequoia", "sequoia", "sequoia"),
        ("sequoia", "resispec", "sequoia+resispec"),
        ("eagle", "sequoia", "eagle"),
        ("eagle", "ers", "eagle+ers"),
        ("sequoia", "autoregressive", "autoregressive"),
    ],
)
def test_method_label(host, verifier, label):
    assert method_label(host, verifier) == label


def test_every_paper_cell_has_a_row(comparison):
    paper = load_paper_values()
    keys = ["table", "method", "metric", "order"]
    cells = comparison[comparison["metric"] != AR_METRIC]
    assert set(map(tuple, cells[keys].to_numpy())) == set(map(tuple, paper[keys].to_numpy()))
    missing = cells[cells["ours"].isna()]
    assert missing["note"].str.startswith("not run: ").all()


def test_every_table_has_each_methods_speedup_over_autoregressive(comparison, synthetic_results):
    """Ours-only rows: one per (configuration, method) of our table, no paper value and no verdict."""
    for table in [f"table{i}" for i in range(1, 7)]:
        ours = read_tidy(synthetic_results["tables"] / f"{table}.csv")
        expected = ours[ours["metric"] == AR_METRIC]
        rows = comparison[(comparison["table"] == table) & (comparison["metric"] == AR_METRIC)]
        assert len(rows) == len(expected) > 0, table
        assert rows["value"].isna().all() and rows["verdict"].isna().all()
        assert set(rows["method"]) == set(expected["method"]) and AR not in set(rows["method"])


def test_speedup_is_the_paired_row_against_the_baselines_verifier(comparison, synthetic_results):
    """Ratio cells take the aggregator's paired row {metric}_vs_{baseline verifier} (table 2: the host's)."""
    ours = read_tidy(synthetic_results["tables"] / "table1.csv")
    paired = _one(
        ours, method="resispec", dataset="openwebtext", temperature=0.6, metric="speedup_vs_specinfer"
    )
    row = _one(comparison, table="table1", dataset="openwebtext", temperature=0.6, metric="speedup")
    assert (row["ours"], row["ours_low"], row["ours_high"]) == (
        paired["mean"],
        paired["ci_low"],
        paired["ci_high"],
    )
    assert "paired bootstrap" in row["note"] and "delta" not in row["note"]
    host = read_tidy(synthetic_results["tables"] / "table2.csv")
    gain = _one(host, method="sequoia+resispec", metric="accepted_length_gain_vs_sequoia")
    cell = _one(comparison, table="table2", method="sequoia+resispec", metric="accepted_length_gain")
    assert cell["ours"] == gain["mean"]


def test_without_a_paired_row_the_ratio_is_derived_and_says_independence(synthetic_results):
    ours = read_tidy(synthetic_results["tables"] / "table1.csv")
    ours = ours[~ours["metric"].str.contains("_vs_")]
    key = dict(dataset="openwebtext", temperature=0.6, metric="throughput")
    expected = _one(ours, method="resispec", **key)["mean"] / _one(ours, method="specinfer", **key)["mean"]
    out = compare_table(load_paper_values().query("table == 'table1'"), ours)
    row = _one(out, dataset="openwebtext", temperature=0.6, metric="speedup")
    assert row["ours"] == pytest.approx(expected, rel=1e-12)
    assert row["ours_low"] < row["ours"] < row["ours_high"]
    assert row["ratio"] == pytest.approx(expected / row["value"])
    assert "independence assumed" in row["note"]


@pytest.mark.parametrize(
    ("value", "ours", "low", "high", "expected"),
    [
        (1.5, 1.5, 1.4, 1.6, "agrees"),  # inside, half-width 0.1 <= 10% of 1.5
        (1.5, 1.5, 1.2, 1.8, "inconclusive"),  # inside, half-width 0.3 > 0.15
        (2.0, 1.5, 1.4, 1.6, "disagrees"),  # outside
        (1.0, 1.5, 0.5, 2.5, "inconclusive"),  # inside a very wide interval
        (1.5, 1.5, np.nan, np.nan, "inconclusive"),  # no interval (one prompt)
    ],
)
def test_verdicts(value, ours, low, high, expected):
    cell = {"metric": "speedup", "value": value}
    assert verdict(cell, {"ours": ours, "ours_low": low, "ours_high": high}) == expected


@pytest.mark.parametrize(
    ("value", "low", "high", "upper_high", "expected"),
    [
        (1e-9, 1e-17, 3e-17, 5e-17, "agrees"),  # both at floating-point level
        (1e-9, 1e-3, 2e-3, 5e-3, "disagrees"),  # ours certainly above
        (1e-9, 1e-17, 3e-17, 1e-3, "inconclusive"),  # certified upper end above the level
    ],
)
def test_kl_verdicts_use_the_certified_upper_end(value, low, high, upper_high, expected):
    row = {"ours": low, "ours_low": low, "ours_high": high, "ours_upper_high": upper_high}
    assert verdict({"metric": "kl", "value": value}, row) == expected


def test_tidy_ratio_rows_take_precedence(synthetic_results):
    ours = read_tidy(synthetic_results["tables"] / "table1.csv")
    extra = _one(ours, method="resispec", dataset="c4", temperature=1.0, metric="throughput").copy()
    extra.update({"metric": "speedup", "mean": 1.5, "ci_low": 1.4, "ci_high": 1.6})
    cells = load_paper_values().query("table == 'table1'")
    out = compare_table(cells, pd.concat([ours, extra.to_frame().T], ignore_index=True))
    row = _one(out, dataset="c4", temperature=1.0, metric="speedup")
    assert (row["ours"], row["ours_low"], row["ours_high"]) == (1.5, 1.4, 1.6)
    assert not row["derived_ours"]


def test_throughput_gets_no_ratio_but_accepted_length_does(comparison):
    thru = comparison[(comparison["metric"] == "throughput") & comparison["ours"].notna()]
    assert len(thru) > 0 and thru["ratio"].isna().all()
    acc = comparison[(comparison["metric"] == "accepted_length") & comparison["ours"].notna()]
    assert np.allclose(acc["ratio"], acc["ours"] / acc["value"])


def test_unstated_fields_match_any_and_show_ours(comparison):
    row = _one(comparison, table="table3", tree="d4b5", method="resispec", metric="throughput")
    assert pd.isna(row["dataset"]) and row["our_dataset"] == "cnn_dailymail"


def test_efficiency_is_gain_per_added_candidate(comparison, synthetic_results):
    ours = read_tidy(synthetic_results["tables"] / "table5.csv")
    length = {
        t: _one(ours, tree=t, method="specinfer", metric="accepted_length")["mean"] for t in ("k2d4", "k4d4")
    }
    row = _one(comparison, table="table5", tree="k4d4", metric="efficiency")
    assert row["ours"] == pytest.approx((length["k4d4"] - length["k2d4"]) / 2)


def test_one_row_per_model_pair(comparison):
    rows = comparison[(comparison["table"] == "table6") & (comparison["metric"] == "speedup")]
    assert len(rows) == 12  # 6 paper cells (derived speedups) x 2 draft models of ours
    assert set(rows["our_models"]) == {"tiny-target / tiny-draft", "tiny-target / tiny-draft-small"}


def test_reasons(comparison, synthetic_results):
    eagle = comparison[comparison["method"].str.startswith("eagle")]
    assert len(eagle) == 6 and (eagle["note"] == "not run: no EAGLE head in this synthetic run").all()
    tables = load_tables(synthetic_results["tables"])
    tables.pop("table6")
    out = compare_all(load_paper_values(), tables)
    assert (
        out.query("table == 'table6'")["note"]
        == "not run: results/tables/table6.csv was not produced by this run"
    ).all()
    t1 = tables["table1"]
    out = compare_table(load_paper_values().query("table == 'table1'"), t1[t1["dataset"] != "c4"])
    assert _one(out, dataset="c4", method="specinfer", metric="throughput")["note"] == (
        "not run: our run has no rows with dataset=c4 (have: cnn_dailymail, openwebtext)"
    )


def test_kl_agreement_is_about_floating_point_level(comparison):
    kl = comparison[comparison["metric"] == "kl"]
    assert (kl.loc[kl["method"] == "specinfer", "verdict"] == "agrees").all()  # ours ~1e-16, paper ~1e-9
    assert (kl.loc[kl["method"] == "resispec", "verdict"] == "disagrees").all()  # ours 0.02


def test_node_files_are_concatenated(synthetic_results):
    nodes = read_nodes(synthetic_results["nodes"])
    assert len(nodes) == 6 * (40 + 4) and set(nodes["method"]) == {"specinfer", "ers", "resispec"}
    assert read_nodes(None) is None


def test_bad_table_names_the_file_and_columns(tmp_path):
    bad = tmp_path / "table1.csv"
    bad.write_text("table,method\ntable1,resispec\n")
    with pytest.raises(ValueError, match=r"table1\.csv: missing columns"):
        read_tidy(bad)


def test_non_finite_values_count_as_not_run(synthetic_results):
    ours = read_tidy(synthetic_results["tables"] / "table1.csv")
    key = (ours["dataset"] == "c4") & (ours["temperature"] == 1.0) & (ours["metric"] == "throughput")
    ours.loc[key & (ours["method"] == "resispec"), "mean"] = np.nan
    out = compare_table(load_paper_values().query("table == 'table1'"), ours)
    row = _one(out, dataset="c4", temperature=1.0, method="resispec", metric="throughput")
    assert np.isnan(row["ours"]) and "not finite" in row["note"]
    assert "baseline" not in _one(out, dataset="c4", temperature=1.0, metric="speedup")["note"]


def test_tree_aliases_stand_in_for_the_paper_trees(synthetic_results):
    tables = load_tables(synthetic_results["tables"])
    out = compare_all(load_paper_values(), tables, tree_aliases={"d7b2": "d5b3"})
    row = _one(out, table="table3", paper_tree="d7b2", method="resispec", metric="throughput")
    same = _one(out, table="table3", paper_tree="d5b3", method="resispec", metric="throughput")
    assert row["ours"] == same["ours"] and "stands in for the paper's d7b2" in row["note"]
