"""The memory roof at a row's footprint (issue 25): the copy curve's interpolation, its cache
(old caches load and are measured again once), the roof a row gets, and `gpubench peak`."""

import itertools
import json
import math

import pytest
from rich.console import Console

from gpubench.commands.peak import curve_table
from gpubench.records import result as R
from gpubench.records.point import PointKey
from gpubench.records.shape import Shape
from gpubench.report.table import table_layout
from gpubench.timing import ceilings, copy_curve
from gpubench.timing.ceilings import Ceilings
from gpubench.timing.copy_curve import bandwidth_at, memory_roof_gbps, normalized
from gpubench.timing.measurement import Measurement
from gpubench.verdicts.derive import finish_group, roof_position

WHEN = "2026-11-25T10:00:00+00:00"
MIB = 1 << 20
# An H100-like curve (made up for the arithmetic, shaped as the write-back predicts): small
# copies launch-bound, copies whose writes fit in the 50 MB L2 above the large copy, the
# large ones at it.
CURVE = ((4 * MIB, 1500.0), (16 * MIB, 2800.0), (64 * MIB, 3600.0), (256 * MIB, 3200.0),
         (1024 * MIB, 3000.0))
H100 = {"bandwidth_gbps": 3000.0, "tflops": {"fp32": 52.0},
        "bandwidth_curve": [list(p) for p in CURVE]}  # as results.json/the cache hold it


# ------------------------------------------------------------------ interpolation


def test_the_curve_at_its_own_points_and_log_log_between():
    for moved, gbps in CURVE:
        assert bandwidth_at(CURVE, moved) == pytest.approx(gbps)
    # 32 MiB is halfway between 16 and 64 MiB on a log axis: the geometric mean.
    assert bandwidth_at(CURVE, 32 * MIB) == pytest.approx(math.sqrt(2800.0 * 3600.0))
    between = bandwidth_at(CURVE, 100 * MIB)
    assert 3200.0 < between < 3600.0


def test_beyond_the_ends_the_nearest_end_and_nothing_for_nothing():
    assert bandwidth_at(CURVE, 1) == 1500.0
    assert bandwidth_at(CURVE, 16 << 30) == 3000.0
    assert bandwidth_at((), 64 * MIB) is None
    assert bandwidth_at(CURVE, 0) is None and bandwidth_at(CURVE, math.nan) is None
    assert bandwidth_at(((64 * MIB, 3600.0),), 1) == 3600.0  # one point: everywhere


def test_the_cached_form_is_cleaned_sorted_and_none_stays_none():
    assert normalized(None) is None
    assert normalized([]) == ()
    messy = [[64 * MIB, 3600.0], [4 * MIB, 1500], "junk", [8 * MIB, 0.0],
             [16 * MIB, math.inf], [32 * MIB, None], [-1, 5.0]]
    assert normalized(messy) == ((4 * MIB, 1500.0), (64 * MIB, 3600.0))


def test_the_roof_is_the_curve_never_below_the_large_copy():
    assert memory_roof_gbps(H100, 64 * MIB) == pytest.approx(3600.0)
    assert memory_roof_gbps(H100, 4 * MIB) == 3000.0  # launch-bound copy: the large one
    assert memory_roof_gbps(H100, 8 << 30) == 3000.0
    old = {"bandwidth_gbps": 3000.0}
    assert memory_roof_gbps(old, 64 * MIB) == 3000.0  # no curve: as before
    assert memory_roof_gbps({**H100, "bandwidth_gbps": None}, 64 * MIB) == 3600.0
    assert memory_roof_gbps(H100, None) == 3000.0
    assert memory_roof_gbps({}, 64 * MIB) is None


def test_the_ladder_spans_the_l2_sizes():
    assert copy_curve.LADDER_BYTES[0] == 4 * MIB and copy_curve.LADDER_BYTES[-1] == 1 << 30
    assert all(b == 2 * a for a, b in itertools.pairwise(copy_curve.LADDER_BYTES))


# ------------------------------------------------------------------ the cache


def cpu_ceilings(curve) -> Ceilings:
    return Ceilings(key="k", device="CPU", bandwidth_gbps=30.0,
                    tflops={"fp32": 0.1, "fp16": 0.01, "bf16": 0.02}, measured=WHEN,
                    method="fake", unmeasured={"tf32": "cpu", "fp8": "cpu"},
                    bandwidth_curve=curve)


def test_the_curve_round_trips_through_the_cache():
    measured = cpu_ceilings(CURVE)
    back = Ceilings.from_dict(json.loads(json.dumps(measured.to_dict())))
    assert back == measured and back.bandwidth_curve == CURVE and not back.missing()


