"""Report captions: one per result, valid Jinja2 + reStructuredText without warnings; every caption file of
the workflow is attached to an output with Snakemake's `report()`, and the per-result captions
(`resispec.report.captions`) are the one text both the Snakemake report and report.html show."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

import jinja2
import pytest
from docutils.core import publish_parts

from resispec.report.captions import caption, read_captions
from resispec.report.figures import FIGURE_NAMES
from resispec.report.tidy import TABLES

ROOT = Path(__file__).parents[2]
WORKFLOW_CAPTIONS = ROOT / "workflow" / "report"
PAPER_TABLES = [f"table{i}" for i in range(1, 7)]


def render(text: str, **wildcards: str) -> str:
    """Jinja2 as Snakemake renders captions (a `snakemake` object with wildcards and the report rule's
    params), then rst -> HTML."""
    params = SimpleNamespace(captions=read_captions())
    snakemake = SimpleNamespace(wildcards=SimpleNamespace(**wildcards), config={}, params=params)
    rst = jinja2.Environment(undefined=jinja2.StrictUndefined).from_string(text).render(snakemake=snakemake)
    overrides = {"halt_level": 2, "report_level": 2, "warning_stream": False}
    return publish_parts(rst, writer="html", settings_overrides=overrides)["body"]


@pytest.mark.parametrize("path", sorted(WORKFLOW_CAPTIONS.glob("*.rst")), ids=lambda p: p.name)
def test_workflow_caption_renders(path):
    body = render(path.read_text(), table="table1", name="figure1")
    assert len(body) > 100 and "<p>" in body


@pytest.mark.parametrize("name", sorted(read_captions()))
def test_result_caption_renders(name):
    body = render(read_captions()[name])
    assert len(body) > 40 and "<p>" in body


def test_every_workflow_caption_is_attached_to_an_output():
    rules = "".join(path.read_text() for path in (ROOT / "workflow" / "rules").glob("*.smk"))
    attached = set(re.findall(r'caption="\.\./report/(\w+)\.rst"', rules))
    assert attached == {path.stem for path in WORKFLOW_CAPTIONS.glob("*.rst")}


def test_there_is_one_caption_per_figure_and_paper_table():
    assert set(read_captions()) == set(FIGURE_NAMES) | set(PAPER_TABLES)
    assert set(PAPER_TABLES) <= set(TABLES)


@pytest.mark.parametrize(("name", "template"), [("figure3", "figures.rst"), ("table4", "paper_table.rst")])
def test_the_snakemake_report_shows_the_result_caption(name, template):
    """The caption template of a figure or paper table renders that result's own caption."""
    body = render((WORKFLOW_CAPTIONS / template).read_text(), name=name)
    first_words = " ".join(caption(name).split()[:8])
    assert first_words in re.sub(r"<[^>]+>", "", body)
