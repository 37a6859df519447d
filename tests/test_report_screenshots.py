"""The report as a reader sees it: headless Chromium draws a single-run page and an A/B page
at 1400 and 800 px; every chart renders, the charts take the window's width, and the
screenshots are the ones checked in under docs/report/ (GPUBENCH_UPDATE_SCREENSHOTS=1
rewrites them: look at them before committing). `report --svg/--png` writes one file per
chart of the page."""

import os
import re
import subprocess
from pathlib import Path

import pytest
from test_html_report import recorded

from conftest import FIXTURES, REPO
from gpubench.analysis.comparison import compare_runs
from gpubench.records.run import RunDocument
from gpubench.report.html import RunComparisonView, chart_specs, render_report
from gpubench.store.chart_files import find_browser
from gpubench.store.folder import read_run

H200 = FIXTURES / "compare" / "h200"
DOCS = REPO / "docs" / "report"
WIDTHS = (1400, 800)
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", "--hide-scrollbars",
         "--virtual-time-budget=30000")
# Appended after the page's own script: how wide the first chart is against the window.
MEASURE = """<script>
var chart = document.querySelector("[data-chart]");
document.body.setAttribute("data-chart-fraction",
  String(chart.getBoundingClientRect().width / window.innerWidth));
</script></body>"""

needs_chromium = pytest.mark.skipif(find_browser() is None,
                                    reason="no Chromium here (apt install chromium)")


def single_run() -> list[tuple[str, RunDocument]]:
    """The H200 acceptance run, matmul and softmax: three dtypes, a roofline, sweeps."""
    run = recorded("h200-gpu-full.json.gz")
    kept = tuple(r for r in run.results if r.family in ("matmul", "softmax"))
    return [("profiles/report-full", RunDocument(run.meta, run.env, kept))]


def ab_runs() -> tuple[list[tuple[str, RunDocument]], list[RunComparisonView]]:
    runs = [("softmax-a1", read_run(H200 / "softmax-a1")),
            ("softmax-a3", read_run(H200 / "softmax-a3"))]
    return runs, [RunComparisonView("softmax-a1", "softmax-a3",
                                    compare_runs(runs[0][1], runs[1][1]))]


def chromium(page: Path, width: int, *extra: str, height: int = 1000) -> str:
    done = subprocess.run([find_browser(), *FLAGS, f"--window-size={width},{height}", *extra,
                           page.resolve().as_uri()], capture_output=True, text=True,
                          timeout=240)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def screenshot(page: Path, width: int, png: Path) -> dict[str, str]:
    """The page's body attributes after drawing, and a PNG of the whole page."""
    dom = chromium(page, width, "--dump-dom")
    body = dict(re.findall(r'(data-[a-z-]+)="([^"]*)"', dom.split("<body", 1)[1].split(">")[0]))
    chromium(page, width, f"--screenshot={png.resolve()}",
             height=int(body["data-page-height"]) + 16)
    return body


@needs_chromium
@pytest.mark.slow
@pytest.mark.parametrize("name", ["single", "ab"])
def test_the_report_at_1400_and_800_px(tmp_path, name):
    runs, comparisons = (single_run(), []) if name == "single" else ab_runs()
    expected = len(chart_specs(runs, comparisons))
    page = tmp_path / f"{name}.html"
    # The page's own </body> is its last: vega-embed's code holds one in a string.
    head, _, tail = render_report(runs, comparisons).rpartition("</body>")
    page.write_text(head + MEASURE + tail)
    for width in WIDTHS:
        png = tmp_path / f"report-{name}-{width}.png"
        body = screenshot(page, width, png)
        assert body["data-charts-rendered"] == str(expected)
        assert body["data-charts-failed"] == "0"
        # Full width: the page used ~60% of a 1400 px window before.
        assert float(body["data-chart-fraction"]) > 0.9
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        if os.environ.get("GPUBENCH_UPDATE_SCREENSHOTS"):
            DOCS.mkdir(exist_ok=True)
            (DOCS / png.name).write_bytes(png.read_bytes())
    assert all((DOCS / f"report-{name}-{w}.png").is_file() for w in WIDTHS)


@needs_chromium
def test_report_writes_each_chart_as_svg_and_png_for_a_pr(gpubench):
    runs = [str(H200 / "softmax-a1"), str(H200 / "softmax-a3")]
    done = gpubench("report", *runs, "-o", "r.html", "--svg", "svg", "--png", "png")
    assert done.code == 0, done.output
    expected = len(chart_specs(*ab_runs()))
    svgs = sorted((done.cwd / "svg").iterdir())
    pngs = sorted((done.cwd / "png").iterdir())
    assert len(svgs) == len(pngs) == expected
    assert f"charts: {expected} SVG file(s) in svg" in done.output
    assert svgs[0].name.startswith("01-new-") and svgs[1].name.endswith("-time.svg")
    text = svgs[1].read_text()
    assert text.startswith("<svg") and "BASE " in text and "stroke-dasharray" in text
    assert all(p.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" for p in pngs)
