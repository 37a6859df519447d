"""Ceilings per precision (issue 25): what `gpubench peak` measures and skips, the roof a
variant's declared precision picks, the table naming it, and old caches and results.json
still loading."""

import json

import pytest
from rich.console import Console

from conftest import FIXTURES
from gpubench.commands.peak import ceilings_table
from gpubench.errors import SpecError
from gpubench.families.discovery import family_dirs, load_family
from gpubench.families.spec import Machine, TorchVariant
from gpubench.records import result as R
from gpubench.records.point import PointKey
from gpubench.records.run import RunDocument
from gpubench.records.shape import Shape
from gpubench.report.table import table_layout
from gpubench.run.plan import plan_points
from gpubench.timing import ceilings, matmul_ceilings, precision
from gpubench.timing.ceilings import Ceilings
from gpubench.timing.measurement import Measurement
from gpubench.verdicts.derive import finish_group, roof_position

WHEN = "2026-11-25T10:00:00+00:00"
# H200-like: 4281 GB/s copy, fp32 51 on CUDA cores, TF32 ~7x that (ranges in
# matmul_ceilings.py; these are made up for the arithmetic).
H200 = {"bandwidth_gbps": 4281.0,
        "tflops": {"fp32": 51.0, "tf32": 400.0, "fp16": 656.0, "bf16": 675.0, "fp8": 1300.0}}
# The same GPU's ceilings as results.json stored them before precisions (dtype keys).
OLD = {"bandwidth_gbps": 4281.0, "tflops": {"float32": 51.0, "float16": 656.0,
                                            "bfloat16": 675.0}}


# ------------------------------------------------------------------ what peak measures


def test_a_cpu_skips_tf32_and_fp8_with_reasons():
    skips = matmul_ceilings.skip_reasons("cpu", None, has_scaled_mm=True)
    assert set(skips) == {"tf32", "fp8"} and "CPU" in skips["tf32"]


@pytest.mark.parametrize("capability, has_scaled_mm, skipped", [
    ((9, 0), True, set()),              # H100/H200: everything
    ((8, 9), True, set()),              # Ada: fp8 too
    ((8, 6), True, {"fp8"}),            # Ampere: TF32 and bf16, no fp8
    ((9, 0), False, {"fp8"}),           # a torch without _scaled_mm
    ((7, 0), True, {"tf32", "bf16", "fp8"}),  # Volta: fp32 and fp16 only
])
def test_a_gpu_skips_what_its_capability_or_torch_lacks(capability, has_scaled_mm, skipped):
    skips = matmul_ceilings.skip_reasons("cuda", capability, has_scaled_mm)
    assert set(skips) == skipped
    if "fp8" in skips:
        assert ("8.9" in skips["fp8"]) or ("_scaled_mm" in skips["fp8"])


def test_every_precision_is_measured_or_said_why_not_and_a_failure_is_not_raised():
    def fake_rate(name):
        if name == "bf16":
            raise RuntimeError("CUDA out of memory. Tried to allocate 256 MiB\nmore text")
        return {"fp32": 51.0, "tf32": 400.0, "fp16": 0.0}[name]

    rates, unmeasured = matmul_ceilings.measure_rates(fake_rate, {"fp8": "no fp8 here"})
    assert rates == {"fp32": 51.0, "tf32": 400.0}
    assert unmeasured == {"fp16": "measured no positive rate (0.0)",
                          "bf16": "RuntimeError: CUDA out of memory. Tried to allocate 256 MiB",
                          "fp8": "no fp8 here"}
    assert set(rates) | set(unmeasured) == set(precision.PRECISIONS)


def test_measure_on_a_cpu_with_a_fake_timer(monkeypatch):
    """ceilings.measure's own path (copy, skips, a rate per precision) with a timer that
    says 1 ms: the CPU's three precisions measured, TF32 and fp8 skipped with reasons."""
    monkeypatch.setattr(ceilings, "_median_s", lambda timer, fn: 1e-3)
    measured = ceilings.measure("cpu", "k", "CPU")
    assert set(measured.tflops) == {"fp32", "fp16", "bf16"}
    n = matmul_ceilings.CPU_MATMUL_N["fp32"]
    assert measured.tflops["fp32"] == pytest.approx(2 * n**3 / 1e-3 / 1e12)
    assert set(measured.unmeasured) == {"tf32", "fp8"} and not measured.missing()
    assert measured.bandwidth_gbps == pytest.approx(2 * ceilings.CPU_COPY_BYTES / 1e-3 / 1e9)


