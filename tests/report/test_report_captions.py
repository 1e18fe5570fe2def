"""Snakemake report captions: one per result, valid Jinja2 + reStructuredText without warnings."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import jinja2
import pytest
from docutils.core import publish_parts

CAPTIONS = Path(__file__).parents[2] / "workflow" / "report"
RESULTS = [f"table{i}" for i in range(1, 7)] + ["figure1", "figure3", "audit", "report"]


def render(text: str, table: str = "table1") -> str:
    """Jinja2 as Snakemake renders captions (a `snakemake` object with wildcards), then rst -> HTML."""
    snakemake = SimpleNamespace(wildcards=SimpleNamespace(table=table), config={}, params={})
    rst = jinja2.Environment(undefined=jinja2.StrictUndefined).from_string(text).render(snakemake=snakemake)
    overrides = {"halt_level": 2, "report_level": 2, "warning_stream": False}
    return publish_parts(rst, writer="html", settings_overrides=overrides)["body"]


@pytest.mark.parametrize("name", RESULTS)
def test_caption_renders(name):
    body = render((CAPTIONS / f"{name}.rst").read_text())
    assert len(body) > 100 and "<p>" in body
