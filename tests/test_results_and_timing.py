"""Derived numbers (rates, speedups, roofline, warnings), the stopping rule and the host timer."""

import math
import random

import pytest

from gpubench.records import result as R
from gpubench.records.build_info import BuildInfo
from gpubench.records.point import PointKey
from gpubench.records.shape import Shape
from gpubench.timing import roofline
from gpubench.timing.check_result import CheckResult
from gpubench.timing.clocks import ClockReport
from gpubench.timing.measurement import Measurement
from gpubench.timing.stopping import TimingSettings, next_batch_size, relative_ci, stop_reason
from gpubench.timing.timers.base import sample_until_stopped
from gpubench.timing.timers.host import HostTimer
from gpubench.verdicts import noise
from gpubench.verdicts.derive import finish_group, speedups


def result(variant, status=R.OK, samples=(1e-3,), baseline=False, mode="cold"):
    measurement = Measurement(mode, "fake", samples, target_rel_ci=0.005) if samples else None
    return R.Result(key=PointKey("f", variant, "float32", Shape({"n": 1}), mode), kind="torch",
                    status=status, baseline=baseline, flops=2e9, bytes_moved=4e6,
                    measurement=measurement)


def test_rates_come_from_the_median_and_the_cost_model():
    r = result("a", samples=(1e-3, 2e-3, 9e-3))
    assert r.median_s == 2e-3
    assert r.tflops == pytest.approx(2e9 / 2e-3 / 1e12)
    assert r.gbps == pytest.approx(4e6 / 2e-3 / 1e9)


def test_speedups_only_for_passing_rows_against_a_passing_baseline_of_the_same_mode():
    group = [result("base", samples=(2e-3,), baseline=True), result("fast", samples=(1e-3,)),
             result("wrong", status=R.FAIL, samples=(1e-4,)),
             result("base", samples=(4e-3,), baseline=True, mode="wall"),
             result("fast", samples=(1e-3,), mode="wall")]
    assert speedups(group) == [1.0, 2.0, None, 1.0, 4.0]
    broken_base = [result("base", status=R.CRASHED, baseline=True), result("x")]
    assert speedups(broken_base)[1] is None


def test_exit_status_fails_on_broken_variants_but_not_on_skips():
    assert R.exit_status([result("a"), result("b", status=R.SKIPPED, samples=())])
    for status in (R.FAIL, R.ERROR, R.CRASHED, R.TIMEOUT, R.BUILD_ERROR):
        assert not R.exit_status([result("a"), result("b", status=status, samples=())])


def test_csv_record_is_flat_and_json_keeps_raw_samples():
    r = result("a", samples=(1.0, 2.0, 3.0))
    record = r.to_record()
    assert all(not isinstance(v, list | dict) for v in record.values())
    assert record["median_s"] == 2.0 and record["samples"] == 3
    assert record["n"] == 1 and record["shape"] == "n=1"  # one column per axis
    assert r.to_dict()["measurement"]["samples_s"] == [1.0, 2.0, 3.0]


def test_roofline_position_by_hand():
    # H100-like ceilings: 3000 GB/s, 50 TFLOP/s -> ridge at 50e12 / 3e12 = 16.7 FLOP/byte.
    memory = roofline.position(flops=1e6, bytes_moved=8e6, seconds=4e-6,
                               bandwidth_gbps=3000, peak_tflops=50)
    assert memory.bound == "memory" and memory.intensity == 0.125
    assert memory.fraction == pytest.approx(8e6 / 4e-6 / 3e12)  # 2 TB/s of 3 -> 0.667
    compute = roofline.position(flops=2 * 4096**3, bytes_moved=3 * 4096**2 * 4, seconds=2.75e-3,
                                bandwidth_gbps=3000, peak_tflops=50)
    assert compute.bound == "compute"
    assert compute.fraction == pytest.approx(2 * 4096**3 / 2.75e-3 / 50e12)


def test_finish_group_places_rows_and_warns_about_launch_bound_calls():
    ceilings = {"bandwidth_gbps": 3000.0, "tflops": {"float32": 500.0}}
    cold, wall = finish_group([result("k", samples=[5e-6] * 20),
                               result("k", samples=[30e-6] * 20, mode="wall")], ceilings)
    # 2e9 FLOP over 4e6 bytes = 500 FLOP/byte, past the 167 ridge: compute-bound
    assert cold.roof.bound == "compute"
    assert cold.roof.fraction == pytest.approx(2e9 / 5e-6 / 500e12)
    assert [w.code for w in wall.warnings] == ["launch_bound"]
    assert not cold.warnings


