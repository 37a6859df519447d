"""`gpubench report` and `run --report`: the page is self-contained, its charts carry the
right data, and a real browser draws them (headless Chromium where it is installed)."""

import gzip
import json
import math
import os
import re
import shutil
import subprocess
from dataclasses import replace
from html.parser import HTMLParser
from pathlib import Path

import pytest

from conftest import FIXTURES, REPO
from gpubench.analysis.comparison import compare_runs
from gpubench.records import result as R
from gpubench.records.point import PointKey
from gpubench.records.run import RunDocument
from gpubench.records.shape import Shape
from gpubench.report import charts
from gpubench.report.html import RunComparisonView, render_report
from gpubench.store.folder import read_run
from gpubench.timing.measurement import Measurement
from gpubench.timing.roofline import RoofPosition

H200 = FIXTURES / "compare" / "h200"
GOLDEN = REPO / "tests" / "golden"
FAST = ("--warmup", "1", "--min-time", "1", "--max-time", "20", "--min-samples", "5")


RECORDED = FIXTURES / "report"


def load(name: str) -> RunDocument:
    return read_run(H200 / name)


def recorded(name: str) -> RunDocument:
    """A run recorded by the report step of scripts/gpu-acceptance.sh (see its README)."""
    path = RECORDED / name
    text = gzip.decompress(path.read_bytes()).decode() if name.endswith(".gz") else (
        path.read_text())
    return RunDocument.from_dict(json.loads(text))


# ---------------------------------------------------------------- the page


class PageParts(HTMLParser):
    """Scripts (inline or not), stylesheets, chart divs and the embedded specs."""

    def __init__(self) -> None:
        super().__init__()
        self.external, self.chart_divs, self.script_ids = [], [], {}
        self._script_id = None
        self.scripts = 0

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "script":
            self.scripts += 1
            if attrs.get("src"):
                self.external.append(attrs["src"])
            self._script_id = attrs.get("id")
        if tag == "link" and attrs.get("href"):
            self.external.append(attrs["href"])
        if tag == "div" and "data-chart" in attrs:
            self.chart_divs.append(attrs["id"])

    def handle_data(self, data):
        if self._script_id:
            self.script_ids[self._script_id] = self.script_ids.get(self._script_id, "") + data

    def handle_endtag(self, tag):
        if tag == "script":
            self._script_id = None


def parts_of(page: str) -> PageParts:
    parser = PageParts()
    parser.feed(page)
    return parser


def specs_of(page: str) -> dict:
    return json.loads(parts_of(page).script_ids["gb-specs"])


def test_a_page_is_self_contained_and_every_chart_has_its_div():
    page = render_report([("square-a2", load("square-a2")), ("square-b32", load("square-b32"))],
                         [RunComparisonView("square-a2", "square-b32",
                                            compare_runs(load("square-a2"), load("square-b32")))])
    parts = parts_of(page)
    assert parts.external == []  # no src=/href=: nothing fetched when the page is viewed
    assert not re.search(r"<(script|link)[^>]+(src|href)=[\"']?https?://", page)
    assert parts.scripts == 5  # the specs, vega, vega-lite, vega-embed, the page's own
    specs = json.loads(parts.script_ids["gb-specs"])
    # The compare chart, the sweep's time and rate charts (once, both runs overlaid), and
    # each run's roofline.
    assert sorted(specs) == sorted(parts.chart_divs) and len(specs) >= 5
    overlaid = [s for s in specs.values() if s["title"].startswith("square float32 cold")]
    assert len(overlaid) == 2 and {r["run"] for r in overlaid[0]["data"]["values"]} == {
        "BASE square-a2", "NEW square-b32"}
    assert "NVIDIA H200" in page and "driver 580.159.04" in page and "torch 2.11.0+cu130" in page
    assert "Compare: BASE square-a2, NEW square-b32" in page and "SLOWER" in page


def test_the_roofline_has_the_measured_ceilings_and_one_point_per_passing_result():
    run = load("softmax-a1")
    spec = charts.roofline_spec(run.results, run.env["ceilings"], "softmax")
    roofs, points = spec["layer"][0]["data"]["values"], spec["layer"][-1]["data"]["values"]
    bandwidth = run.env["ceilings"]["bandwidth_gbps"] * 1e-3  # TFLOP/s per FLOP/byte
    peak = run.env["ceilings"]["tflops"]["float32"]
    left, ridge, right = roofs
    assert left["tflops"] == pytest.approx(bandwidth * left["intensity"])
    assert ridge["intensity"] == pytest.approx(peak / bandwidth)
    assert ridge["tflops"] == right["tflops"] == pytest.approx(peak)
    assert len(points) == sum(r.passed for r in run.results) == 6
    for point, result in zip(points, run.results, strict=True):
        assert point["tflops"] == pytest.approx(result.tflops)
        assert point["intensity"] == pytest.approx(result.flops / result.bytes_moved)
    assert spec["encoding"]["x"]["field"] == "intensity"


