"""Named axes, shape parsing and errors, point keys, one settings type end to end, and the
run document: save -> load loses nothing, strict JSON, latest."""

import json
import math

import pytest

from gpubench.cli import merge_options
from gpubench.errors import ConfigError, UsageError
from gpubench.families.spec import Family, Machine, SpecError, TorchVariant
from gpubench.parsing import format_size, parse_size
from gpubench.records import result as R
from gpubench.records.build_info import BuildInfo
from gpubench.records.point import PointKey, Task
from gpubench.records.run import RunDocument
from gpubench.records.shape import Axis, Shape, ShapeChoice, parse_axis, parse_shape, sweep
from gpubench.records.strict_json import strict_dumps
from gpubench.run.config import RunConfig, load_config
from gpubench.run.plan import Point, choose_shapes, plan_points
from gpubench.store.folder import load_run, point_latest, read_run, resolve_run, save_run
from gpubench.timing.check_result import CheckResult
from gpubench.timing.clocks import ClockReport
from gpubench.timing.measurement import Measurement
from gpubench.timing.settings import TimingSettings
from gpubench.verdicts.derive import finish_group

CPU = Machine(has_cuda=False, has_triton=True)
GPU = Machine(has_cuda=True, has_triton=True)
GEMM_AXES = (Axis("M", default=4096), Axis("N", default=4096), Axis("K", default=4096))


def gemm_family(**changes) -> Family:
    import torch

    base = dict(
        name="gemm", axes=GEMM_AXES, fill=lambda n: {"M": n, "N": n, "K": n},
        shapes=({"M": 64, "N": 64, "K": 64},),
        reference=lambda a, b: a @ b,
        make_inputs=lambda s, d, dev: (torch.randn(s["M"], s["K"]), torch.randn(s["K"], s["N"])),
        flops=lambda s: 2 * s["M"] * s["N"] * s["K"],
        bytes_moved=lambda s, i: (s["M"] * s["K"] + s["K"] * s["N"] + s["M"] * s["N"]) * i,
        variants=(TorchVariant("t", fn=lambda a, b, out: None, baseline=True),),
    )
    return Family(**{**base, **changes})


# ---------------------------------------------------------------- parsing


@pytest.mark.parametrize("text, value", [
    ("4096", 4096), ("2^20", 1 << 20), ("2**10", 1024), ("4k", 4096), ("4K", 4096),
    ("1M", 1 << 20), ("1G", 1 << 30), ("16_384", 16384),
])
def test_sizes_accept_powers_and_binary_suffixes(text, value):
    assert parse_size(text) == value


@pytest.mark.parametrize("text", ["4m", "1.5k", "k", "-4", "0", "2^99"])
def test_bad_sizes_are_usage_errors(text):
    with pytest.raises(UsageError):
        parse_size(text)


def test_shapes_and_sweeps_parse_and_refuse_malformed_text():
    assert parse_shape("M=4096, N=4k ,K=2^7") == {"M": 4096, "N": 4096, "K": 128}
    assert parse_axis("K=64,128,256") == ("K", (64, 128, 256))
    for bad, message in [("M=4096,N", "AXIS=VALUE"), ("M=1,M=2", "given twice"),
                         ("4M=1", "not an axis name"), ("M=abc", "invalid size 'abc'"),
                         ("M=", "AXIS=VALUE")]:
        with pytest.raises(UsageError, match=message):
            parse_shape(bad)


def test_shape_is_an_ordered_hashable_mapping_with_key_label_and_slug():
    shape = Shape({"M": 16, "N": 4096, "K": 1 << 20})
    assert shape == {"K": 1 << 20, "M": 16, "N": 4096} and list(shape) == ["M", "N", "K"]
    assert shape.text() == "M=16,N=4096,K=1048576" and parse_shape(shape.text()) == shape
    assert shape.label() == "M=16 N=4096 K=2^20" and shape.slug() == "M16_N4096_K1048576"
    assert hash(shape) == hash(Shape(dict(shape))) and len({shape, Shape(shape)}) == 1
    assert Shape({"n": 16777216}).slug() == "16777216"
    assert format_size(4096) == "4096" and format_size(1 << 24) == "2^24"
    with pytest.raises(AttributeError):
        shape.x = 1


# ---------------------------------------------------------------- against a family


