"""A bad experiment sheet, cell or table id is rejected when the sheets are read (before any job runs),
naming the file, the row and the column; tree specs go through the parser `generate` uses, with its
message."""

import pytest

from resispec.decoding.arguments import generate_tree
from resispec.workflow.config import validate_config
from resispec.workflow.sheets import SHEET_TABLES, SheetError, expand_jobs, load_sheet

HEADER = "row\ttarget\tdraft\tdataset\ttemperature\ttree\tmethods"
GOOD = "a\tt\td\tc4\t1\td3b2\tspecinfer"
CONFIG = validate_config(
    {"models": {"t": {"source": "hf:a/b"}, "d": {"source": "hf:a/c"}}, "data": {"datasets": ["c4"]}}
)

# tree specs the parser rejects (tests/decoding/test_generate_arguments.py: the same through generate)
BAD_TREES = [
    "d3b0",
    "d0b2",
    "d1b4",
    "chain0",
    "k0d3",
    "sequoia1x3",
    "sequoia8x0",
    "auto-magic",
    "blob",
    "d4b2x",
    "d40b4",
    "d12b6",
]

# (sheet body after the header, column named, text the message must hold)
BAD_ROWS = [
    ("a\tt\td\tc4\thot\td3b2\tspecinfer", "temperature", "'hot' is not a temperature number"),
    ("a\tt\td\tc4\t-1\td3b2\tspecinfer", "temperature", "-1.0 is less than the minimum of 0"),
    ("a\tt\td\tc4\t1\td3b2\tmagic", "methods", "'magic' does not match"),
    ("a\tt\tnope\tc4\t1\td3b2\tspecinfer", "draft", "model 'nope' is not defined under `models`"),
    ("a\tnope\td\tc4\t1\td3b2\tspecinfer", "target", "model 'nope' is not defined under `models`"),
    ("a\tt\td\tc5\t1\td3b2\tspecinfer", "dataset", "'c5' is not one of"),
    ("a\tt\td\topenwebtext\t1\td3b2\tspecinfer", "dataset", "'openwebtext' is not in data.datasets"),
    ("a b\tt\td\tc4\t1\td3b2\tspecinfer", "row", "'a b' does not match"),
    ("a\tt\td\tc4\t1\t\tspecinfer", "tree", "'tree' is a required property"),
    (f"{GOOD}\n{GOOD}", "row", "duplicate row id 'a'"),
    *[(f"a\tt\td\tc4\t1\t{spec}\tspecinfer", "tree", f"tree spec {spec!r}: ") for spec in BAD_TREES],
]


def sheet(tmp_path, body: str, header: str = HEADER):
    path = tmp_path / "sheet.tsv"
    path.write_text(f"{header}\n{body}\n")
    return path


@pytest.mark.parametrize(("body", "column", "message"), BAD_ROWS)
def test_bad_cell_names_file_row_and_column(tmp_path, body, column, message):
    path = sheet(tmp_path, body)
    with pytest.raises(SheetError) as error:
        load_sheet(path, CONFIG)
    text = str(error.value)
    row = body.count("\n") + 1
    assert f"{path}: row {row} (" in text and f"column '{column}'" in text and message in text, text
    if column == "tree" and "required" not in message:  # the very message generate gives for the same spec
        spec = body.split("\t")[5]
        with pytest.raises(ValueError) as from_generate:
            generate_tree(spec)
        assert text.endswith(f"column 'tree': {from_generate.value}")


@pytest.mark.parametrize(
    ("body", "header", "message"),
    [
        (f"{GOOD}\textra", HEADER, "row 1 (a): more cells than the header has columns"),
        (
            GOOD + "\tred",
            HEADER + "\tcolour",
            "row 1 (a) column 'colour': Additional properties are not allowed",
        ),
        (
            GOOD + "\t0",
            HEADER + "\tnum_prompts",
            "row 1 (a) column 'num_prompts': 0 is less than the minimum",
        ),
        (GOOD + "\tmany", HEADER + "\tnum_prompts", "column 'num_prompts': 'many' is not a num_prompts"),
        (
            GOOD + "\t500",
            HEADER + "\tnum_prompts",
            "column 'num_prompts': 500 exceeds data.num_prompts (200)",
        ),
        ("", HEADER, "has no rows"),
    ],
)
def test_bad_sheet_shape_names_file_and_row(tmp_path, body, header, message):
    path = sheet(tmp_path, body, header)
    with pytest.raises(SheetError) as error:
        load_sheet(path, CONFIG)
    assert str(path) in str(error.value) and message in str(error.value), str(error.value)


@pytest.mark.parametrize("table", ["tabel1", "audit", "table7", "Table1"])
def test_unknown_table_id_is_named(tmp_path, table):
    config = {**CONFIG, "experiments": {table: str(sheet(tmp_path, GOOD))}}
    with pytest.raises(SheetError) as error:
        expand_jobs(config)
    assert f"config key 'experiments.{table}': unknown table id {table!r}" in str(error.value)


def test_missing_sheet_file_is_named(tmp_path):
    config = {**CONFIG, "experiments": {"table1": str(tmp_path / "absent.tsv")}}
    with pytest.raises(SheetError, match="experiment sheet not found: .*absent.tsv"):
        expand_jobs(config)


def test_sheet_tables_are_the_report_tables_less_the_audit():
    from resispec.report.tidy import TABLES

    assert SHEET_TABLES == tuple(t for t in TABLES if t != "audit")


def test_sheets_take_profile_trees_and_every_generate_tree(tmp_path):
    specs = ["sequoia8x4", "auto", "auto-ers", "k2d3", "eagle", "chain3", "d4b2"]
    body = "\n".join(f"r{i}\tt\td\tc4\t1\t{spec}\tspecinfer" for i, spec in enumerate(specs))
    assert [row["tree"] for row in load_sheet(sheet(tmp_path, body), CONFIG)] == specs