def test_no_roofline_without_ceilings_or_flops():
    run = load("square-a2")
    assert charts.roofline_spec(run.results, None, "t") is None
    assert charts.roofline_spec(run.results, {"bandwidth_gbps": 0}, "t") is None


def test_sweep_charts_put_time_and_rate_with_their_ci_against_the_swept_axis():
    run = load("softmax-a1")
    (sweep,) = charts.sweeps(run.results)
    assert sweep["axis"] == "cols" and sweep["fixed"] == "rows=4096"
    time_spec, rate_spec = charts.sweep_specs(sweep, "softmax")
    rows = time_spec["data"]["values"]
    assert {r["cols"] for r in rows} == {1000, 4096} and len(rows) == 6
    for row in rows:
        assert row["ci_low_us"] <= row["median_us"] <= row["ci_high_us"]
        assert row["gbps_low"] <= row["gbps"] <= row["gbps_high"]
    assert rate_spec["title"].endswith("GB/s")  # softmax is memory-bound: GB/s sets its roof
    band = rate_spec["layer"][0]
    assert band["mark"]["type"] == "errorband" and band["encoding"]["y"]["field"] == "gbps_low"


def synthetic(shapes: list[dict], variants=("torch", "mine")) -> list[R.Result]:
    """Results of a family over `shapes`; the times only need to be positive."""
    out = []
    for i, shape in enumerate(shapes):
        for j, variant in enumerate(variants):
            samples = [1e-6 * (i + 1) * (j + 1) * (1 + 0.01 * k) for k in range(10)]
            out.append(R.Result(
                key=PointKey("matmul", variant, "float32", Shape(shape), "cold"), kind="torch",
                status=R.OK, baseline=j == 0, flops=2.0 * math.prod(shape.values()),
                bytes_moved=4.0 * sum(shape.values()),
                measurement=Measurement("cold", "test", samples)))
    return out


def test_axes_that_move_together_make_one_sweep_and_a_cartesian_sweep_one_per_setting():
    together = charts.sweeps(synthetic([{"M": n, "N": n, "K": n} for n in (256, 512, 1024)]))
    assert [(s["axis"], s["companions"], s["fixed"]) for s in together] == [
        ("M", ("N", "K"), "")]
    assert charts.sweep_specs(together[0], "matmul")[0]["encoding"]["x"]["title"] == "M (=N=K)"
    grid = charts.sweeps(synthetic([{"M": m, "N": 64, "K": k} for m in (16, 32, 64)
                                    for k in (128, 256)]))
    assert [(s["axis"], s["fixed"]) for s in grid] == [("M", "N=64 K=128"), ("M", "N=64 K=256")]
    assert charts.sweeps(synthetic([{"M": 8, "N": 8, "K": 8}])) == []


def test_the_compare_chart_has_every_compared_point_with_its_ci():
    comparison = compare_runs(load("square-a2"), load("square-b32"))
    spec = charts.compare_spec(comparison.points, "t")
    rows = spec["data"]["values"]
    assert len(rows) == len(comparison.points) == 6
    for row in rows:
        assert row["ci_low"] <= row["ratio"] <= row["ci_high"]
    assert {r["verdict"] for r in rows} <= {"FASTER", "SLOWER", "SAME", "UNSURE"}


def test_failures_and_skips_are_listed_with_their_reasons():
    failing = synthetic([{"M": 8, "N": 8, "K": 8}])
    failing.append(R.Result(key=PointKey("matmul", "tiled", "float32",
                                         Shape({"M": 8, "N": 8, "K": 8}), "cold"),
                            kind="cuda", status=R.SKIPPED, error="needs a CUDA GPU"))
    page = render_report([("cpu", RunDocument({}, {}, tuple(failing)))])
    assert "Failures, SUSPECT rows and skips" in page and "needs a CUDA GPU" in page
    assert "skipped" in page


# ---------------------------------------------------------------- the command


