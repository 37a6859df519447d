"""Derived numbers (rates, speedups, exit status) and the host timer's stopping rule."""

import pytest

from gpubench import results as R
from gpubench.timing import HostTimer, TimingSettings


def result(variant, status=R.OK, samples=(1e-3,), baseline=False):
    return R.Result(family="f", variant=variant, kind="torch", size=1, dtype="float32",
                    status=status, baseline=baseline, flops=2e9, bytes_moved=4e6,
                    samples_s=list(samples))


def test_rates_come_from_the_median_and_the_cost_model():
    r = result("a", samples=(1e-3, 2e-3, 9e-3))
    assert r.median_s == 2e-3
    assert r.tflops == pytest.approx(2e9 / 2e-3 / 1e12)
    assert r.gbps == pytest.approx(4e6 / 2e-3 / 1e9)


def test_speedups_only_for_passing_rows_against_a_passing_baseline():
    group = [result("base", samples=(2e-3,), baseline=True), result("fast", samples=(1e-3,)),
             result("wrong", status=R.FAIL, samples=(1e-4,))]
    R.apply_speedups(group)
    assert [r.speedup for r in group] == [1.0, 2.0, None]
    broken_base = [result("base", status=R.CRASHED, baseline=True), result("x")]
    R.apply_speedups(broken_base)
    assert broken_base[1].speedup is None


def test_exit_status_fails_on_broken_variants_but_not_on_skips():
    assert R.exit_status([result("a"), result("b", status=R.SKIPPED, samples=())])
    for status in (R.FAIL, R.ERROR, R.CRASHED, R.TIMEOUT, R.COMPILE_ERROR):
        assert not R.exit_status([result("a"), result("b", status=status, samples=())])


def test_csv_record_is_flat_and_json_keeps_raw_samples():
    r = result("a", samples=(1.0, 2.0, 3.0))
    record = r.to_record()
    assert all(not isinstance(v, list | dict) for v in record.values())
    assert record["median_s"] == 2.0 and record["samples"] == 3
    assert r.to_json()["samples_s"] == [1.0, 2.0, 3.0]


class FakeClock:
    """Each call of the timed function advances time by `step` seconds."""

    def __init__(self, step):
        self.now, self.step = 0.0, step

    def __call__(self):
        return self.now

    def tick(self):
        self.now += self.step


def test_host_timer_samples_until_budget_and_minimum_count():
    clock = FakeClock(0.01)
    settings = TimingSettings(warmup_s=0.05, budget_s=0.2, min_samples=5, max_samples=1000)
    timing = HostTimer(settings, clock).measure(clock.tick)
    assert timing.warmup_calls == 5  # 5 x 10 ms reach the 50 ms warmup
    assert len(timing.samples_s) == 20 and timing.stop_reason == "budget"
    assert all(s == pytest.approx(0.01) for s in timing.samples_s)


def test_host_timer_takes_the_minimum_count_of_slow_calls():
    clock = FakeClock(1.0)
    settings = TimingSettings(warmup_s=0.1, budget_s=0.2, min_samples=3)
    timing = HostTimer(settings, clock).measure(clock.tick)
    assert timing.warmup_calls == 1 and len(timing.samples_s) == 3


def test_host_timer_stops_at_max_samples():
    clock = FakeClock(1e-6)
    settings = TimingSettings(warmup_s=0.0, budget_s=10.0, min_samples=1, max_samples=50)
    timing = HostTimer(settings, clock).measure(clock.tick)
    assert len(timing.samples_s) == 50 and timing.stop_reason == "max_samples"
