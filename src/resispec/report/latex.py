"""A LaTeX document with every table and figure, compiled to ``report.pdf`` by latexmk when available.

TeX packages used (Debian: latexmk texlive-latex-base texlive-latex-recommended): booktabs, longtable,
graphicx, geometry, caption, hyperref, float, array.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from resispec.report.captions import caption
from resispec.report.tables import latex_escape

PREAMBLE = r"""\documentclass[10pt]{article}
\usepackage[utf8]{inputenc}
\usepackage[a4paper,landscape,margin=1.6cm]{geometry}
\usepackage{array,booktabs,longtable,graphicx,float,caption}
\usepackage[hidelinks]{hyperref}
\setlength{\LTcapwidth}{\linewidth}
\title{ResiSpec reproduction report}
\date{}
\begin{document}
\maketitle
"""
LATEX_APT = "latexmk texlive-latex-base texlive-latex-recommended"


def _figure_block(name: str, pdf: Path) -> str:
    text = latex_escape(caption(name))
    return (
        "\\begin{figure}[H]\\centering\n"
        f"\\includegraphics[width=0.9\\linewidth,height=0.42\\textheight,keepaspectratio]{{{pdf.name}}}\n"
        f"\\caption{{{text}}}\n\\end{{figure}}\n"
    )


def _latex_item(item) -> str:
    if isinstance(item, dict):
        subs = "".join(f"\\item {latex_escape(sub)}\n" for sub in item["items"])
        return f"\\item {latex_escape(item['text'])}\n\\begin{{itemize}}\n{subs}\\end{{itemize}}\n"
    return f"\\item {latex_escape(item)}\n"


def document(
    tables: dict[str, dict],
    figures: dict[str, dict],
    findings: dict,
    models: str,
    glance: str = "",
    paper_limits: str = "",
) -> str:
    """The LaTeX source: the at-a-glance block, findings, the paper's numbers against the exact limit,
    one longtable per paper table, every figure."""
    parts = [PREAMBLE, f"Our models: {latex_escape(models)}.\n\n", glance, "\\section*{Findings}\n"]
    for heading, items in findings.items():
        parts.append(f"\\subsection*{{{latex_escape(heading)}}}\n\\begin{{itemize}}\n")
        parts.extend(_latex_item(item) for item in items)
        parts.append("\\end{itemize}\n")
    parts.append(paper_limits)
    parts.append("\\section*{Paper tables: paper vs ours}\n")
    parts.extend(f"\\input{{{name}.tex}}\n" for name in sorted(tables))
    parts.append("\\section*{Figures}\n")
    parts.extend(_figure_block(name, Path(paths["pdf"])) for name, paths in figures.items())
    parts.append("\\end{document}\n")
    return "".join(parts)


def write_latex(
    latex_dir,
    tables: dict[str, dict],
    figures: dict[str, dict],
    findings: dict,
    models: str,
    *,
    glance: str = "",
    paper_limits: str = "",
) -> Path:
    """Write ``report.tex`` with its inputs (table .tex files, figure PDFs) into ``latex_dir``."""
    latex_dir = Path(latex_dir)
    latex_dir.mkdir(parents=True, exist_ok=True)
    for name, texts in tables.items():
        (latex_dir / f"{name}.tex").write_text(texts["tex"])
    for paths in figures.values():
        shutil.copyfile(paths["pdf"], latex_dir / Path(paths["pdf"]).name)
    tex = latex_dir / "report.tex"
    tex.write_text(document(tables, figures, findings, models, glance, paper_limits))
    return tex


def compile_pdf(tex: Path, out_pdf: Path, *, timeout: float = 300) -> tuple[Path | None, str]:
    """Run latexmk on ``tex``; returns (pdf path, message) or (None, why it was skipped or failed)."""
    latexmk = shutil.which("latexmk")
    if latexmk is None:
        return None, f"report.pdf skipped: latexmk not found on PATH (Debian packages: {LATEX_APT})"
    cmd = [latexmk, "-pdf", "-interaction=nonstopmode", "-halt-on-error", tex.name]
    result = subprocess.run(cmd, cwd=tex.parent, capture_output=True, text=True, timeout=timeout, check=False)
    built = tex.with_suffix(".pdf")
    if result.returncode != 0 or not built.is_file():
        log = (result.stdout + result.stderr)[-2000:]
        return (
            None,
            f"report.pdf failed: latexmk exited {result.returncode}; see {tex.with_suffix('.log')}\n{log}",
        )
    shutil.copyfile(built, out_pdf)
    return out_pdf, f"report.pdf built with {latexmk}"