def test_report_command_writes_the_page_and_markdown_and_refuses_bad_input(gpubench, tmp_path):
    page = tmp_path / "out" / "r.html"
    done = gpubench("report", str(H200 / "square-a2"), str(H200 / "square-b32"), "-o", str(page))
    assert done.code == 0, done.output
    assert page.is_file() and "opens offline" in done.output
    markdown = gpubench("report", str(H200 / "square-a2"), str(H200 / "square-b32"),
                        "--markdown")
    assert markdown.code == 0, markdown.output
    golden = GOLDEN / "report_square.md"
    text = markdown.stdout.replace(str(H200), "H200")
    if os.environ.get("GPUBENCH_UPDATE_GOLDEN"):
        golden.write_text(text)
    assert text == golden.read_text()
    missing = gpubench("report", str(tmp_path / "nowhere"))
    assert missing.code == 2 and "no run results" in missing.output
    assert "Traceback" not in missing.output
    blocked = tmp_path / "file"
    blocked.write_text("")
    unwritable = gpubench("report", str(H200 / "square-a2"), "-o", str(blocked / "r.html"))
    assert unwritable.code == 12 and "cannot write the report" in unwritable.output


# ---------------------------------------------------------------- a real browser


def browser() -> str | None:
    return next(filter(None, map(shutil.which, ("chromium", "chromium-browser",
                                                "google-chrome"))), None)


