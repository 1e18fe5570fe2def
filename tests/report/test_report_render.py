"""report.html in a headless Chromium: every image decodes, every table is there, the page is not blank."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess

import numpy as np
import pytest
from PIL import Image

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="chromium not installed (Debian: apt-get install -y chromium)"
)
CHECK_SCRIPT = """<script>
window.addEventListener("load", () => {
  const images = Array.from(document.images);
  const out = document.createElement("pre");
  out.id = "render-check";
  out.textContent = JSON.stringify({
    images: images.length,
    loaded: images.filter((img) => img.complete && img.naturalWidth > 0).length,
    tables: Array.from(document.querySelectorAll("table")).map((t) => t.id),
  });
  document.body.appendChild(out);
});
</script>"""


def chromium(*args: str, profile) -> subprocess.CompletedProcess:
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
    flags += [
        "--disable-component-update",
        "--no-first-run",
        f"--user-data-dir={profile}",
        "--hide-scrollbars",
    ]
    return subprocess.run([CHROMIUM, *flags, *args], capture_output=True, text=True, timeout=180, check=True)


def test_every_image_loads_and_every_table_is_present(built_report, tmp_path):
    page = built_report["result"]["html"]
    probe = page.with_name("report_check.html")
    probe.write_text(
        page.read_text(encoding="utf-8").replace("</body>", CHECK_SCRIPT + "</body>"), encoding="utf-8"
    )
    dom = chromium(
        "--virtual-time-budget=10000", "--dump-dom", probe.as_uri(), profile=tmp_path / "profile"
    ).stdout
    match = re.search(r'<pre id="render-check">(.*?)</pre>', dom, re.S)
    assert match, f"the load handler did not run; DOM tail: {dom[-500:]}"
    check = json.loads(html.unescape(match.group(1)))
    source = page.read_text(encoding="utf-8")
    assert check["images"] == source.count('<img src="data:image/png;base64,') == 6
    assert check["loaded"] == check["images"]
    expected = {f"cmp-table{i}" for i in range(1, 7)} | {
        "audit-summary",
        "environment-table",
        "glance-speedups",
        "paper-limits",
        "paper-limits-ours",
    }
    assert set(check["tables"]) == expected and len(check["tables"]) == source.count("<table")


def test_screenshot_is_not_blank(built_report, tmp_path):
    shot = tmp_path / "report.png"
    page = built_report["result"]["html"]
    chromium("--window-size=1280,2400", f"--screenshot={shot}", page.as_uri(), profile=tmp_path / "profile")
    pixels = np.asarray(Image.open(shot).convert("L"), dtype=float)
    assert pixels.shape == (2400, 1280)
    assert (pixels < 200).mean() > 0.01 and pixels.std() > 10, "screenshot looks blank"