def test_results_beyond_the_roofline_are_suspect_and_get_no_speedup():
    ceilings = {"bandwidth_gbps": 3000.0, "tflops": {"float32": 500.0}}
    base, honest, forged = finish_group([
        result("base", samples=[10e-6] * 20, baseline=True),  # 0.4 of the roof
        result("honest", samples=[5e-6] * 20),  # 0.8 of the roof
        result("forged", samples=[1e-9] * 20)],  # 1 ns: 4000x the roof
        ceilings)
    assert base.speedup == 1.0 and honest.speedup == 2.0 and not honest.warnings
    assert forged.speedup is None and forged.warnings[0].code == "suspect"
    assert "no speedup" in forged.warnings[0].remedy
    # a suspect baseline leaves the whole group without speedups
    rows = finish_group([result("base", samples=[1e-9] * 20, baseline=True),
                         result("honest", samples=[5e-6] * 20)], ceilings)
    assert [r.speedup for r in rows] == [None, None]
    # warm mode may beat the DRAM roof from L2 (2x here), cold may not
    warm = finish_group([result("w", samples=[2e-6] * 20, mode="warm")], ceilings)[0]
    cold = finish_group([result("c", samples=[2e-6] * 20)], ceilings)[0]
    assert "suspect" not in {w.code for w in warm.warnings}
    assert cold.warnings[0].code == "suspect"
    # under 3 us a kernel is mostly launch: said, whatever else is
    assert "short_kernel" in {w.code for w in warm.warnings}


def test_noise_warnings_say_what_to_do():
    noisy = result("n", samples=[1.0, 1.0, 1.2, 1.4, 1.0, 1.3, 1.1, 1.0, 1.25, 1.05]).summary
    codes = [w.code for w in noise.assess(noisy, "max_time", 0.005, None, "cold")]
    assert codes[:2] == ["noisy", "not_converged"]
    assert all(w.remedy for w in noise.assess(noisy, "max_time", 0.005, None, "cold"))
    throttled = ClockReport(reasons_mask=0x20, sm_mhz_min=1400, sm_mhz_max=1980)
    warnings = noise.clock_warnings(throttled)
    assert [w.code for w in warnings] == ["throttled"]
    assert "sw_thermal_slowdown" in warnings[0].message


# ---------------------------------------------------------------- the stopping rule


class FakeGpu:
    """A seeded fake timer: log-normal samples around `median`, each costing `step` seconds
    of a fake clock, so the stopping rule runs deterministically without a GPU."""

    def __init__(self, seed: int, median: float, sigma: float, step: float = 1e-4):
        self.rng = random.Random(seed)
        self.median, self.sigma, self.step = median, sigma, step
        self.now = 0.0

    def clock(self) -> float:
        return self.now

    def take(self, count: int) -> list[float]:
        self.now += count * self.step
        return [self.median * math.exp(self.rng.gauss(0, self.sigma)) for _ in range(count)]


def test_quiet_kernel_converges_after_the_minimum_time():
    gpu = FakeGpu(seed=1, median=10e-6, sigma=0.01)
    settings = TimingSettings(min_samples=10, min_time_s=0.05, max_time_s=0.5, target_rel_ci=0.005)
    samples, reason, spent = sample_until_stopped(gpu.take, settings, gpu.clock)
    assert reason == "converged"
    assert spent >= 0.05  # never before the minimum time
    assert relative_ci(samples) <= 0.005
    assert len(samples) == pytest.approx(spent / 1e-4, rel=0.01)


def test_noisy_kernel_stops_at_max_time_with_a_wider_interval():
    gpu = FakeGpu(seed=2, median=10e-6, sigma=0.5, step=1e-3)
    settings = TimingSettings(min_samples=10, min_time_s=0.05, max_time_s=0.2, target_rel_ci=0.001)
    samples, reason, spent = sample_until_stopped(gpu.take, settings, gpu.clock)
    assert reason == "max_time" and 0.2 <= spent < 0.25
    assert relative_ci(samples) > 0.001


def test_slow_kernel_still_gets_the_minimum_sample_count():
    gpu = FakeGpu(seed=3, median=0.1, sigma=0.001, step=0.1)
    settings = TimingSettings(min_samples=10, min_time_s=0.05, max_time_s=0.5)
    samples, reason, _ = sample_until_stopped(gpu.take, settings, gpu.clock)
    assert len(samples) >= 10 and reason in ("converged", "max_time")


def test_stop_reasons_by_hand():
    settings = TimingSettings(min_samples=3, max_samples=5, min_time_s=1.0, max_time_s=2.0,
                              target_rel_ci=0.01)
    assert stop_reason([1.0, 1.0], 5.0, settings) is None  # below min_samples, whatever the time
    assert stop_reason([1.0] * 4, 0.5, settings) is None  # before min_time
    assert stop_reason([1.0] * 4, 1.5, settings) == "converged"  # zero spread
    assert stop_reason([1.0, 2.0, 3.0, 9.0], 2.5, settings) == "max_time"
    assert stop_reason([1.0, 2.0, 3.0, 4.0, 9.0], 0.1, settings) == "max_samples"


def test_batches_aim_at_20_ms_between_checks():
    settings = TimingSettings(min_samples=10, max_samples=10_000)
    assert next_batch_size(None, 0, settings) == 10
    assert next_batch_size(1e-4, 100, settings) == 200
    assert next_batch_size(1.0, 100, settings) == 1
    assert next_batch_size(1e-9, 9_990, settings) == 10


