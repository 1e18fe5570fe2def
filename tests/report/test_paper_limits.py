"""The report's "paper's numbers against the exact limit": the paper's rows (the issue's numbers), our own
runs' rows with hand-made tidy frames, the section in report.html, and `resispec paper-limits`."""

import pandas as pd
import pytest

from resispec.report.paper import load_paper_values
from resispec.report.paper_limits import (
    ABOVE,
    FREE,
    WITHIN,
    chain_levels,
    limits_table,
    own_rows,
    paper_rows,
)
from resispec.report.paper_limits_section import conclusion, section_html, section_latex
from resispec.workflow.commands import main


@pytest.fixture(scope="module")
def paper_frame():
    return pd.DataFrame(paper_rows(load_paper_values()))


def test_chain_readings():
    assert chain_levels("k1d4") == 3 and chain_levels("k1c4") == 4
    assert chain_levels("k2d4") is None and chain_levels("d5b3") is None


def test_paper_rows_reproduce_the_issues_numbers(paper_frame):
    """1.89 on the chain bounds d5b3 by ~4.33 (3 chain levels) and ~4.14 (4); 4.68 at T=1 is above both
    when Table 5 ran at T=1; 4.14 at T=0.6 is within both when it ran at T=0.6."""
    constrained = paper_frame[paper_frame["verdict"] != FREE]
    assert len(constrained) == 4 and set(constrained["tree"]) == {"d5b3"}
    for _, row in constrained.iterrows():
        expected = 4.33 if row["chain_levels"] == 3 else 4.14
        assert row["bound_low"] <= expected + 0.006 and row["bound_high"] >= expected - 0.006
        assert row["bound_high"] - row["bound_low"] <= 0.01
        assert row["chain_temperature"] == row["temperature"]
        assert row["verdict"] == (ABOVE if row["value"] == 4.68 else WITHIN)
    free = paper_frame[paper_frame["verdict"] == FREE]
    assert free["note"].str.contains("another dataset").any()
    assert free["note"].str.contains("does not state the tree").any()
    assert free["note"].str.contains("another target").any()
    text = " ".join(conclusion(paper_frame))
    assert "If Table 5 ran at T=1: table1 cnn_dailymail T=1 d5b3 resispec: 4.68" in text
    assert "If Table 5 ran at T=0.6: no paper cell" in text


def _tidy(tree, method, metrics: dict, table="table1") -> list[dict]:
    key = dict(
        table=table, target="t", draft="d", dataset="cnn_dailymail", temperature=1.0, tree=tree, method=method
    )
    return [
        {**key, "metric": m, "mean": v[0], "ci_low": v[1], "ci_high": v[2], "n": 4.0}
        for m, v in metrics.items()
    ]


def test_own_rows_bound_each_tree_of_the_same_setting():
    chain = _tidy("k1d4", "specinfer", {"accepted_length": (1.89, 1.8, 1.9)}, "table5")
    rows = chain + _tidy(
        "d5b3",
        "optimal",
        {
            "accepted_length": (3.0, 2.9, 3.1),
            "accepted_length_no_bonus": (2.0, 1.9, 2.1),
            "level_acceptance_1": (0.8, 0.7, 0.9),
            "level_acceptance_2": (0.5, 0.4, 0.6),
        },
    )
    rows += _tidy("d5b3", "resispec", {"accepted_length": (4.6, 4.5, 4.7)})
    rows += _tidy("d5b3", "ers", {"accepted_length": (4.6, 4.5, 4.7)})
    frame = pd.DataFrame(rows)
    tables = {"table5": frame[frame["table"] == "table5"], "table1": frame[frame["table"] == "table1"]}
    out = {row["method"]: row for row in own_rows(tables)}
    assert set(out) == {"optimal", "resispec", "ers"}
    assert out["optimal"]["verdict"] == WITHIN and out["optimal"]["level_acceptance"] == "0.800;0.500"
    assert out["optimal"]["no_bonus"] == 2.0
    assert out["resispec"]["verdict"] == ABOVE and "note" not in out["resispec"]
    assert out["ers"]["verdict"] == ABOVE and "assumption is wrong" in out["ers"]["note"]
    assert out["optimal"]["bound_high_at_chain_high"] >= out["optimal"]["bound_high"]
    table = limits_table(load_paper_values(), tables)
    assert "exact-method row(s) exceed the bound" in " ".join(conclusion(table))
    assert "paper-limits-ours" in section_html(table) and "longtable" in section_latex(table)


def test_section_comes_before_the_paper_tables(built_report):
    html = built_report["result"]["html"].read_text()
    start = html.index('id="paper-limits"')
    assert start < html.index('id="tables"')
    section = html[start : html.index('id="tables"')]
    assert "Assumptions" in section and "4.68" in section and "above the bound" in section


def test_cli_prints_both_limits(capsys):
    assert main(["paper-limits", "--chain-eal", "1.89", "--chain-levels", "4", "--tree", "d5b3"]) == 0
    out = capsys.readouterr().out
    assert "k = 3" in out and "(a) same acceptance" in out
    words = out.split("(b) any joint law of per-level acceptances: ")[1].split()
    low, high = float(words[0]), float(words[4])  # "LOW <= sup <= HIGH"
    assert low <= 4.14 <= high + 0.005 and high - low <= 0.01


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--chain-eal", "0.5", "--chain-levels", "3", "--tree", "d5b3"], "--chain-eal must be >= 1"),
        (["--chain-eal", "1.5", "--chain-levels", "x", "--tree", "d5b3"], "integer >= 1"),
        (["--chain-eal", "1.5", "--chain-levels", "3", "--tree", "k1d4"], "--tree must be dXbY"),
    ],
)
def test_cli_names_bad_arguments(argv, message, capsys):
    with pytest.raises(SystemExit):
        main(["paper-limits", *argv])
    assert message in capsys.readouterr().err


def test_cli_errors_for_a_chain_longer_than_its_levels_and_missing_arguments():
    with pytest.raises(SystemExit, match="chain_eal must lie in"):
        main(["paper-limits", "--chain-eal", "4.5", "--chain-levels", "3", "--tree", "d5b3"])
    with pytest.raises(SystemExit, match="--chain-eal required"):
        main(["paper-limits", "--chain-levels", "3", "--tree", "d5b3"])


def test_cli_writes_the_table(tmp_path, synthetic_results):
    out = tmp_path / "paper_limits.csv"
    tables = [str(p) for p in sorted(synthetic_results["tables"].glob("*.csv"))]
    assert main(["paper-limits", "--csv", str(out), "--tables", *tables]) == 0
    frame = pd.read_csv(out)
    assert set(frame["source"]) == {"paper", "ours"}
    assert (frame[frame["source"] == "ours"]["chain_tree"] == "k1d4").all()