def test_whole_shapes_must_name_every_axis_and_only_known_ones():
    family = gemm_family()
    assert family.shape_of({"K": 128, "M": 8192, "N": 8192}).text() == "M=8192,N=8192,K=128"
    with pytest.raises(UsageError, match=r"family 'gemm'.*lacks axis 'K'"):
        family.shape_of({"M": 1, "N": 2})
    with pytest.raises(UsageError, match=r"family 'gemm' has no axis 'k' .*did you mean: K"):
        family.shape_of({"M": 1, "N": 2, "k": 3})
    with pytest.raises(UsageError, match="axis 'M' must be a positive integer"):
        family.shape_of({"M": 0, "N": 2, "K": 3})


def test_a_family_may_refuse_a_shape_with_its_reason():
    family = gemm_family(
        check_shape=lambda s: "K must be a multiple of 16" if s["K"] % 16 else None)
    with pytest.raises(UsageError, match="refuses shape M=64,N=64,K=100: K must be a multiple"):
        family.shape_of({"M": 64, "N": 64, "K": 100})


def test_axis_sweeps_are_a_cartesian_product_with_the_rest_at_defaults():
    shapes = sweep("gemm", GEMM_AXES, {"K": (64, 128), "M": (16, 32)}, has_cuda=True)
    assert [s.text() for s in shapes] == [
        "M=16,N=4096,K=64", "M=16,N=4096,K=128", "M=32,N=4096,K=64", "M=32,N=4096,K=128"]
    axes = (Axis("rows", default=4096, cpu_default=64), Axis("cols"))
    assert sweep("sm", axes, {"cols": (10,)}, has_cuda=False) == [Shape({"rows": 64, "cols": 10})]
    with pytest.raises(UsageError, match="axis 'cols' has no default"):
        sweep("sm", axes, {"rows": (1,)}, has_cuda=True)


def test_one_number_fills_every_axis_only_where_the_family_says_how():
    assert gemm_family().shape_from_size(256) == {"M": 256, "N": 256, "K": 256}
    with pytest.raises(UsageError, match=r"axes M, N, K and no rule for one number.*--shape"):
        gemm_family(fill=None).shape_from_size(256)
    with pytest.raises(SpecError, match="declare shapes"):
        gemm_family(fill=None, sizes=(64,))


def test_choices_combine_sizes_shapes_and_sweeps_and_drop_duplicates():
    choice = ShapeChoice(sizes=(64,), shapes=({"M": 64, "N": 64, "K": 64}, {"M": 16, "N": 8,
                                                                            "K": 8}),
                         axes=(("K", (8,)), ("M", (16,))))
    shapes = choose_shapes(gemm_family(), choice, GPU)
    assert [s.text() for s in shapes] == ["M=64,N=64,K=64", "M=16,N=8,K=8", "M=16,N=4096,K=8"]
    assert choose_shapes(gemm_family(), ShapeChoice(), GPU) == (Shape({"M": 64, "N": 64,
                                                                       "K": 64}),)


def test_a_bad_shape_from_a_suite_file_is_a_config_error_naming_the_file(tmp_path):
    suite = tmp_path / "suite.toml"
    suite.write_text('[shapes]\ngemm = ["M=1,N=2,X=3"]\n')
    config = load_config(suite)
    with pytest.raises(ConfigError, match=r"suite.toml: the shapes of 'gemm'.*no axis 'X'"):
        plan_points([gemm_family()], GPU, {"gemm": config.shapes_for("gemm")})


def test_suite_files_take_shape_tables_and_axis_sweeps(tmp_path):
    suite = tmp_path / "suite.toml"
    suite.write_text('[shapes]\nmatmul = ["M=16,N=4096,K=4096", {M = 8192, N = 8192, K = 128}]\n'
                     '[axes]\nsoftmax = {cols = [128, "1k"]}\n')
    config = load_config(suite)
    assert config.shapes_for("matmul").shapes == ({"M": 16, "N": 4096, "K": 4096},
                                                  {"M": 8192, "N": 8192, "K": 128})
    assert config.shapes_for("softmax").axes == (("cols", (128, 1024)),)
    suite.write_text('[shapes]\nmatmul = ["M=16,N"]\n')
    with pytest.raises(ConfigError, match=r"key 'shapes.matmul'"):
        load_config(suite)