class FakeClock:
    """Each call of the timed function advances time by `step` seconds."""

    def __init__(self, step):
        self.now, self.step = 0.0, step

    def __call__(self):
        return self.now

    def tick(self):
        self.now += self.step


def test_host_timer_warms_up_by_time_then_samples_by_the_rule():
    clock = FakeClock(0.01)
    settings = TimingSettings(warmup_s=0.05, min_samples=5, min_time_s=0.1, max_time_s=1.0)
    timing = HostTimer(settings, clock).measure(clock.tick)
    assert timing.warmup_calls >= 5  # 5 x 10 ms reach the 50 ms warmup
    # 20 ms batches of 10 ms calls after a first batch of 5: stops at the first check
    # past min_time (0.1 s), i.e. 10 or 11 samples depending on float rounding.
    assert timing.stop_reason == "converged" and len(timing.samples_s) in (10, 11)
    assert timing.sampling_s >= 0.1
    assert all(s == pytest.approx(0.01) for s in timing.samples_s)


def test_cpu_timings_get_their_own_noise_and_roof_warnings():
    """Issue 12: an IQR of 13846% and 719-1171% of the roof drew no warning on a CPU."""
    # memory-bound here (the compute roof is far away): 4e6 bytes in 0.1 ms = 40 GB/s, 4x a
    # 10 GB/s DRAM roof: cache-fast, not forged; 0.5 ms is within the roof: nothing said
    ceilings = {"bandwidth_gbps": 10.0, "tflops": {"float32": 1000.0}}
    wild = [1e-6, 1e-6, 1e-6, 2e-4, 3e-4, 1e-6, 2e-4, 1e-6, 3e-4, 1e-6, 2e-4, 2e-4]
    noisy = finish_group([result("x", samples=wild, mode="cpu")], None)[0]
    assert "noisy" in {w.code for w in noisy.warnings}
    quiet = finish_group([result("x", samples=[1e-3 * (1 + 0.01 * i) for i in range(12)],
                                 mode="cpu")], None)[0]
    assert "noisy" not in {w.code for w in quiet.warnings}
    cached = finish_group([result("c", samples=[1e-4] * 20, mode="cpu")], ceilings)[0]
    assert cached.roof.fraction == pytest.approx(4.0)
    assert {w.code for w in cached.warnings} == {"above_dram_roof"}
    assert cached.speedup is None or cached.speedup == 1.0  # no baseline here; not suspect
    within = finish_group([result("c", samples=[5e-4] * 20, mode="cpu")], ceilings)[0]
    assert not within.warnings
    on_gpu = finish_group([result("c", samples=[1e-4] * 20, mode="cold")], ceilings)[0]
    assert "above_dram_roof" not in {w.code for w in on_gpu.warnings}  # a GPU's 4x is suspect


def test_a_worker_result_round_trips_through_its_dict_and_a_malformed_one_is_refused():
    from gpubench.records.worker_result import MalformedWorkerResult, WorkerResult
    from gpubench.timing.device_work import DeviceWork

    sent = WorkerResult(R.OK, build=BuildInfo(compile_s=1.5, cached=False), device="cuda",
                        check=CheckResult(True, max_abs_err=0.0, mismatches=0),
                        measurements={"cold": Measurement("cold", "events", (1e-3, 2e-3))},
                        device_work=DeviceWork(kernels=2, other_ops=0, names=("a", "b")))
    assert WorkerResult.from_dict(sent.to_dict()) == sent
    failed = WorkerResult(R.BUILD_ERROR, "nvcc: error", build=BuildInfo(log="/tmp/build.log"))
    assert WorkerResult.from_dict(failed.to_dict()) == failed
    assert WorkerResult.from_dict({"status": "crashed", "error": "CUDA error"}).error
    for malformed, why in [([], "must be a dict"), ({"status": "ok", "timings": {}}, "timings"),
                           ({"error": "x"}, "status must be one of"),
                           ({"status": "passed"}, "'passed'"),
                           ({"status": "ok", "build": [1]}, "build must be a dict"),
                           ({"status": "ok", "measurements": {"cold": {}}}, "cannot be read")]:
        with pytest.raises(MalformedWorkerResult, match=why):
            WorkerResult.from_dict(malformed)


def test_samples_below_the_empty_window_are_a_reason_not_a_malformed_result():
    """Issue 52 item 9: in graph mode a variant that launches (next to) nothing timed
    below the empty graph, and its negative samples made the whole result unreadable
    ('a timing sample is -7.5e-07 s'), an ERROR with gpubench's internal reason."""
    from gpubench.timing.measurement import Measurement

    timed = Measurement("graph", samples_s=[2e-6, -7.5e-7, 1e-7])
    reason = timed.below_the_window()
    assert "1 of 3 graph samples timed below the empty window" in reason
    assert "-750 ns" in reason
    kept = timed.at_least_zero()
    assert kept.samples_s == (2e-6, 0.0, 1e-7)
    assert Measurement.from_dict(kept.to_dict()).samples_s == kept.samples_s
    assert Measurement("cold", samples_s=[1e-6]).below_the_window() is None
