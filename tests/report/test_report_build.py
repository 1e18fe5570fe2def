"""The report builds from synthetic tidy tables: HTML (self-contained), LaTeX/HTML tables, figures."""

from __future__ import annotations

import base64
import html
import re
from html.parser import HTMLParser

import pandas as pd
import pytest
from PIL import Image

from resispec.report import build_report, latex
from resispec.report.compare import COMPARABLE
from resispec.report.tidy import read_nodes

FIGURES = ("figure1", "figure3", "table3_plot", "table5_plot", "audit_scatter", "audit_kl")
PAPER_TABLES = tuple(f"table{i}" for i in range(1, 7))


class Collector(HTMLParser):
    """Tables (id -> body row count and row texts) and <img> sources of a page."""

    def __init__(self):
        super().__init__()
        self.tables, self.images, self._table, self._in_body, self._row = {}, [], None, False, None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "table":
            self._table = attrs.get("id", f"table-{len(self.tables)}")
            self.tables[self._table] = []
        elif tag == "tbody":
            self._in_body = True
        elif tag == "tr" and self._in_body:
            self._row = []
        elif tag == "img":
            self.images.append(attrs.get("src", ""))

    def handle_endtag(self, tag):
        if tag == "tbody":
            self._in_body = False
        elif tag == "tr" and self._row is not None:
            self.tables[self._table].append(" ".join(self._row))
            self._row = None

    def handle_data(self, data):
        if self._row is not None:
            self._row.append(data.strip())


@pytest.fixture(scope="module")
def built(built_report):
    page = Collector()
    page.feed(built_report["result"]["html"].read_text(encoding="utf-8"))
    return {**built_report, "page": page, "comparison": pd.read_csv(built_report["result"]["comparison"])}


def test_every_figure_as_png_and_pdf(built):
    for name in FIGURES:
        png, pdf = built["out"] / "figures" / f"{name}.png", built["out"] / "figures" / f"{name}.pdf"
        assert Image.open(png).size[0] > 300, name
        assert pdf.read_bytes().startswith(b"%PDF"), name


def test_html_embeds_every_figure_and_nothing_external(built):
    images = built["page"].images
    assert len(images) == len(FIGURES)
    for src in images:
        assert src.startswith("data:image/png;base64,")
        assert base64.b64decode(src.split(",", 1)[1]).startswith(b"\x89PNG\r\n\x1a\n")
    text = built["result"]["html"].read_text(encoding="utf-8")
    assert 'src="http' not in text and "<link" not in text


def test_html_shows_the_caption_files_of_every_figure_and_paper_table(built):
    """report.html takes its figure and table captions from resispec/report/captions/, not a copy."""
    import html

    from resispec.report.captions import caption, read_captions

    text = html.unescape(built["result"]["html"].read_text(encoding="utf-8"))
    shown = [name for name in read_captions() if caption(name) in text]
    assert set(FIGURES) <= set(shown) and {"table1", "table4"} <= set(shown), shown


def test_html_has_one_row_per_compared_cell(built):
    tables, comparison = built["page"].tables, built["comparison"]
    for name in PAPER_TABLES:
        rows = tables[f"cmp-{name}"]
        expected = comparison[comparison["table"] == name]
        assert len(rows) == len(expected), name
        assert sum("not run" in r for r in rows) == int(expected["ours"].isna().sum()), name
    assert {"audit-summary", "environment-table"} <= set(tables)


def test_latex_tables_use_booktabs_and_list_every_cell(built):
    comparison = built["comparison"]
    for name in PAPER_TABLES:
        tex = (built["out"] / "reports" / "tables" / f"{name}.tex").read_text()
        assert all(rule in tex for rule in (r"\toprule", r"\midrule", r"\bottomrule"))
        body = tex.split(r"\endfoot", 1)[1]
        assert body.count(r"\\") == int((comparison["table"] == name).sum()), name


def _finding(text: str, start: str, contains: str = "") -> str:
    items = [html.unescape(item) for item in re.findall(r"<li>([^<]*)</li>", text)]
    found = [item for item in items if item.startswith(start) and contains in item]
    assert len(found) == 1, f"{start!r}: {found}"
    return found[0]


def test_findings_state_exactness_from_the_numbers(built, synthetic_results):
    """KL sentences use the full-vocabulary rows (the one KL), count nodes and prompts, and judge the level
    from the certified interval; alpha* sentences count every audited row."""
    text = built["result"]["html"].read_text(encoding="utf-8")
    nodes = read_nodes(synthetic_results["nodes"])
    for method, rows in nodes.groupby("method"):
        full = rows[rows["scope"] == "full"]
        kl = _finding(text, f"{method}: over", "KL(p || law)")
        prompts = full[["temperature", "prompt_id"]].drop_duplicates().shape[0]
        assert f"over {len(full)} nodes of {prompts} prompts" in kl, kl
        assert ("NOT at floating-point level" in kl) == bool(full["kl"].min() >= 1e-8), kl
        assert (": at floating-point level." in kl) == bool(full["kl_upper"].max() < 1e-8), kl
        truncated = int((full["law_err"] > 0).sum())
        assert (f"{truncated} nodes had a pruned law" in kl) == bool(truncated), kl
        above = int((rows["acceptance"] > rows["alpha_star"] + 1e-9).sum())
        sentence = _finding(text, f"{method}: acceptance")
        assert (f"on {above} of {len(rows)} nodes" in sentence) if above else ("never exceeds" in sentence)
    assert "Source: per-node audit, full vocabulary" in text
    monte_carlo = _finding(text, "resispec: the real sampler")
    assert (
        "100,000 times on each of 2 full-vocabulary nodes" in monte_carlo and "on 2 of 2 nodes" in monte_carlo
    )
    assert "run_name: synthetic" in text


