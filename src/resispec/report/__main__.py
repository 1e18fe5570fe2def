"""``python -m resispec.report``: build the report (and optionally execute the results notebook)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import yaml

from resispec.report import ReportSources, build_report


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m resispec.report", description=__doc__)
    parser.add_argument("--tables", required=True, help="folder of tidy tables (results/tables)")
    parser.add_argument("--figures", required=True, help="folder for figure PNG/PDF files")
    parser.add_argument("--out", required=True, help="folder for report.html, report.pdf, tables/")
    parser.add_argument("--config", help="the run's configuration (YAML or JSON) shown in the report")
    parser.add_argument("--audit-nodes", help="per-node audit file (results/audit/nodes.csv)")
    parser.add_argument("--environment", help="JSON with the run's hardware and versions")
    parser.add_argument("--no-pdf", action="store_true", help="skip the LaTeX/PDF build")
    parser.add_argument("--no-redraw", action="store_true", help="embed the figures already in --figures")
    return parser.parse_args(argv)


def _load_mapping(path: str | None, what: str) -> dict | None:
    if path is None:
        return None
    if not Path(path).is_file():
        raise ValueError(f"{what} file not found: {path}")
    data = yaml.safe_load(Path(path).read_text())  # YAML is a superset of JSON
    if not isinstance(data, dict):
        raise ValueError(f"{what} file {path} does not hold a mapping")
    return data


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    result = build_report(
        args.tables,
        args.figures,
        args.out,
        config=_load_mapping(args.config, "--config") or {},
        sources=ReportSources(
            audit=args.audit_nodes, environment=_load_mapping(args.environment, "--environment")
        ),
        pdf=not args.no_pdf,
        redraw=not args.no_redraw,
    )
    print(json.dumps({k: str(v) for k, v in result.items()}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
