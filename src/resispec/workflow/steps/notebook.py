"""`resispec notebook`: execute the results notebook against this run's tables (never stale)."""

from __future__ import annotations

from resispec.workflow.steps.common import add_settings

HELP = "execute notebooks/results.ipynb against the run's tidy tables; write the executed copy"


def add_arguments(parser) -> None:
    parser.add_argument("--tables", nargs="+", required=True, help="tidy table CSVs (their folder is used)")
    parser.add_argument("--nodes", nargs="*", default=[], help="per-node exactness CSVs")
    parser.add_argument("--notebook", required=True, help="output: the executed notebook")
    parser.add_argument("--source", required=True, help="the notebook kept in git (without outputs)")
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
