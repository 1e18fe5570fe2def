"""`resispec notebook`: execute the results notebook against this run's tables (never stale)."""

from __future__ import annotations

from resispec.workflow.cli_types import existing_file
from resispec.workflow.steps.common import add_settings, add_table_inputs

HELP = "execute notebooks/results.ipynb against the run's tidy tables; write the executed copy"


def add_arguments(parser) -> None:
    add_table_inputs(parser)
    parser.add_argument("--notebook", required=True, help="output: the executed notebook")
    parser.add_argument(
        "--source", type=existing_file, required=True, help="the notebook kept in git (without outputs)"
    )
    add_settings(parser)


def run(args) -> int:
    from pathlib import Path

    from resispec.report.notebook import execute_notebook

    params = {
        "tables_dir": str(Path(args.tables[0]).parent.resolve()),
        "nodes_path": [str(Path(p).resolve()) for p in args.nodes] or None,
        "figures_dir": None,
    }
    execute_notebook(args.source, args.notebook, params)
    return 0