def test_legacy_one_axis_families_still_get_plain_ints():
    import torch

    seen = []
    family = Family(reference=lambda x: x, sizes=(8,), size_name="N",
                    make_inputs=lambda n, d, dev: seen.append(n) or (torch.ones(n),),
                    flops=lambda n: n, bytes_moved=lambda n, b: n * b,
                    variants=(TorchVariant("t", fn=lambda x, out: None, baseline=True),))
    (shape,) = family.default_shapes(CPU)
    assert shape == {"N": 8} and family.flop_count(shape) == 8.0
    family.inputs(shape, torch.float32, "cpu")
    assert seen == [8]


# ---------------------------------------------------------------- one settings type


def test_a_bound_set_alone_moves_the_default_other_bound_but_two_may_not_contradict():
    timing = merge_options(RunConfig(), {"max_time_ms": 20.0}).timing
    assert (timing.min_time_s, timing.max_time_s) == (0.02, 0.02)
    timing = merge_options(RunConfig(), {"min_samples": 50}).timing
    assert (timing.min_samples, timing.max_samples) == (50, 10_000)
    with pytest.raises(UsageError, match=r"\(400 ms\) exceeds --max-time"):
        merge_options(RunConfig(), {"min_time_ms": 400.0, "max_time_ms": 5.0})
    with pytest.raises(ValueError, match="must be at least 1 s"):
        TimingSettings(timeout_s=0.5)
    with pytest.raises(ValueError, match="finite"):
        TimingSettings(warmup_s=float("nan"))


def test_one_timing_settings_type_from_the_command_line_to_the_worker():
    config = merge_options(RunConfig(), {"warmup_ms": 25.0, "max_time_ms": 300.0,
                                         "modes": ("cold,wall",), "timeout_s": 9.0,
                                         "remeasure_throttled": True, "shapes": ("M=1,N=2,K=3",)})
    timing = config.timing
    assert isinstance(timing, TimingSettings)
    assert (timing.warmup_s, timing.max_time_s, timing.modes, timing.timeout_s,
            timing.remeasure_throttled) == (0.025, 0.3, ("cold", "wall"), 9.0, True)
    family = gemm_family()
    (point,) = plan_points([family], GPU, {"gemm": config.shapes_for("gemm")})
    task = point.task(3, timing)
    assert task.timing is timing
    again = Task.from_json(task.to_json())  # what the worker reads
    assert again == task and again.timing == timing and again.shape == {"M": 1, "N": 2, "K": 3}
    with pytest.raises(UsageError, match="--max-time: expected a number > 0"):
        merge_options(RunConfig(), {"max_time_ms": 0.0})


# ---------------------------------------------------------------- results and documents


def _result(variant: str, status=R.OK, samples=(1e-3, 2e-3, 3e-3), check=None, mode="cold",
            baseline=False) -> R.Result:
    shape = Shape({"M": 16, "N": 4096, "K": 4096})
    measurement = Measurement(mode, "events", samples, warmup_calls=4, warmup_s=0.1,
                              stop_reason="converged", sampling_s=0.05, details={"k": 1},
                              target_rel_ci=0.005, clocks=ClockReport(sm_mhz_min=1980),
                              recheck=CheckResult(True)) if samples else None
    return R.Result(key=PointKey("matmul", variant, "bfloat16", shape, mode), kind="cuda",
                    status=status, baseline=baseline, device="cuda", flops=2e9,
                    bytes_moved=1e8, seed=5, measurement=measurement, check=check,
                    build=BuildInfo(compile_s=1.5, cached=False), error=None if status == R.OK
                    else "output differs")


def _document() -> RunDocument:
    bad_check = CheckResult(False, max_abs_err=math.inf, worst_ratio=-math.inf, mismatches=3,
                            nonfinite=3, total=9)
    rows = finish_group([_result("torch", baseline=True), _result("naive"),
                         _result("wrong", R.FAIL, samples=(), check=bad_check)],
                        {"bandwidth_gbps": 4000.0, "tflops": {"bfloat16": 790.0}})
    return RunDocument({"run_id": "r1", "timing": TimingSettings().to_dict()},
                       {"gpu": "NVIDIA H200"}, tuple(rows))


