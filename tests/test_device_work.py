"""Kernel count, kernel sum and span per call (records/device_work.py): the bookkeeping, on
synthetic timestamps and on real torch.profiler traces."""

from pathlib import Path

import pytest

from gpubench.records import result as R
from gpubench.records.point import PointKey
from gpubench.records.shape import Shape
from gpubench.timing.chrome_trace import calls_named, load_trace
from gpubench.timing.device_work import DeviceOp, DeviceWork, from_graph_nodes, from_timelines
from gpubench.timing.measurement import Measurement

TRACES = Path(__file__).parent / "fixtures" / "traces"


def op(kind, start, duration, name="k"):
    return DeviceOp(kind, name, start, duration)


def test_span_sum_and_counts_of_one_call():
    # memset 1 us, gap 2, kernel 10, gap 3, kernel 5: span 21, kernels 15. Outside kernels:
    # the memset alone; a gap before a kernel is its launch, which ncu counts as the kernel's.
    call = [op("memset", 0, 1), op("kernel", 3, 10, "a"), op("kernel", 16, 5, "b")]
    work = from_timelines([call])
    assert (work.kernels, work.other_ops, work.ops) == (2, 1, 3)
    assert work.kernel_us == pytest.approx(15)
    assert work.span_us == pytest.approx(21)
    assert work.outside_kernels_us == pytest.approx(1)
    assert work.names == ("a", "b")
    assert work.label() == "2+1m" and work.source == "cupti"


def test_busy_time_is_the_union_of_the_ops_without_idle_gaps():
    # kernel 0-10; on a second stream, kernel 4-14 (overlap counted once); idle 14-50 (the
    # host waited); memcpy 50-52: busy 14 + 2 = 16 of a 52 us span.
    call = [op("kernel", 0, 10), op("kernel", 4, 10), op("memcpy", 50, 2)]
    work = from_timelines([call])
    assert work.busy_us == pytest.approx(16) and work.span_us == pytest.approx(52)
    nested = [op("kernel", 0, 20), op("kernel", 5, 5)]  # wholly inside the first
    assert from_timelines([nested]).busy_us == pytest.approx(20)


def test_a_memset_between_kernels_takes_its_gap_with_it():
    # kernel 0-4, gap 2, memcpy 6-7, gap 2, kernel 9-14: outside = 2 + 1.
    call = [op("kernel", 0, 4), op("memcpy", 6, 1), op("kernel", 9, 5)]
    assert from_timelines([call]).outside_kernels_us == pytest.approx(3)


def test_medians_over_calls_and_start_order():
    calls = [[op("kernel", 10 * i + 5, 2, "b"), op("kernel", 10 * i, 4, "a")]
             for i in range(3)]
    calls.append([op("kernel", 100, 4, "a"), op("kernel", 140, 2, "b")])  # one slow gap
    work = from_timelines([*calls, []])  # a call the profiler lost is left out
    assert work.names == ("a", "b")
    assert work.span_us == pytest.approx(7)  # median of 7, 7, 7, 42
    assert work.kernel_us == pytest.approx(6)


def test_kernel_sum_of_an_event_timed_span_takes_off_what_lies_outside_kernels():
    work = DeviceWork(kernels=7, other_ops=5, kernel_us=91.0, span_us=107.7, source="cupti",
                      outside_us=12.0)
    assert work.kernel_sum_s(110e-6) == pytest.approx(98e-6)
    assert work.span_s(98e-6) == pytest.approx(110e-6)
    assert work.kernel_sum_s(None) is None


def test_a_single_kernel_is_its_own_sum():
    work = from_graph_nodes(["kernel", "other"])
    assert work.single and work.source == "graph" and work.kernel_us is None
    assert work.kernel_sum_s(5e-6) == 5e-6


def test_graph_counts():
    work = from_graph_nodes(["memset", "kernel", "kernel", "memcpy", "other"])
    assert (work.kernels, work.other_ops) == (2, 2)
    assert not work.single


def test_recorded_two_kernel_calls():
    """A real trace (H100): 5 calls of matmul + add, each after a flush outside its range."""
    calls = calls_named(load_trace(TRACES / "cupti_calls_trace.json.gz"), "gpubench::call")
    work = from_timelines([c.timeline for c in calls])
    assert work.kernels == 2 and work.other_ops == 0
    assert work.span_us > work.kernel_us > 0
    assert work.kernel_us == pytest.approx(sorted(c.device_us for c in calls)[2])
    assert not any("reduce" in name for name in work.names)  # the flush stayed out


@pytest.mark.skipif(not (TRACES / "sort_calls_trace.json.gz").exists(),
                    reason="sort trace not recorded")
def test_recorded_sort_calls_have_memsets_and_gaps():
    """A real trace (H200): torch.sort of 2^20 floats, 7 kernels plus memsets and a copy."""
    calls = calls_named(load_trace(TRACES / "sort_calls_trace.json.gz"), "gpubench::work")
    work = from_timelines([c.timeline for c in calls])
    assert work.kernels >= 5 and work.other_ops >= 1
    assert "DeviceRadixSortOnesweepKernel" in work.names
    assert work.outside_kernels_us > 0.05 * work.span_us


def result(mode, work, median=100e-6):
    measurement = Measurement(mode, "m", [median] * 10, stop_reason="converged")
    key = PointKey("sort", "torch", "float32", Shape({"n": 1 << 20}), mode)
    return R.Result(key=key, kind="torch", status=R.OK, measurement=measurement,
                    device_work=work)


def test_result_says_which_time_its_median_is():
    work = DeviceWork(kernels=7, other_ops=5, kernel_us=90.0, span_us=110.0, source="cupti",
                      outside_us=20.0)
    cold, cupti = result("cold", work), result("cupti", work, 90e-6)
    assert cold.timed_quantity == "span" and cupti.timed_quantity == "sum"
    assert cold.span_s == pytest.approx(100e-6)
    assert cold.kernel_sum_s == pytest.approx(80e-6)
    assert cupti.kernel_sum_s == pytest.approx(90e-6)
    assert cupti.span_s == pytest.approx(110e-6)
    wall = result("wall", work)
    assert wall.kernel_sum_s is None and wall.span_s is None


def test_result_round_trip_keeps_device_work_and_ncu_check():
    work = DeviceWork(kernels=2, other_ops=1, kernel_us=9.0, span_us=12.0, source="cupti",
                      names=("a", "b"), outside_us=3.0)
    row = result("cold", work).with_derived(ncu_check={"ncu_s": 9.5e-5, "deviation": 0.05})
    back = R.Result.from_dict(row.to_dict())
    assert back.device_work == work
    assert back.ncu_check == row.ncu_check
    record = back.to_record()
    assert record["kernels_per_call"] == 2 and record["other_ops_per_call"] == 1
    assert record["kernel_sum_s"] == pytest.approx(100e-6 - 3e-6)
    assert record["vs_ncu"] == 0.05
    assert set(record) - set(row.shape) <= R.RESERVED_COLUMNS


def test_the_table_shows_the_count_and_the_quantity_only_when_above_one():
    from rich.console import Console

    from gpubench.report.table import group_table

    def render(rows):
        console = Console(width=200, color_system=None)
        with console.capture() as captured:
            console.print(group_table(rows))
        return captured.get()

    multi = DeviceWork(kernels=7, other_ops=5, kernel_us=90.0, span_us=110.0, source="cupti")
    text = render([result("cold", multi)])
    assert "kernels" in text and "7+5m span" in text and "gaps included" in text
    single = render([result("cold", from_graph_nodes(["kernel"]))])
    assert "kernels" not in single
