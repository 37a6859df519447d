"""The report's chart data (issue 28): one colour per variant on every chart, the baseline
black and thick, BASE and NEW overlaid, every precision's roof across the whole plot,
labels never cut, correctness-only rows off the charts. Read from the specs: no browser."""

import math
from dataclasses import replace

import pytest

from conftest import FIXTURES
from gpubench.analysis.comparison import compare_runs
from gpubench.records import result as R
from gpubench.records.point import PointKey
from gpubench.records.run import RunDocument
from gpubench.records.shape import Shape
from gpubench.report import chart_style, charts
from gpubench.report.html import RunComparisonView, chart_specs, render_report
from gpubench.store.folder import read_run
from gpubench.timing.measurement import Measurement
from gpubench.timing.roofline import RoofPosition

H200 = FIXTURES / "compare" / "h200"
CEILINGS = {"bandwidth_gbps": 4281.0,
            "tflops": {"fp32": 51.0, "tf32": 400.0, "fp16": 656.0, "bf16": 675.0}}


def family(name: str, variants: tuple[str, ...], sizes=(256, 512, 1024), kind="torch",
           device="cuda", scale=1.0) -> list[R.Result]:
    """A family's results over square sizes; the first variant is its baseline."""
    out = []
    for i, n in enumerate(sizes):
        for j, variant in enumerate(variants):
            samples = [scale * 1e-5 * (i + 1) * (j + 1) * (1 + 0.01 * k) for k in range(10)]
            result = R.Result(
                key=PointKey(name, variant, "float32", Shape({"M": n, "N": n, "K": n}), "cold"),
                kind=kind, device=device, status=R.OK, baseline=j == 0,
                flops=2.0 * n**3, bytes_moved=12.0 * n * n,
                measurement=Measurement("cold", "test", samples))
            out.append(result.with_derived(roof=RoofPosition("compute", 0.5, n / 6,
                                                                compute="fp32")))
    return out


def colours_of(spec: dict) -> dict[str, str]:
    """variant -> colour, from whichever layer carries the colour scale."""
    for layer in [spec, *spec.get("layer", [])]:
        scale = layer.get("encoding", {}).get("color", {}).get("scale")
        if scale and "range" in scale:
            return dict(zip(scale["domain"], scale["range"], strict=True))
    raise AssertionError(f"no colour scale in {spec['title']}")


def test_a_variant_has_one_colour_on_every_chart_and_the_baseline_is_black():
    # 'triton' meets different neighbours in each family: Vega's own scale gave it a
    # different colour in each.
    results = (family("matmul", ("torch", "naive", "triton"))
               + family("gemv", ("torch", "triton", "zz_split")))
    run = RunDocument({}, {"ceilings": CEILINGS}, tuple(results))
    specs = chart_specs([("run", run)])
    assert len(specs) == 6  # per family: a roofline, the sweep's time and TFLOP/s
    seen: dict[str, set[str]] = {}
    for spec in specs:
        for variant, colour in colours_of(spec).items():
            seen.setdefault(variant, set()).add(colour)
    assert all(len(colours) == 1 for colours in seen.values()), seen
    assert seen["torch (base)"] == {chart_style.BASELINE_COLOR}
    assert len({c for v, (c,) in seen.items() if v != "torch (base)"}) == 3  # all distinct
    line = specs[1]["layer"][1]["encoding"]
    assert line["strokeWidth"]["condition"]["value"] > line["strokeWidth"]["value"]
    assert all(row["is_base"] == row["variant"].endswith("(base)")
               for row in specs[1]["data"]["values"])


def test_colours_follow_sorted_names_over_the_whole_report_not_one_chart():
    colors = chart_style.VariantColors(family("a", ("torch", "zeta"))
                                       + family("b", ("torch", "alpha")))
    assert colors.color("alpha") == chart_style.PALETTE[0]
    assert colors.color("zeta") == chart_style.PALETTE[1]
    assert colors.encoding(["zeta", "torch (base)"])["scale"]["domain"] == [
        "torch (base)", "zeta"]  # the baseline first in each legend


def test_an_ab_report_overlays_base_dashed_with_its_band_and_new_solid():
    base, new = read_run(H200 / "softmax-a1"), read_run(H200 / "softmax-a3")
    view = RunComparisonView("a1", "a3", compare_runs(base, new))
    specs = chart_specs([("a1", base), ("a3", new)], [view])
    sweeps = [s for s in specs if s["title"].startswith("softmax float32 cold")]
    assert len(sweeps) == 2  # drawn once, overlaid: not once per run
    for spec in sweeps:
        runs = {row["run"] for row in spec["data"]["values"]}
        assert runs == {"BASE a1", "NEW a3"}
        band, line = spec["layer"]
        assert band["mark"]["type"] == "errorband"
        assert band["transform"] == [{"filter": {"field": "run", "equal": "BASE a1"}}]
        dash = line["encoding"]["strokeDash"]["scale"]
        assert dash["domain"] == ["BASE a1", "NEW a3"]
        assert dash["range"] == [chart_style.BASE_DASH, chart_style.NEW_DASH]
        # every variant of both runs at every swept value: 3 variants x 2 cols x 2 runs
        assert len(spec["data"]["values"]) == 12
    page = render_report([("a1", base), ("a3", new)], [view])
    assert "softmax: BASE vs NEW" in page and "BASE dashed with its noise band" in page