def rendered_dom(page: Path) -> str:
    """The page's DOM after its scripts ran, from headless Chromium."""
    done = subprocess.run(
        [browser(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--virtual-time-budget=30000", "--dump-dom", page.resolve().as_uri()],
        capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def assert_charts_drawn(page: Path) -> None:
    """Every chart spec became an SVG with marks; none failed."""
    expected = len(specs_of(page.read_text()))
    if browser() is None:
        pytest.skip("no Chromium here (apt install chromium): the embedded chart data was "
                    "checked above")
    dom = rendered_dom(page)
    assert f'data-charts-rendered="{expected}"' in dom, dom[-3000:]
    assert 'data-charts-failed="0"' in dom
    assert dom.count('class="marks"') >= expected  # vega's root <svg class="marks">
    assert dom.count('role-legend"') >= expected  # every chart names its colours
    assert "chart failed:" not in dom.split("<script")[0]


def test_chromium_draws_the_report_of_a_gpu_run_and_a_comparison(tmp_path):
    page = tmp_path / "gpu.html"
    runs = [("softmax-a1", load("softmax-a1")), ("softmax-a3", load("softmax-a3"))]
    page.write_text(render_report(runs, [RunComparisonView(
        "softmax-a1", "softmax-a3", compare_runs(runs[0][1], runs[1][1]))]))
    assert_charts_drawn(page)


def test_the_k_sweep_of_the_gpu_acceptance_run():
    run = recorded("h200-matmul-k.json")
    (sweep,) = charts.sweeps(run.results)
    assert (sweep["axis"], sweep["fixed"]) == ("K", "M=4096 N=4096")
    assert sorted({r.shape["K"] for r in sweep["results"]}) == [128, 512, 2048, 8192]
    spec = charts.roofline_spec(run.results, run.env["ceilings"], "matmul")
    left, ridge, _ = spec["layer"][0]["data"]["values"]
    points = spec["layer"][-1]["data"]["values"]
    # Every point is compute-bound, yet the memory slope is drawn: the axis starts left of
    # the ridge.
    assert left["intensity"] < ridge["intensity"] < min(p["intensity"] for p in points)


def test_ncu_hints_are_in_the_table_and_the_roofline_hover():
    run = recorded("h200-square-ncu.json")
    page = render_report([("square-ncu", run)])
    assert "<th class=\"\">ncu top hint</th>" in page
    assert "Long Scoreboard Stalls (est." in page
    (roofline,) = [s for s in specs_of(page).values() if s["title"].endswith("roofline")]
    points = roofline["layer"][-1]
    assert {"field": "ncu hint", "type": "nominal"} in points["encoding"]["tooltip"]
    assert all(p["ncu hint"] for p in points["data"]["values"])


def test_chromium_draws_the_reports_of_the_gpu_acceptance_runs(tmp_path):
    for name in ("h200-matmul-k.json", "h200-gpu-full.json.gz"):
        page = tmp_path / (name.split(".")[0] + ".html")
        page.write_text(render_report([(name, recorded(name))]))
        assert_charts_drawn(page)


CLICK_MEDIAN = """<script>
// After the page's own script: sort the first results table by its median header, twice,
// and record the medians' sort keys in each order.
var table = document.querySelector("table.results.sortable");
var headers = Array.prototype.slice.call(table.tHead.rows[0].cells);
var median = headers.findIndex(function (th) { return th.textContent === "median"; });
function keys() {
  return Array.prototype.map.call(table.tBodies[0].rows, function (row) {
    return row.cells[median].dataset.sort || "-"; }).join(",");
}
headers[median].click(); document.body.setAttribute("data-ascending", keys());
headers[median].click(); document.body.setAttribute("data-descending", keys());
</script></body>"""


def test_chromium_sorts_a_table_by_the_numbers_behind_its_cells(tmp_path):
    """900 us must sort below 1.2 ms: the sort uses each cell's number, not its text."""
    if browser() is None:
        pytest.skip("no Chromium here (apt install chromium)")
    run = recorded("h200-matmul-k.json")
    page = tmp_path / "sort.html"
    page.write_text(render_report([("k", run)]).replace("</body>", CLICK_MEDIAN))
    dom = rendered_dom(page)
    ascending = re.search(r'data-ascending="([^"]*)"', dom).group(1).split(",")
    descending = re.search(r'data-descending="([^"]*)"', dom).group(1).split(",")
    medians = sorted(r.median_s for r in run.results)
    assert [float(k) for k in ascending] == pytest.approx(medians, rel=1e-5)
    assert [float(k) for k in descending] == pytest.approx(medians[::-1], rel=1e-5)


def test_chromium_draws_the_page_of_a_gpu_profile(tmp_path):
    """`gpubench profile` on the H200 (a GPT training step): the program, the region, the
    GPU's busy fraction, a chart of the top kernels and the sortable table."""
    run = read_run(FIXTURES / "profile" / "gpt_train_h200_results.json")
    page = tmp_path / "profile.html"
    page.write_text(render_report([("profile-gpt", run)]))
    text = page.read_text()
    assert "Profile profile-gpt" in text and "train (5 of 5 instances)" in text
    assert "GPU busy" in text and "multi_tensor_apply_kernel" in text
    (chart,) = specs_of(text).values()
    assert chart["data"]["values"][0]["origin"] == "cuBLAS"
    assert_charts_drawn(page)


def test_run_report_on_the_cpu_writes_a_page_chromium_draws(gpubench):
    done = gpubench("run", "vector_add", "--variants", "torch", "--sizes", "2^10,2^14",
                    *FAST, "--device", "cpu", "--report", "--out", "cpu-run")
    assert done.code == 0, done.output
    page = done.cwd / "cpu-run" / "report.html"
    assert page.is_file() and f"report: {Path('cpu-run') / 'report.html'}" in done.output
    text = page.read_text()
    assert "CPU" in text and "host-clock" in text
    specs = specs_of(text)
    sweep = [s for s in specs.values() if s["title"].startswith("vector_add float32 cpu")]
    assert len(sweep) == 2  # time and GB/s over n
    assert_charts_drawn(page)


def test_suspect_rows_are_red_listed_with_their_reason_and_left_off_the_charts():
    results = [r.with_derived(roof=RoofPosition("compute", 0.5, r.flops / r.bytes_moved))
               for r in synthetic([{"M": n, "N": n, "K": n} for n in (256, 512, 1024)])]
    reason = "4034% of the measured roofline: faster than physics allows"
    results[3] = replace(results[3], status=R.SUSPECT, error=reason)  # mine at 512
    ceilings = {"bandwidth_gbps": 3000.0, "tflops": {"float32": 50.0}}
    page = render_report([("run", RunDocument({}, {"ceilings": ceilings}, tuple(results)))])
    assert '<td class="status-suspect">SUSPECT</td>' in page and reason in page
    assert "1 SUSPECT row(s) left out of the charts" in page
    assert "6 results: 5 PASS, 1 SUSPECT" in page
    roof = charts.roofline_spec(results, ceilings, "t")["layer"][-1]["data"]["values"]
    assert len(roof) == 5 and ("mine", "M=512 N=512 K=512") not in {
        (r["variant"], r["shape"]) for r in roof}
    (sweep,) = charts.sweeps(results)
    assert results[3] not in sweep["results"] and len(sweep["results"]) == 5


def test_the_compare_section_shows_a_point_gone_suspect_in_red_and_off_its_chart():
    base = synthetic([{"M": 8, "N": 8, "K": 8}])
    new = [base[0], replace(base[1], status=R.SUSPECT, error="0.0 ns per call")]
    comparison = compare_runs(RunDocument({}, {}, tuple(base)), RunDocument({}, {}, tuple(new)))
    page = render_report([("a", RunDocument({}, {}, tuple(base))),
                          ("b", RunDocument({}, {}, tuple(new)))],
                         [RunComparisonView("a", "b", comparison)])
    assert '<td class="verdict-SUSPECT">SUSPECT</td>' in page
    assert "SUSPECT in NEW: 0.0 ns per call" in page
    assert "1 point(s) SUSPECT or FAILED in NEW after a PASS in BASE" in page
    rows = charts.compare_spec(comparison.points, "t")["data"]["values"]
    assert [r["point"] for r in rows] == ["matmul torch float32 M=8 N=8 K=8 cold"]
