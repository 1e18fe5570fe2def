"""`resispec aggregate`: raw records + exactness rows of one table's jobs -> one tidy CSV."""

from __future__ import annotations

import logging

from resispec.workflow.cli_types import existing_file, json_list
from resispec.workflow.steps.common import add_settings

HELP = (
    "aggregate one table's records and exactness rows into a tidy CSV with bootstrap 95-percent intervals "
    "(paired ratios, node metrics clustered by prompt)"
)
log = logging.getLogger(__name__)


def add_arguments(parser) -> None:
    parser.add_argument(
        "--records", nargs="+", type=existing_file, required=True, help="raw record JSONL files of the runs"
    )
    parser.add_argument(
        "--baselines",
        nargs="*",
        type=existing_file,
        default=[],
        help="raw records of the autoregressive baselines the runs share (each job names its baseline)",
    )
    parser.add_argument(
        "--exactness", nargs="+", type=existing_file, required=True, help="exactness CSVs of the runs"
    )
    parser.add_argument("--table", required=True, help="output tidy CSV")
    parser.add_argument("--jobs", type=json_list, required=True, help="the table's jobs (JSON list)")
    add_settings(parser)


def run(args) -> int:
    from resispec.audit.aggregate import table_rows, write_table

    rows = table_rows(args.jobs, args.records, args.exactness, args.settings, args.baselines)
    write_table(args.table, rows)
    log.info("wrote %d rows for %d jobs to %s", len(rows), len(args.jobs), args.table)
    return 0
