"""The packaged paper numbers against an independent parse of the paper page (every printed number)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from resispec.report.paper import load_paper_values

HERE = Path(__file__).parent
DATASETS = {"CNN/DM": "cnn_dailymail", "OpenWebText": "openwebtext", "C4": "c4"}
ACC_THRU = [("resispec", "accepted_length"), ("resispec", "throughput")]
ACC_THRU += [("specinfer", "accepted_length"), ("specinfer", "throughput")]


def paper_page() -> Path:
    """The shared paper page if present, else the copy vendored next to this test."""
    name = "resispec-paper-page.txt"
    candidates = [os.environ.get("RESISPEC_PAPER_PAGE"), HERE.parents[2] / "shared/paper" / name]
    candidates += [HERE.parents[1] / "shared/paper" / name, HERE / "data" / name]
    return next(Path(c) for c in candidates if c and Path(c).is_file())


def _num(text: str) -> float:
    return float(text.replace("$\\times$", "").strip())


def _table1(f: list[str]) -> dict[tuple, float]:
    key = ("table1", DATASETS[f[3]], float(f[2]), "d5b3")
    names = ACC_THRU + [("resispec", "accepted_length_gain"), ("resispec", "speedup")]
    return {(*key, method, metric): _num(value) for (method, metric), value in zip(names, f[4:], strict=True)}


def _table2(f: list[str]) -> dict[tuple, float]:
    names = ["accepted_length", "throughput", "accepted_length_gain", "speedup"]
    return {
        ("table2", None, 1.0, None, f[0].lower(), metric): _num(value)
        for metric, value in zip(names, f[1:], strict=True)
        if value != "–"
    }


def _table3(f: list[str]) -> dict[tuple, float]:
    names = [
        ("any", "verification_cost"),
        ("resispec", "throughput"),
        ("specinfer", "throughput"),
        ("resispec", "speedup"),
    ]
    return {
        ("table3", None, None, f[0], method, metric): _num(value)
        for (method, metric), value in zip(names, f[1:], strict=True)
    }


def _table4(f: list[str], method: str) -> dict[tuple, float]:
    """One row of KL values; ``method``: the row's, or the one above when its first cell is empty."""
    return {
        ("table4", DATASETS[f[1]], temperature, None, method, "kl"): _num(value)
        for temperature, value in ((1.0, f[2]), (0.6, f[3]))
    }


def _table5(f: list[str]) -> dict[tuple, float]:
    names = ["accepted_length", "marginal_gain", "efficiency"]
    return {
        ("table5", "cnn_dailymail", None, f"k{f[0]}d4", "specinfer", metric): _num(value)
        for metric, value in zip(names, f[1:], strict=True)
        if value != "-"
    }


def _table6(f: list[str]) -> dict[tuple, float]:
    return {
        ("table6", DATASETS[f[3]], float(f[2]), f[4], method, metric): _num(value)
        for (method, metric), value in zip(ACC_THRU, f[5:], strict=True)
    }


def _row_table(f: list[str]) -> str | None:
    """Which table a tab-separated row of the page belongs to (None: no table's)."""
    if f[0] == "Llama-2-7B" and len(f) == 10 and f[1] == "JF68M":
        return "table1"
    if f[0] in ("Sequoia", "Sequoia+ResiSpec", "EAGLE", "EAGLE+ResiSpec") and len(f) == 5:
        return "table2"
    if re.fullmatch(r"d\d+b\d+", f[0]) and len(f) == 5:
        return "table3"
    if len(f) == 4 and re.fullmatch(r"[\d.]+e-\d+", f[2].strip()):
        return "table4"
    if len(f) == 4 and re.fullmatch(r"\d+", f[0]) and re.fullmatch(r"\d\.\d+", f[1]):
        return "table5"
    if f[0] == "Sheared-2.7B" and len(f) == 9:
        return "table6"
    return None


ROW_PARSERS = {"table1": _table1, "table2": _table2, "table3": _table3, "table5": _table5, "table6": _table6}


def parse_page(text: str) -> dict[tuple, float]:
    """(table, dataset, temperature, tree, method, metric) -> value, for every number of Tables 1-6."""
    cells: dict[tuple, float] = {}
    kl_method = None
    for f in (line.split("\t") for line in text.splitlines()):
        table = _row_table(f)
        if table == "table4":
            kl_method = f[0].strip().lower() or kl_method
            cells.update(_table4(f, kl_method))
        elif table is not None:
            cells.update(ROW_PARSERS[table](f))
    return cells


def packaged_cells() -> dict[tuple, float]:
    frame = load_paper_values()
    frame = frame[~frame["derived"]]
    keys = ["table", "dataset", "temperature", "tree", "method", "metric"]
    out = {}
    for row in frame.to_dict("records"):
        key = tuple(None if (isinstance(row[k], float) and row[k] != row[k]) else row[k] for k in keys)
        out[key] = row["value"]
    return out


@pytest.fixture(scope="module")
def parsed() -> dict[tuple, float]:
    return parse_page(paper_page().read_text(encoding="utf-8"))


def test_parser_finds_every_table(parsed):
    counts = {t: sum(k[0] == t for k in parsed) for t in (f"table{i}" for i in range(1, 7))}
    # Rows x printed number columns, counted on the page: 5x6, 4 rows with 2 or 4, 4x4, 6x2, 1+3x3, 6x4.
    assert counts == {"table1": 30, "table2": 12, "table3": 16, "table4": 12, "table5": 10, "table6": 24}


def test_every_packaged_number_matches_the_page(parsed):
    packaged = packaged_cells()
    assert set(packaged) == set(parsed), f"keys differ: {set(packaged) ^ set(parsed)}"
    wrong = {
        k: (packaged[k], parsed[k]) for k in parsed if packaged[k] != pytest.approx(parsed[k], rel=1e-12)
    }
    assert not wrong, f"packaged vs page: {wrong}"


def test_spot_values_from_the_page(parsed):
    # A few cells looked up by key in the page parse (not typed in twice): the KL in scientific notation,
    # a 3-decimal throughput and a ratio printed with $\times$.
    packaged = packaged_cells()
    keys = [
        ("table4", "c4", 1.0, None, "resispec", "kl"),
        ("table3", None, None, "d7b2", "resispec", "speedup"),
    ]
    for key in keys + [("table6", "c4", 1.0, "d4b4", "specinfer", "throughput")]:
        assert packaged[key] == parsed[key]


def test_derived_table6_speedups_follow_the_printed_throughputs(parsed):
    frame = load_paper_values()
    derived = frame[frame["derived"]]
    assert len(derived) == 6 and set(derived["metric"]) == {"speedup"}
    for row in derived.to_dict("records"):
        key = ("table6", row["dataset"], row["temperature"], row["tree"])
        ratio = parsed[(*key, "resispec", "throughput")] / parsed[(*key, "specinfer", "throughput")]
        assert row["value"] == pytest.approx(ratio, abs=0.005)


def test_bad_file_is_named(tmp_path):
    bad = tmp_path / "paper.yaml"
    bad.write_text("tables:\n  table1:\n    rows:\n      - {values: {speedup: 1.0}}\n")
    with pytest.raises(ValueError, match="method/metric"):
        load_paper_values(bad)
    with pytest.raises(ValueError, match="not found"):
        load_paper_values(tmp_path / "missing.yaml")
