"""The self-contained ``report.html``: figures embedded as base64 PNGs, tables inline."""

from __future__ import annotations

import base64
import html
from datetime import UTC, datetime
from pathlib import Path

import jinja2
import pandas as pd
import yaml

from resispec.report.captions import caption, read_captions
from resispec.report.environment import RunSetup
from resispec.report.exactness import exact_law
from resispec.report.tables import fmt_number, table_title

TABLE_FIGURES = {"table3": ["table3_plot"], "table5": ["table5_plot"]}


def _environment() -> jinja2.Environment:
    loader = jinja2.PackageLoader("resispec.report", "templates")
    return jinja2.Environment(loader=loader, autoescape=jinja2.select_autoescape(["html", "j2"]))


def embed_png(path: str | Path) -> str:
    """Base64 text of a PNG file (for a data: URI)."""
    return base64.b64encode(Path(path).read_bytes()).decode("ascii")


def _figure(name: str, paths: dict) -> dict:
    return {"name": name, "data": embed_png(paths["png"]), "caption": caption(name)}


def _html_table(table_id: str, caption: str, header: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in row) + "</tr>" for row in rows)
    return (
        f'<table id="{table_id}"><caption>{html.escape(caption)}</caption>'
        f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"
    )


def audit_summary_html(nodes: pd.DataFrame | None, tolerance: float = 1e-9) -> str:
    """Per verifier, dataset and temperature: nodes, acceptance vs alpha*, KL over exact-law nodes, TV."""
    if nodes is None or nodes.empty:
        return '<p class="note">No per-node audit rows were given, so there is no audit summary table.</p>'
    header = [
        "method",
        "dataset",
        "T",
        "nodes",
        "acceptance",
        "alpha*",
        "nodes above alpha*",
        "truncated laws",
        "mean KL (exact laws)",
        "max KL (exact laws)",
        "mean TV",
    ]
    rows = []
    for (method, dataset, temperature), g in nodes.groupby(["method", "dataset", "temperature"], sort=True):
        above = int((g["acceptance"] - g["alpha_star"] > tolerance).sum())
        exact = g[exact_law(g)]
        key = [str(method), str(dataset), f"{temperature:g}", str(len(g))]
        means = [
            f"{g['acceptance'].mean():.4f}",
            f"{g['alpha_star'].mean():.4f}",
            str(above),
            str(len(g) - len(exact)),
        ]
        kl = [fmt_number(exact["kl"].mean()), fmt_number(exact["kl"].max())] if len(exact) else ["–", "–"]
        rows.append(key + means + kl + [fmt_number(g["tv"].mean())])
    return _html_table("audit-summary", "Exactness audit per configuration (per-node values)", header, rows)


def render_html(context: dict) -> str:
    """Render the template with an already assembled context (see ``build_context``)."""
    return _environment().get_template("report.html.j2").render(**context)


def build_context(
    *,
    tables: list[dict],
    figures: dict,
    findings: dict,
    nodes: pd.DataFrame | None,
    setup: RunSetup,
    our_models: str,
    paper_source: str,
    glance: str = "",
) -> dict:
    """Template context. ``tables``: dicts with name, html, notes, paper_models, our_models; ``setup``: the
    run's config and hardware record; ``glance``: the at-a-glance block shown above everything else
    (``resispec.report.glance``)."""
    in_tables = {name for names in TABLE_FIGURES.values() for name in names}
    audit_names = ("audit_scatter", "audit_kl")
    for table in tables:
        table["title"] = table_title(table["name"])
        table["about"] = caption(table["name"]) if table["name"] in read_captions() else ""
        table["figures"] = [
            _figure(n, figures[n]) for n in TABLE_FIGURES.get(table["name"], []) if n in figures
        ]
    return {
        "built": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "tables": tables,
        "figures": [_figure(n, p) for n, p in figures.items() if n not in in_tables and n not in audit_names],
        "audit_figures": [_figure(n, figures[n]) for n in audit_names if n in figures],
        "audit_table": audit_summary_html(nodes),
        "findings": findings,
        "config_yaml": yaml.safe_dump(setup.config, sort_keys=False, default_flow_style=False),
        "environment": setup.environment,
        "environment_note": setup.note,
        "our_models": our_models,
        "paper_source": paper_source,
        "glance": glance,
    }