def test_a_copy_that_fails_is_recorded_not_raised(monkeypatch):
    def broken_copy(torch, nbytes, device):
        raise RuntimeError("out of memory")

    monkeypatch.setattr(ceilings, "_copy_call", broken_copy)
    monkeypatch.setattr(ceilings, "_median_s", lambda timer, fn: 1e-3)
    measured = ceilings.measure("cpu", "k", "CPU")
    assert measured.bandwidth_gbps is None and "out of memory" in measured.unmeasured["copy"]
    check = ceilings.check_cached(measured, "cpu")
    assert check["stale"] is True and "no copy bandwidth" in check["message"]


@pytest.mark.parametrize("before", ["highest", "high", "medium"])
def test_tf32_flags_are_restored(before):
    import torch

    torch.set_float32_matmul_precision(before)
    saved = torch.backends.cuda.matmul.allow_tf32, torch.get_float32_matmul_precision()
    try:
        for enabled in (True, False):
            with matmul_ceilings.tf32_matmuls(torch, enabled):
                assert torch.backends.cuda.matmul.allow_tf32 is enabled
            assert (torch.backends.cuda.matmul.allow_tf32,
                    torch.get_float32_matmul_precision()) == saved
    finally:
        torch.set_float32_matmul_precision("highest")


def test_peak_prints_every_precision_and_why_one_is_unknown():
    measured = Ceilings(key="k", device="NVIDIA H200", bandwidth_gbps=4281.0,
                        tflops={"fp32": 51.3, "tf32": 402.0, "fp16": 656.0, "bf16": 675.0},
                        measured=WHEN, method="fake",
                        unmeasured={"fp8": "RuntimeError: no fp8 kernel"})
    console = Console(record=True, width=220)
    console.print(ceilings_table(measured))
    text = console.export_text()
    for name in precision.PRECISIONS:
        assert f"\n│ {name} " in text
    assert "402" in text and "copy 4" in text and " GB/s" in text
    assert "unknown" in text and "RuntimeError: no fp8 kernel" in text


# ------------------------------------------------------------------ old caches


