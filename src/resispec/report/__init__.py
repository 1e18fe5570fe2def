"""The report layer: paper vs ours tables, figures, report.html, report.pdf, the results notebook.

``build_report(tables_dir, figures_dir, out_dir, config=...)`` reads the tidy tables
(docs/architecture.md, "Tidy results tables" and "Report layer") and writes
``out_dir/report.html``, ``out_dir/report.pdf`` (when latexmk is available), ``out_dir/tables/*.{tex,html}``
and ``figures_dir/*.{png,pdf}``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from resispec.report import figures as _figures
from resispec.report import html as _html
from resispec.report import latex as _latex
from resispec.report.beside import beside_rows, paper_rows, with_beside
from resispec.report.compare import compare_all
from resispec.report.environment import RunSetup
from resispec.report.findings import findings as _findings
from resispec.report.glance import glance_html, glance_latex
from resispec.report.models_table import model_rows, models_html
from resispec.report.paper import load_paper_values, load_raw, table_info
from resispec.report.paper_limits import paper_limits_frame
from resispec.report.paper_limits_section import section_html, section_latex
from resispec.report.robustness import read_variants, robustness_html, robustness_latex
from resispec.report.tables import table_texts, write_tables
from resispec.report.tidy import load_tables, models, read_nodes

__all__ = [
    "ReportSources",
    "build_report",
    "build_figures",
    "load_paper_values",
    "load_tables",
    "compare_all",
]


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


def _inputs(tables_dir, audit, config: dict, paper_values) -> dict:
    if not isinstance(config, dict):
        raise ValueError(f"config must be a dict, got {type(config).__name__}")
    tables = load_tables(tables_dir)
    settings = config.get("report") or {}
    paper = load_paper_values(paper_values)
    keys = {"reasons": settings.get("reasons") or {}, "tree_aliases": settings.get("tree_aliases") or {}}
    comparison = with_beside(compare_all(paper, tables, **keys), beside_rows(paper, tables, **keys))
    return {
        "tables": tables,
        "nodes": read_nodes(audit),
        "comparison": comparison,
        "info": table_info(paper_values),
        "limits": paper_limits_frame(tables_dir, paper, tables),
    }


def build_figures(
    tables_dir, figures_dir, tables_out, *, config: dict | None = None, audit=None, paper_values=None
) -> dict:
    """The figures stage: every figure (PNG+PDF) into ``figures_dir`` and every comparison table
    (``{table}.tex``, ``{table}.html``) into ``tables_out``. Returns ``{"figures": ..., "tables": ...}``."""
    data = _inputs(tables_dir, audit, config or {}, paper_values)
    texts = write_tables(data["comparison"], data["info"], tables_out)
    figures = _figures.make_figures(
        data["tables"], paper_rows(data["comparison"]), data["nodes"], figures_dir
    )
    return {"figures": figures, "tables": texts}


def existing_figures(figures_dir) -> dict[str, dict[str, Path]]:
    """Paths of the figures a previous figures stage wrote; ValueError naming the first one missing."""
    paths = {}
    for name in _figures.FIGURE_NAMES:
        pair = {kind: Path(figures_dir) / f"{name}.{kind}" for kind in ("png", "pdf")}
        missing = [str(path) for path in pair.values() if not path.is_file()]
        if missing:
            raise ValueError(f"figure file missing: {missing[0]} (run the figures stage or redraw=True)")
        paths[name] = pair
    return paths


def _tables_and_figures(data: dict, out_dir: Path, figures_dir, redraw: bool) -> tuple[dict, dict]:
    """Table texts and figure paths: drawn and written now (``redraw``), or the figures stage's."""
    if redraw:
        texts = write_tables(data["comparison"], data["info"], out_dir / "tables")
        figures = _figures.make_figures(
            data["tables"], paper_rows(data["comparison"]), data["nodes"], figures_dir
        )
        return texts, figures
    return table_texts(data["comparison"], data["info"]), existing_figures(figures_dir)


