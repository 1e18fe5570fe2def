"""report.pdf from the LaTeX document (needs latexmk and Debian's TeX packages, else skipped with why)."""

from __future__ import annotations

import re
import shutil

import pytest

from resispec.report import ReportSources, build_report
from resispec.report.latex import LATEX_APT

pytestmark = pytest.mark.skipif(
    shutil.which("latexmk") is None,
    reason=f"latexmk not installed, so report.pdf cannot be built (Debian: apt-get install -y {LATEX_APT})",
)


def test_pdf_builds_with_every_table_and_figure(synthetic_results, synthetic_config, tmp_path):
    result = build_report(
        synthetic_results["tables"],
        tmp_path / "figures",
        tmp_path / "reports",
        config=synthetic_config,
        sources=ReportSources(audit=synthetic_results["nodes"]),
    )
    assert result["pdf"] is not None, result["pdf_message"]
    data = result["pdf"].read_bytes()
    assert data.startswith(b"%PDF")
    tex = (tmp_path / "reports" / "latex" / "report.tex").read_text()
    assert tex.count(r"\input{table") == 6 and tex.count(r"\includegraphics") == 6
    log = (tmp_path / "reports" / "latex" / "report.log").read_text(errors="replace")
    pages = int(re.search(r"Output written on report\.pdf \((\d+) pages?", log).group(1))
    assert pages >= 6, f"only {pages} pages"
    assert "LaTeX Warning: Reference" not in log and "Missing character" not in log