def test_a_single_run_has_no_overlay_and_keeps_a_band_per_variant():
    (sweep,) = charts.sweeps(read_run(H200 / "softmax-a1").results)
    band, line = charts.sweep_specs(sweep, "softmax")[0]["layer"]
    assert "transform" not in band and "strokeDash" not in line["encoding"]


def test_every_precisions_roof_spans_the_whole_x_axis():
    results = family("matmul", ("torch", "mine"))
    spec = charts.roofline_spec(results, CEILINGS, "matmul: roofline")
    left, right = spec["encoding"]["x"]["scale"]["domain"]
    assert spec["encoding"]["x"]["scale"]["nice"] is False
    used, others = spec["layer"][0]["data"]["values"], spec["layer"][1]["data"]["values"]
    assert {r["precision"] for r in used} == {"fp32"}  # the points' own roof: dark
    assert {r["precision"] for r in others} == {"tf32", "fp16", "bf16"}  # the rest: light
    assert used[0]["intensity"] == left and used[-1]["intensity"] == right
    fp32_ridge = used[1]["intensity"]
    for name in ("tf32", "fp16", "bf16"):
        # From where they leave the fp32 roof (its ridge, on the shared slope) to the edge.
        vertices = [r for r in others if r["precision"] == name]
        assert vertices[0]["intensity"] == pytest.approx(fp32_ridge)
        assert vertices[-1]["intensity"] == right
    points = spec["layer"][-1]["data"]["values"]
    assert left < min(p["intensity"] for p in points) and right > max(
        p["intensity"] for p in points)
    low, high = spec["encoding"]["y"]["scale"]["domain"]
    assert low <= used[0]["tflops"]  # the memory roof starts inside the plot, at its edge
    assert high > 675.0  # above the highest peak, with room for its label
    labels = [layer for layer in spec["layer"] if layer["mark"].get("type") == "text"]
    lifts = sorted(layer["mark"]["dy"] for layer in labels if layer["data"]["values"][0]
                   ["label"].startswith(("fp16", "bf16")))
    assert lifts[0] < lifts[1]  # 656 and 675 TFLOP/s: one label above the other


def test_labels_are_never_cut():
    results = family("softmax", ("torch", "a_variant_with_a_long_name_" * 3))
    for spec in chart_specs([("run", RunDocument({}, {"ceilings": CEILINGS}, tuple(results)))]):
        assert spec["config"]["axis"]["labelLimit"] >= 1000
        assert spec["config"]["legend"]["labelLimit"] >= 1000
        assert spec["config"]["title"]["limit"] == 0
        assert spec["width"] == "container"  # the page's width, not a fixed 560 px


def test_interpreter_rows_are_correctness_only_and_off_every_chart():
    torch_rows = family("softmax", ("torch",), device="cpu")
    interpreted = family("softmax", ("triton",), kind="triton", device="cpu", scale=1e4)
    interpreted = [replace(r, baseline=False) for r in interpreted]
    assert all(charts.correctness_only(r) for r in interpreted)
    assert not any(charts.correctness_only(r) for r in torch_rows)
    assert not charts.correctness_only(family("x", ("t",), kind="triton")[0])  # on a GPU
    results = torch_rows + interpreted
    assert charts.measured(results) == torch_rows
    run = RunDocument({}, {"ceilings": CEILINGS}, tuple(results))
    for spec in chart_specs([("cpu", run)]):
        for layer in [spec, *spec.get("layer", [])]:
            rows = (layer.get("data") or {}).get("values", [])
            assert not any(row.get("variant") == "triton" for row in rows)
    page = render_report([("cpu", run)])
    assert "3 correctness-only row(s) left out of the charts" in page


def test_chart_file_names_keep_page_order_and_shell_safe_titles():
    from gpubench.store.chart_files import file_names

    names = file_names([{"title": "softmax float32 cold (rows=4096): GB/s"},
                        {"title": "NEW a/b / BASE <x>"}, {}])
    assert names == ["01-softmax-float32-cold-rows-4096-gb-s", "02-new-a-b-base-x",
                     "03-chart"]


def test_svg_and_png_without_chromium_say_so(monkeypatch, tmp_path):
    from gpubench import errors
    from gpubench.store import chart_files

    monkeypatch.setattr(chart_files, "find_browser", lambda: None)
    with pytest.raises(errors.ToolMissing, match="apt install chromium"):
        chart_files.write_chart_files([{"title": "t"}], tmp_path / "charts", "png")
    assert not (tmp_path / "charts").exists()


def test_roofline_y_axis_has_no_empty_decade_above_the_roofs():
    spec = charts.roofline_spec(family("m", ("torch",)), CEILINGS, "t")
    _, high = spec["encoding"]["y"]["scale"]["domain"]
    assert high < 675.0 * 2 and math.isfinite(high)


def test_a_family_whose_rows_name_different_axes_draws_without_a_key_error():
    """Issue 52: a results.json edited to give one row an axis its family lacks stopped
    `gpubench report` with KeyError: 'zz'."""
    from gpubench.records import result as R
    from gpubench.records.point import PointKey
    from gpubench.records.shape import Shape
    from gpubench.report.charts import sweeps
    from gpubench.timing.measurement import Measurement

    def row(shape: dict, median: float) -> R.Result:
        key = PointKey("demo", "torch", "float32", Shape(shape), "cold")
        return R.Result(key=key, kind="torch", status=R.OK, measurement=Measurement(
            "cold", "test", (median,) * 5))

    found = sweeps([row({"n": 1024}, 1e-6), row({"n": 4096}, 3e-6), row({"zz": 5}, 2e-6)])
    assert [s["axis"] for s in found] == ["n"]