def test_findings_count_verdicts_and_say_computed(built):
    """Agreement findings count verdicts (never bare interval overlap) and say 'computed'."""
    text = built["result"]["html"].read_text(encoding="utf-8")
    comparison = built["comparison"]
    paper = comparison[comparison["value"].notna()]
    computed = paper.drop_duplicates(["table", "method", "metric", "order"])["ours"].notna().sum()
    assert _finding(text, "We computed ").startswith(f"We computed {computed} of the ")
    counts = paper[paper["metric"].isin(COMPARABLE)]["verdict"].value_counts()
    verdicts = _finding(text, "Verdicts on the comparable cells")
    for name in ("agrees", "disagrees", "inconclusive"):
        assert f"{int(counts.get(name, 0))} {name}" in verdicts
    assert "reproduced" not in text and "inside our 95% CI in" not in text


def test_glance_shows_verdicts_and_autoregressive_speedups_above_the_tables(built):
    """The at-a-glance block comes before the findings and the tables, with one speedup row per method."""
    text = built["result"]["html"].read_text(encoding="utf-8")
    assert text.index('id="at-a-glance"') < text.index('id="findings"') < text.index('id="tables"')
    speedups = built["page"].tables["glance-speedups"]
    ar = built["comparison"].query("metric == 'speedup_vs_autoregressive'")
    assert len(speedups) == ar["method"].nunique() > 0
    assert any(row.startswith("resispec ") for row in speedups)


def test_pdf_is_skipped_with_a_message_without_latexmk(
    synthetic_results, synthetic_config, tmp_path, monkeypatch
):
    monkeypatch.setattr(latex.shutil, "which", lambda name: None)
    result = build_report(
        synthetic_results["tables"], tmp_path / "fig", tmp_path / "rep", config=synthetic_config
    )
    assert result["pdf"] is None and "latexmk not found" in result["pdf_message"]
    assert "texlive-latex-recommended" in (tmp_path / "rep" / "report_pdf_skipped.txt").read_text()


def test_config_must_be_a_dict(synthetic_results, tmp_path):
    with pytest.raises(ValueError, match="config must be a dict"):
        build_report(synthetic_results["tables"], tmp_path, tmp_path, config="run.yaml")


def test_report_reuses_the_figures_stage(synthetic_results, synthetic_config, tmp_path):
    from resispec.report import build_figures
    from resispec.report.figures import FIGURE_NAMES

    staged = build_figures(
        synthetic_results["tables"],
        tmp_path / "figures",
        tmp_path / "tables",
        config=synthetic_config,
        audit=synthetic_results["nodes"],
    )
    assert tuple(staged["figures"]) == FIGURE_NAMES
    assert sorted(p.name for p in (tmp_path / "tables").iterdir()) == sorted(
        f"table{i}.{ext}" for i in range(1, 7) for ext in ("tex", "html")
    )
    before = {p: p.stat().st_mtime_ns for p in (tmp_path / "figures").iterdir()}
    result = build_report(
        synthetic_results["tables"],
        tmp_path / "figures",
        tmp_path / "out",
        config=synthetic_config,
        pdf=False,
        redraw=False,
    )
    assert {p: p.stat().st_mtime_ns for p in (tmp_path / "figures").iterdir()} == before
    assert result["html"].read_text(encoding="utf-8").count("data:image/png;base64,") == len(FIGURE_NAMES)
    assert not (tmp_path / "out" / "tables").exists()
    (tmp_path / "figures" / "audit_kl.pdf").unlink()
    with pytest.raises(ValueError, match=r"figure file missing: .*audit_kl\.pdf"):
        build_report(
            synthetic_results["tables"], tmp_path / "figures", tmp_path / "out", config={}, redraw=False
        )


def test_command_line(synthetic_results, tmp_path, capsys):
    from resispec.report.__main__ import main

    config = tmp_path / "config.yaml"
    config.write_text("run_name: from-the-command-line\n")
    argv = [
        "--tables",
        str(synthetic_results["tables"]),
        "--figures",
        str(tmp_path / "fig"),
        "--out",
        str(tmp_path / "out"),
        "--config",
        str(config),
        "--no-pdf",
    ]
    assert main(argv) == 0
    assert "run_name: from-the-command-line" in (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    with pytest.raises(ValueError, match="--config file not found"):
        main(argv[:-3] + ["--config", str(tmp_path / "missing.yaml")])