@dataclass(frozen=True)
class ReportSources:
    """What the report reads beside the tidy tables; every field may be None.

    ``audit``: per-node audit rows: a CSV, a folder of CSVs (``results/exactness/``), a list of either, or
    None. ``variants``: every (budget, order) variant of resispec on audited nodes
    (``results/exactness_variants/``: a CSV, a folder or a list), for the robustness table; None: none.
    ``model_info``: the READY.json files of the run's models (the models table; None: none).
    ``environment``: hardware and versions recorded by the run; None collects them where the report is
    built. ``paper_values``: the paper's numbers (YAML; None: the packaged ``paper_values.yaml``).
    """

    audit: object = None
    variants: object = None
    model_info: object = None
    environment: dict | None = None
    paper_values: object = None


def build_report(
    tables_dir,
    figures_dir,
    out_dir,
    *,
    config: dict,
    sources: ReportSources | None = None,
    pdf: bool = True,
    redraw: bool = True,
) -> dict[str, Path | str | None]:
    """Build ``report.html`` (and ``report.pdf``, ``comparison.csv``) in ``out_dir`` from the tidy tables
    and ``sources`` (``ReportSources``; None: the tables alone).

    ``config['report']['reasons']`` maps 'table', 'table/method', 'table/host' or 'table/method/metric'
    to why those cells were not run; ``config['report']['tree_aliases']`` maps a paper tree to the tree
    our run used instead (e.g. ``{d5b3: d3b3}`` in a scaled-down test run). ``redraw=True`` draws the
    figures into ``figures_dir`` and writes the tables into ``out_dir/tables``; ``redraw=False`` embeds
    the figures a figures stage already wrote there and writes no table files. Returns paths of
    ``html``, ``comparison``, ``pdf`` (None when skipped) and ``pdf_message``.
    """
    sources = sources or ReportSources()
    data = _inputs(tables_dir, sources.audit, config, sources.paper_values)
    data["variants"] = read_variants(sources.variants)
    tables, nodes, comparison, info = data["tables"], data["nodes"], data["comparison"], data["info"]
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    comparison.to_csv(out_dir / "comparison.csv", index=False)
    texts, figure_paths = _tables_and_figures(data, out_dir, figures_dir, redraw)
    found = _findings(comparison, tables, nodes)
    our_models = models(pd.concat(list(tables.values()), ignore_index=True) if tables else None)
    context = _html.build_context(
        tables=_table_sections(texts, info, tables),
        figures=figure_paths,
        findings=found,
        nodes=nodes,
        setup=RunSetup.of(config, sources.environment),
        our_models=our_models,
        paper_source=load_raw(sources.paper_values).get("source", ""),
        glance=glance_html(comparison),
    )
    context.update(_sections(data, sources.model_info))
    html_path = out_dir / "report.html"
    html_path.write_text(_html.render_html(context), encoding="utf-8")
    result = {"html": html_path, "comparison": out_dir / "comparison.csv", "pdf": None}
    result["pdf_message"] = "pdf=False"
    if pdf:
        limits = section_latex(data["limits"]) + robustness_latex(data["variants"])
        tex = _latex.write_latex(
            out_dir / "latex",
            texts,
            figure_paths,
            found,
            our_models,
            glance=glance_latex(comparison),
            paper_limits=limits,
        )
        result["pdf"], result["pdf_message"] = _compile_pdf(tex, out_dir)
    return result


def _sections(data: dict, model_info) -> dict[str, str]:
    """HTML blocks beside the tables: models, the paper's numbers against the exact limit, robustness."""
    return {
        "models_table": models_html(model_rows(model_info)),
        "paper_limits": section_html(data["limits"]),
        "variants_table": robustness_html(data["variants"]),
    }


def _compile_pdf(tex: Path, out_dir: Path) -> tuple[Path | None, str]:
    """report.pdf from the LaTeX sources, or (None, why) with report_pdf_skipped.txt saying why."""
    pdf, message = _latex.compile_pdf(tex, out_dir / "report.pdf")
    if pdf is None:
        (out_dir / "report_pdf_skipped.txt").write_text(message + "\n")
    return pdf, message
