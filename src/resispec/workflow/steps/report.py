"""`resispec report`: LaTeX/HTML tables, figures, report.html and report.pdf from the tidy tables."""

from __future__ import annotations

import json
import logging
from pathlib import Path

from resispec.workflow.cli_types import existing_file, json_object
from resispec.workflow.steps.common import add_settings, add_table_inputs

HELP = "build the report (tables, figures, report.html, report.pdf when latexmk exists)"
log = logging.getLogger(__name__)


def add_arguments(parser) -> None:
    add_table_inputs(parser)
    parser.add_argument(
        "--variants", nargs="*", type=existing_file, default=[], help="every resispec variant per node (CSVs)"
    )
    parser.add_argument("--environment", type=existing_file, help="environment.json recorded by the run")
    parser.add_argument(
        "--models", nargs="*", type=existing_file, default=[], help="READY.json of every prepared model"
    )
    parser.add_argument("--notebook", help="the executed notebook (dependency only)")
    parser.add_argument(
        "--paper-limits",
        dest="paper_limits",
        type=existing_file,
        help="paper_limits.csv (read from the tables' folder)",
    )
    parser.add_argument("--html", required=True, help="output report.html")
    parser.add_argument("--figures", required=True, help="output folder of figures")
    parser.add_argument("--latex-tables", dest="latex_tables", help="output folder of LaTeX/HTML tables")
    parser.add_argument("--config", type=json_object, default={}, help="the run's configuration (JSON)")
    parser.add_argument(
        "--captions",
        type=json_object,
        help="ignored: the captions (resispec.report.captions) the Snakemake report's caption templates "
        "pick from; report.html reads the same files",
    )
    add_settings(parser)


def run(args) -> int:
    from resispec.report import ReportSources, build_report

    out_dir = Path(args.html).parent
    environment = json.loads(Path(args.environment).read_text()) if args.environment else None
    result = build_report(
        Path(args.tables[0]).parent,
        args.figures,
        out_dir,
        config=args.config,
        sources=ReportSources(
            audit=list(args.nodes) or None,
            variants=list(args.variants) or None,
            model_info=args.models,
            environment=environment,
        ),
    )
    if Path(result["html"]).resolve() != Path(args.html).resolve():
        Path(result["html"]).replace(args.html)
    log.info("report: %s; pdf: %s", args.html, result.get("pdf") or result.get("pdf_message"))
    return 0