def test_an_old_cache_loads_and_is_measured_again_for_what_it_lacks(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUBENCH_CACHE_DIR", str(tmp_path))
    env = {"device": "cpu", "cpu": "x86_64", "cpu_threads": 2, "torch": "2.13.0"}
    key = ceilings.device_key(env)
    old = {"key": key, "device": "CPU", "bandwidth_gbps": 30.0,
           "tflops": {"float32": 0.1, "float16": 0.01, "bfloat16": 0.02},
           "measured": WHEN, "method": "before precisions"}
    (ceilings.cache_dir() / f"{key}.json").write_text(json.dumps(old))
    loaded = ceilings.load_cached(key)
    assert loaded.tflops == {"fp32": 0.1, "fp16": 0.01, "bf16": 0.02}
    assert loaded.missing() == ("tf32", "fp8", "copy_curve")  # the curve came later still
    fresh = Ceilings(key=key, device="CPU", bandwidth_gbps=31.0, tflops={"fp32": 0.1},
                     measured=WHEN, method="new",
                     unmeasured={"tf32": "cpu", "fp16": "x", "bf16": "x", "fp8": "cpu"})
    monkeypatch.setattr(ceilings, "measure", lambda device, key, name: fresh)
    assert ceilings.load_checked(env, probe=False) == (fresh, None)
    assert ceilings.load_cached(key) == fresh  # written back whole


# ------------------------------------------------------------------ the roof a row is under


def row(variant="triton_tc", declared="", seconds=2.7e-3 / 1.7, dtype="float32"):
    """A 4096^3 matmul row: 137 GFLOP, 201 MB; 1.59 ms is 86 TFLOP/s, 170% of fp32's 51."""
    key = PointKey("matmul", variant, dtype, Shape({"M": 4096, "N": 4096, "K": 4096}), "cold")
    return R.Result(key=key, kind="triton", status=R.OK, flops=2 * 4096**3,
                    bytes_moved=3 * 4096**2 * 4, precision=declared,
                    measurement=Measurement("cold", "fake", [seconds] * 20,
                                            target_rel_ci=0.005, stop_reason="converged"))


def test_the_declared_precision_picks_the_roof():
    tf32 = roof_position(row(declared="tf32"), H200)
    assert tf32.compute == "tf32" and tf32.bound == "compute"
    assert tf32.fraction == pytest.approx(2 * 4096**3 / (2.7e-3 / 1.7) / 400e12)
    fp32 = roof_position(row(declared=""), H200)
    assert fp32.compute == "fp32" and fp32.fraction == pytest.approx(1.7, rel=0.02)
    assert roof_position(row(dtype="float16"), H200).compute == "fp16"


def test_an_unmeasured_precision_falls_back_to_the_dtypes_and_old_ceilings_still_place():
    assert roof_position(row(declared="tf32"), OLD).compute == "fp32"  # no tf32 there
    old = roof_position(row(), OLD)
    assert old.compute == "fp32" and old.fraction == pytest.approx(1.7, rel=0.02)
    assert precision.compute_roof(OLD, "float64", None) == ("fp32", 51.0)



def cublas_fp32_row() -> R.Result:
    """The cuBLAS fp32 baseline of a 4096^3 matmul at 2.7 ms: the row a TF32 kernel beats."""
    key = PointKey("matmul", "torch", "float32", Shape({"M": 4096, "N": 4096, "K": 4096}),
                   "cold")
    return R.Result(key=key, kind="torch", status=R.OK, baseline=True, flops=2 * 4096**3,
                    bytes_moved=3 * 4096**2 * 4,
                    measurement=Measurement("cold", "fake", [2.7e-3] * 20,
                                            target_rel_ci=0.005, stop_reason="converged"))

def test_a_tf32_kernel_is_not_suspect_under_its_own_roof_and_the_cell_names_it():
    base = cublas_fp32_row()
    torch_row, tc = finish_group([base, row(declared="tf32")], H200)
    assert tc.status == R.OK and tc.speedup == pytest.approx(1.7)
    _, rows, caption = table_layout([torch_row, tc])
    assert rows[0]["of roof"] == "100% comp"
    assert rows[1]["of roof"] == f"{tc.roof.fraction:.0%} tf32"
    assert "that precision's measured ceiling" in caption
    # Against the fp32 roof alone (no declaration) the same time is beyond physics.
    (undeclared,) = finish_group([row(declared="")], H200)
    assert undeclared.status == R.SUSPECT


def test_the_caption_says_nothing_of_precisions_when_no_row_differs():
    (alone,) = finish_group([row(declared="")], {**H200, "tflops": {"fp32": 400.0}})
    assert "precision" not in table_layout([alone])[2]


# ------------------------------------------------------------------ spec to Result


def test_the_matmul_spec_declares_tf32_for_triton_tc_fp32_only():
    family = load_family("matmul", family_dirs()["matmul"])
    machine = Machine(has_cuda=False, has_triton=True)
    points = plan_points([family], machine, dtypes=("float32", "float16"),
                         variants=("triton_tc", "triton"))
    declared = {(p.variant.name, p.dtype): p.result("cold", R.OK).precision for p in points}
    assert declared[("triton_tc", "float32")] == "tf32"
    assert declared[("triton_tc", "float16")] == ""
    assert declared[("triton", "float32")] == "" and declared[("torch", "float32")] == ""


def test_a_spec_names_a_known_precision():
    def fn(x, out):
        pass

    assert TorchVariant("v", fn=fn, precision="fp8").precision_for("float16") == "fp8"
    assert TorchVariant("v", fn=fn, precision={"float32": "tf32"}).precision_for(
        "bfloat16") is None
    with pytest.raises(SpecError, match="unknown precision 'tf16'"):
        TorchVariant("v", fn=fn, precision="tf16")
    with pytest.raises(SpecError, match="unknown dtype"):
        TorchVariant("v", fn=fn, precision={"fp32": "tf32"})


def test_precision_round_trips_and_an_old_results_json_loads():
    tc = finish_group([row(declared="tf32")], H200)[0]
    back = R.Result.from_dict(json.loads(json.dumps(tc.to_dict())))
    assert back.precision == "tf32" and back.roof.compute == "tf32"
    assert tc.to_record()["precision"] == "tf32"
    old = RunDocument.from_dict(json.loads((FIXTURES / "report" / "h200-matmul-k.json")
                                           .read_text()))
    first = old.results[0]
    assert first.precision == "" and first.roof.compute is None  # before precisions
    assert table_layout([first])[1][0]["of roof"].endswith("comp")
    replaced = roof_position(first, old.env["ceilings"])
    assert replaced.compute == "fp32"
    assert replaced.fraction == pytest.approx(first.roof.fraction)


def test_the_roofline_draws_the_declared_precisions_roof_beside_the_dtypes():
    from gpubench.report import charts

    base = cublas_fp32_row()
    group = finish_group([base, row(declared="tf32")], H200)
    spec = charts.roofline_spec(group, H200, "matmul")
    roofs = spec["layer"][0]["data"]["values"]
    peaks = {r["precision"]: r["tflops"] for r in roofs if r["label"]}
    assert peaks == {"fp32": 51.0, "tf32": 400.0}
    points = spec["layer"][-1]["data"]["values"]
    assert [p["of roof"].split()[-1] for p in points] == ["comp", "tf32"]