def test_a_cache_from_before_the_curve_loads_and_is_measured_again_once(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUBENCH_CACHE_DIR", str(tmp_path))
    env = {"device": "cpu", "cpu": "x86_64", "cpu_threads": 2, "torch": "2.13.0"}
    key = ceilings.device_key(env)
    old = {k: v for k, v in cpu_ceilings(None).to_dict().items() if k != "bandwidth_curve"}
    (ceilings.cache_dir() / f"{key}.json").write_text(json.dumps({**old, "key": key}))
    loaded = ceilings.load_cached(key)
    assert loaded.bandwidth_curve is None and loaded.missing() == ("copy_curve",)
    measures = []
    fresh = cpu_ceilings(((128 * MIB, 31.0),))
    monkeypatch.setattr(ceilings, "measure",
                        lambda device, key, name: measures.append(device) or fresh)
    assert ceilings.load_checked(env, probe=False) == (fresh, None)
    assert ceilings.load_checked(env, probe=False) == (fresh, None)
    assert measures == ["cpu"]  # once: the cache written back has the curve


def test_a_curve_that_failed_is_explained_not_measured_again():
    failed = Ceilings(**{**cpu_ceilings(()).to_dict(), "bandwidth_curve": (),
                         "unmeasured": {"tf32": "cpu", "fp8": "cpu",
                                        "copy_curve": "OutOfMemoryError: x"}})
    assert not failed.missing()
    assert not Ceilings(**{**failed.to_dict(), "bandwidth_curve": None}).missing()


def test_a_cpu_curve_is_its_large_copy(monkeypatch):
    monkeypatch.setattr(ceilings, "_median_s", lambda timer, fn: 1e-3)
    measured = ceilings.measure("cpu", "k", "CPU")
    assert measured.bandwidth_curve == ((2 * ceilings.CPU_COPY_BYTES, measured.bandwidth_gbps),)
    assert not measured.missing()


def test_the_ladder_code_times_each_size_with_the_timer_it_is_given(monkeypatch):
    """_copy_curve's own path on this CPU with a small ladder (the GPU's is 4 MiB-1 GiB):
    one positive point per size, bytes moved = twice the copy."""
    import torch

    from gpubench.timing.timers import make_timer

    monkeypatch.setattr(copy_curve, "LADDER_BYTES", (64 << 10, 128 << 10, 256 << 10))
    curve = ceilings._copy_curve(torch, make_timer("cpu", ceilings.CURVE_SETTINGS), "cpu")
    assert [moved for moved, _ in curve] == [64 << 10, 128 << 10, 256 << 10]
    assert all(gbps > 0 for _, gbps in curve)


# ------------------------------------------------------------------ the roof of a row


def layernorm(seconds: float) -> R.Result:
    """Layernorm 8192x1024 fp32: 33.5 MB read + 33.5 MB written (64 MiB), ~8 FLOP/element."""
    key = PointKey("layernorm", "triton", "float32", Shape({"M": 8192, "N": 1024}), "cold")
    return R.Result(key=key, kind="triton", status=R.OK, flops=8 * 8192 * 1024,
                    bytes_moved=2 * 8192 * 1024 * 4,
                    measurement=Measurement("cold", "fake", [seconds] * 20,
                                            target_rel_ci=0.005, stop_reason="converged"))


def test_a_row_near_the_l2_size_is_placed_under_the_copy_of_its_footprint():
    """113% of the large copy (the H100, 2026-11-25) is 94% of a copy as large as it."""
    row = layernorm(64 * MIB / (1.13 * 3000e9))
    roof = roof_position(row, H100)
    assert roof.bound == "memory" and roof.bandwidth_gbps == pytest.approx(3600.0)
    assert roof.fraction == pytest.approx(1.13 * 3000 / 3600)
    before = roof_position(row, {k: v for k, v in H100.items() if k != "bandwidth_curve"})
    assert before.fraction == pytest.approx(1.13) and before.bandwidth_gbps == 3000.0


def test_the_cell_and_caption_keep_their_format():
    (row,) = finish_group([layernorm(64 * MIB / (1.13 * 3000e9))], H100)
    _, rows, caption = table_layout([row])
    assert rows[0]["of roof"] == "94% mem"
    assert "of roof: share of the measured roofline" in caption
    back = R.Result.from_dict(json.loads(json.dumps(row.to_dict())))
    assert back.roof.bandwidth_gbps == pytest.approx(3600.0)


# ------------------------------------------------------------------ gpubench peak


def test_peak_prints_the_curve_under_the_headline():
    gpu = Ceilings(key="k", device="NVIDIA H100", bandwidth_gbps=3000.0,
                   tflops={"fp32": 52.0}, measured=WHEN, method="fake",
                   unmeasured={}, bandwidth_curve=CURVE)
    console = Console(record=True, width=160)
    console.print(curve_table(gpu))
    text = console.export_text()
    for needed in ("bytes moved", "4 MiB", "64 MiB", "1 GiB", "3600", "1.20x", "footprint"):
        assert needed in text, text
    assert curve_table(cpu_ceilings(((128 * MIB, 30.0),))) is None
    failed = Ceilings(**{**gpu.to_dict(), "bandwidth_curve": (),
                         "unmeasured": {"copy_curve": "OutOfMemoryError: x"}})
    console.print(curve_table(failed))
    assert "OutOfMemoryError" in console.export_text()