def test_point_key_names_family_variant_dtype_shape_and_mode():
    key = _result("naive").key
    assert key.text() == "matmul/naive/bfloat16/M=16,N=4096,K=4096/cold"
    assert key == PointKey("matmul", "naive", "bfloat16", Shape({"M": 16, "N": 4096,
                                                                  "K": 4096}), "cold")
    assert key != PointKey("matmul", "naive", "bfloat16", key.shape, "wall")


def test_save_then_load_loses_nothing_and_the_json_is_strict(tmp_path):
    document = _document()
    csv_path, json_path = save_run(document, tmp_path / "run")
    text = json_path.read_text()
    json.loads(text, parse_constant=lambda token: pytest.fail(f"non-JSON token {token}"))
    loaded = read_run(tmp_path / "run")
    assert loaded.results == document.results  # measurements, checks, builds, derived values
    assert loaded.meta == document.meta and loaded.env == document.env
    wrong = loaded.by_key()["matmul/wrong/bfloat16/M=16,N=4096,K=4096/cold"]
    assert wrong.check.max_abs_err == math.inf and wrong.check.worst_ratio == -math.inf
    assert loaded.results[1].measurement.warmup_s == 0.1
    assert loaded.results[1].speedup == 1.0 and loaded.results[1].roof.bound
    assert csv_path.read_text().splitlines()[0].startswith("family,variant,M,N,K,dtype,")
    frame = loaded.to_frame()
    assert list(frame["M"]) == [16, 16, 16] and list(frame["variant"]) == ["torch", "naive",
                                                                            "wrong"]


def test_strict_dumps_marks_every_non_finite_value():
    text = strict_dumps({"a": math.inf, "b": [1.0, -math.inf], "c": {"d": math.nan}})
    data = json.loads(text)
    assert data == {"a": None, "b": [1.0, None], "c": {"d": None, "_nonfinite": {"d": "nan"}},
                    "_nonfinite": {"a": "inf", "b[1]": "-inf"}}


def test_result_repr_is_short_and_to_dict_is_complete():
    row = _document().results[1]
    text = repr(row)
    assert text.startswith("<Result matmul/naive M=16 N=4096 K=4096 bfloat16 cold: 2")
    assert "TFLOP/s" in text and "0.001" not in text and len(text) < 120
    assert "samples_s" in row.to_dict()["measurement"]
    assert R.Result.from_dict(json.loads(json.dumps(row.to_dict()))) == row


def test_latest_and_steps_back(tmp_path):
    base = tmp_path / "profiles"
    for name in ("20261122-100000-a", "20261122-110000-b"):
        save_run(_document(), base / name)
        point_latest(base, base / name)
    assert resolve_run("latest", base).name == "20261122-110000-b"
    assert resolve_run("latest~1", base).name == "20261122-100000-a"
    assert load_run("latest", base).results == _document().results
    with pytest.raises(UsageError, match="only 2 run"):
        resolve_run("latest~2", base)
    with pytest.raises(UsageError, match="no run results"):
        load_run(tmp_path / "nowhere")
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "results.json").write_text("{not json")
    with pytest.raises(UsageError, match="not a gpubench results file"):
        load_run(tmp_path / "junk")


def test_schema_1_files_still_load(tmp_path):
    old = {"schema": 1, "meta": {"seed": 1}, "env": {}, "results": [
        {"family": "square", "variant": "cuda", "kind": "cuda", "size": 1024,
         "dtype": "float32", "mode": "cold", "status": "ok", "samples_s": [1e-6, 2e-6],
         "method": "events", "stop_reason": "converged", "compile_s": 0.5,
         "compile_cached": True}]}
    (tmp_path / "results.json").write_text(json.dumps(old))
    (row,) = load_run(tmp_path).results
    assert row.shape == {"n": 1024} and row.samples_s == (1e-6, 2e-6) and row.compile_cached


def test_a_point_builds_its_task_and_its_results():
    family = gemm_family(directory=None)
    shape = family.shape_of({"M": 2, "N": 3, "K": 4})
    point = Point(family, family.variants[0], shape, "float32", seed=11)
    result = point.result("cold", R.SKIPPED, error="why")
    assert result.key == PointKey("gemm", "t", "float32", shape, "cold")
    assert result.flops == 2 * 2 * 3 * 4 and result.bytes_moved == (8 + 12 + 6) * 4
    assert point.task(0).label == "gemm/t/M=2,N=3,K=4/float32"
