"""The report layer: paper vs ours tables, figures, report.html, report.pdf, the results notebook.

``build_report(tables_dir, figures_dir, out_dir, config=...)`` reads the tidy tables
(docs/architecture.md, "Tidy results tables" and "Report layer") and writes
``out_dir/report.html``, ``out_dir/report.pdf`` (when latexmk is available), ``out_dir/tables/*.{tex,html}``
and ``figures_dir/*.{png,pdf}``.
"""

from __future__ import annotations

from pathlib import Path

from resispec.report import figures as _figures
from resispec.report import html as _html
from resispec.report import latex as _latex
from resispec.report.compare import compare_all
from resispec.report.environment import collect_environment
from resispec.report.findings import findings as _findings
from resispec.report.paper import load_paper_values, load_raw, table_info
from resispec.report.tables import write_tables
from resispec.report.tidy import load_tables, models, read_nodes

__all__ = ["build_report", "load_paper_values", "load_tables", "compare_all"]


def _paper_models(info: dict) -> str:
    target, draft = info.get("target") or "not stated", info.get("draft") or "not stated"
    return f"{target} / {draft}"


def _table_sections(texts: dict, info: dict, tables: dict) -> list[dict]:
    return [
        {
            "name": name,
            "html": texts[name]["html"],
            "notes": info[name]["notes"],
            "paper_models": _paper_models(info[name]),
            "our_models": models(tables.get(name)),
        }
        for name in sorted(texts)
    ]


def build_report(
    tables_dir, figures_dir, out_dir, *, config: dict, audit=None, environment: dict | None = None,
    pdf: bool = True, paper_values=None,
) -> dict[str, Path | str | None]:  # fmt: skip
    """Build every report artefact from the tidy tables.

    ``audit``: per-node audit rows: a CSV, a folder of CSVs (``results/exactness/``), a list of either, or
    None. ``environment``: hardware and
    versions recorded by the run (e.g. loaded from ``results/environment.json``); None collects them here.
    ``config['report']['reasons']`` maps 'table', 'table/method' or 'table/method/metric' to why those
    cells were not run. Returns paths of ``html``, ``pdf`` (None when skipped), ``pdf_message``.
    """
    if not isinstance(config, dict):
        raise ValueError(f"config must be a dict, got {type(config).__name__}")
    out_dir, figures_dir = Path(out_dir), Path(figures_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    tables = load_tables(tables_dir)
    nodes = read_nodes(audit)
    reasons = (config.get("report") or {}).get("reasons") or {}
    comparison = compare_all(load_paper_values(paper_values), tables, reasons=reasons)
    comparison.to_csv(out_dir / "comparison.csv", index=False)
    info = table_info(paper_values)
    texts = write_tables(comparison, info, out_dir / "tables")
    figure_paths = _figures.make_figures(tables, comparison, nodes, figures_dir)
    found = _findings(comparison, tables, nodes)
    our_models = "; ".join(sorted({models(frame) for frame in tables.values()} - {"n/a"})) or "n/a"
    note = (
        "Recorded by the run."
        if environment
        else "Collected where the report was built (no record from the run)."
    )
    context = _html.build_context(
        tables=_table_sections(texts, info, tables), figures=figure_paths, findings=found,
        nodes=nodes, config=config, environment=environment or collect_environment(),
        environment_note=note, our_models=our_models, paper_source=load_raw(paper_values).get("source", ""),
    )  # fmt: skip
    html_path = out_dir / "report.html"
    html_path.write_text(_html.render_html(context), encoding="utf-8")
    result = {
        "html": html_path,
        "comparison": out_dir / "comparison.csv",
        "pdf": None,
        "pdf_message": "pdf=False",
    }
    if pdf:
        tex = _latex.write_latex(out_dir / "latex", texts, figure_paths, found, our_models)
        result["pdf"], result["pdf_message"] = _latex.compile_pdf(tex, out_dir / "report.pdf")
        if result["pdf"] is None:
            (out_dir / "report_pdf_skipped.txt").write_text(result["pdf_message"] + "\n")
    return result
