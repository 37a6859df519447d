"""--ncu-check's arithmetic and verdicts (gpubench/analysis/ncu_agreement.py), and its CPU path."""

from pathlib import Path

import pytest

from gpubench.analysis.ncu_agreement import attach, check_result, ncu_times, target_for
from gpubench.records import result as R
from gpubench.records.point import PointKey
from gpubench.records.shape import Shape
from gpubench.timing.clocks import POWER_CAP_BIT, ClockReport
from gpubench.timing.device_work import DeviceWork, from_graph_nodes
from gpubench.timing.measurement import Measurement
from gpubench.tools.ncu.check import check_label

FIXTURES = Path(__file__).parent / "fixtures" / "ncu_check"


def result(median, mode="cold", work=None, clocks=None, variant="cuda"):
    measurement = Measurement(mode, "m", [median] * 20, stop_reason="converged", clocks=clocks)
    key = PointKey("square", variant, "float32", Shape({"n": 1 << 20}), mode)
    return R.Result(key=key, kind="cuda", status=R.OK, measurement=measurement,
                    device_work=work or from_graph_nodes(["kernel"]))


def test_per_call_sums_of_multi_kernel_calls():
    # 5 calls of a 2-kernel op (3 us + 1 us), one call's first kernel slow (9 us).
    launches = [("gb_check:0", d * 1e-6) for d in (3, 1, 3, 1, 9, 1, 3, 1, 3, 1)]
    launches += [("gb_check:1", d * 1e-6) for d in (50, 51, 49, 50, 52)]
    times = ncu_times(launches, calls=5)
    assert times["gb_check:0"].kernels == 2
    assert times["gb_check:0"].ncu_s == pytest.approx(4e-6)  # median, not the mean
    assert times["gb_check:1"].kernels == 1
    assert times["gb_check:1"].ncu_s == pytest.approx(50e-6)


def test_a_kernel_count_that_varies_between_calls_is_averaged():
    times = ncu_times([("x", 1e-6)] * 7, calls=5)
    assert times["x"].ncu_s == pytest.approx(7e-6 / 5)


@pytest.mark.parametrize("ncu_s, target", [(50e-6, 0.02), (20e-6, 0.02), (10e-6, 0.05),
                                           (3e-6, 0.05), (2.5e-6, None)])
def test_targets_by_length(ncu_s, target):
    assert target_for(ncu_s) == target


def test_within_target_no_warning():
    times = ncu_times([("l", 50e-6)] * 5)
    checked = check_result(result(50.5e-6), times["l"])
    assert checked.ncu_check["deviation"] == pytest.approx(0.01)
    assert checked.ncu_check["within"] is True
    assert not checked.warnings


def test_a_miss_warns_with_its_cause():
    times = ncu_times([("l", 5e-6)] * 5)
    checked = check_result(result(5.5e-6), times["l"])  # +10%, 0.5 us apart
    assert checked.ncu_check["within"] is False
    (warning,) = checked.warnings
    assert warning.code == "ncu_deviation" and "+10.0%" in warning.message
    assert "not explained" in warning.remedy  # 0.5 us is beyond the fixed-cost spread


def test_causes_most_specific_first():
    ncu = ncu_times([("l", 100e-6)] * 5)["l"]
    capped = check_result(result(110e-6, clocks=ClockReport(
        reasons_mask=POWER_CAP_BIT, sm_mhz_min=1680, sm_mhz_max_possible=1980)), ncu)
    assert "power-capped" in capped.ncu_check["cause"]
    # a cap that held the clock at 1965 of 1980 MHz explains no 10%
    barely = check_result(result(110e-6, clocks=ClockReport(
        reasons_mask=POWER_CAP_BIT, sm_mhz_min=1965, sm_mhz_max_possible=1980)), ncu)
    assert "power-capped" not in barely.ncu_check["cause"]
    other = check_result(result(110e-6, work=DeviceWork(kernels=3)), ncu)
    assert "ncu saw 1 kernel" in other.ncu_check["cause"]
    small = check_result(result(2.6e-6), ncu_times([("l", 2.4e-6)] * 5)["l"])
    assert small.ncu_check["target"] is None and "launch-bound" in small.ncu_check["cause"]


def test_multi_kernel_calls_compare_the_kernel_sum():
    # span 110 us; CUPTI saw 15 us outside kernels: kernel sum 95 us against ncu's 96 us.
    work = DeviceWork(kernels=7, other_ops=5, kernel_us=91.0, span_us=106.0, source="cupti",
                      outside_us=15.0)
    ncu = ncu_times([("l", 96e-6 / 7)] * 35)["l"]
    checked = check_result(result(110e-6, work=work), ncu)
    assert checked.ncu_check["compared"] == "kernel sum"
    assert checked.ncu_check["deviation"] == pytest.approx(95 / 96 - 1)
    assert checked.ncu_check["within"] is True


def test_warm_and_wall_are_shown_not_judged():
    ncu = ncu_times([("l", 50e-6)] * 5)["l"]
    warm = check_result(result(60e-6, mode="warm"), ncu)
    assert warm.ncu_check["judged"] is False and warm.ncu_check["within"] is None
    assert not warm.warnings


def test_attach_matches_points_and_leaves_failures_alone():
    rows = [result(50e-6), result(60e-6, variant="torch")]
    failed = R.Result(key=PointKey("square", "triton", "float32", Shape({"n": 1 << 20}),
                                   "cold"), kind="triton", status=R.FAIL)
    labels = {"gb_check:0": ("square", "cuda", "float32", "n=1048576"),
              "gb_check:1": ("square", "triton", "float32", "n=1048576")}
    times = ncu_times([("gb_check:0", 50e-6)] * 5 + [("gb_check:1", 40e-6)] * 5)
    out = attach([*rows, failed], times, labels)
    assert out[0].ncu_check is not None
    assert out[1].ncu_check is None  # torch: not profiled
    assert out[2].ncu_check is None  # failed: no time to compare


def test_check_label_any_domain_innermost_first():
    assert check_label({"gpubench": ("gb_check:3",)}) == "gb_check:3"
    assert check_label({"<default>": ("outer", "gb_check:1")}) == "gb_check:1"
    assert check_label({"gpubench": ("gb_profile",)}) is None


def test_recorded_ncu_check_report_reads_back(tmp_path):
    """A real report of `gpubench run square --sizes 2^20,2^24 --ncu-check` on an H200
    (duration only; the 2^20 group): three variants, 5 calls each, one kernel a call."""
    pytest.importorskip("ncu_report")
    import gzip
    import shutil

    from gpubench.tools.ncu.report import load_profiles

    report = tmp_path / "check.ncu-rep"
    with gzip.open(FIXTURES / "ncu-check-square.ncu-rep.gz", "rb") as src, \
            open(report, "wb") as dst:
        shutil.copyfileobj(src, dst)
    launches = [(label, p.duration_ns * 1e-9) for p in load_profiles(report)
                if p.duration_ns and (label := check_label(p.nvtx))]
    times = ncu_times(launches)
    assert sorted(times) == ["gb_check:0", "gb_check:1", "gb_check:2"]
    assert all(t.kernels == 1 and t.calls == 5 for t in times.values())
    assert all(2e-6 < t.ncu_s < 10e-6 for t in times.values())  # 2^20 floats: ~4-5 us
