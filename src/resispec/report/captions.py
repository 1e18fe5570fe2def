"""One caption per report result, ``captions/NAME.rst`` (NAME: a figure of `figures.FIGURE_NAMES` or a
paper table): the HTML and PDF reports show them, and the Snakemake report attaches the same text to the
same outputs (its caption templates `workflow/report/figures.rst` and `paper_table.rst` read it from the
report rule's ``captions`` param)."""

from __future__ import annotations

from functools import cache
from pathlib import Path

CAPTIONS_DIR = Path(__file__).parent / "captions"


@cache
def read_captions() -> dict[str, str]:
    """NAME -> the reStructuredText of ``captions/NAME.rst``."""
    return {
        path.stem: path.read_text(encoding="utf-8").strip() for path in sorted(CAPTIONS_DIR.glob("*.rst"))
    }


def caption(name: str) -> str:
    """The caption of ``name`` as plain text (inline literals unmarked); the name itself when it has none."""
    return read_captions().get(name, name).replace("``", "")
