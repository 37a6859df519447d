"""The Chrome-trace reader behind the cupti timer, on a trace torch.profiler wrote on an H100."""

import pytest

from conftest import FIXTURES
from gpubench.timing.chrome_trace import calls_named, device_events, load_trace

TRACE = FIXTURES / "traces" / "cupti_calls_trace.json.gz"  # scripts/record_trace_fixture.py


def test_each_call_sums_its_own_kernels_and_leaves_the_flush_out():
    trace = load_trace(TRACE)
    calls = calls_named(trace, "gpubench::call")
    assert len(calls) == 5
    assert all(call.launches == 2 for call in calls)  # a matmul and an add per call
    kernels = [k for k in device_events(trace) if k["cat"] == "kernel"]
    gemms = [k["dur"] for k in kernels if "gemm" in k["name"]]
    adds = [k["dur"] for k in kernels if "elementwise" in k["name"]]
    flushes = [k for k in kernels if "reduce_kernel" in k["name"]]
    assert len(gemms) == len(adds) == len(flushes) == 5
    for call, gemm, add in zip(calls, gemms, adds, strict=True):
        assert call.device_us == pytest.approx(gemm + add)
    total_in_calls = sum(call.device_us for call in calls)
    assert total_in_calls < sum(k["dur"] for k in kernels)  # the flushes were not counted


def test_launch_gap_is_measured_from_the_host_range_to_the_first_kernel():
    calls = calls_named(load_trace(TRACE), "gpubench::call")
    assert all(call.launch_gap_us is not None and call.launch_gap_us > 0 for call in calls)


def test_unknown_prefix_finds_nothing():
    assert calls_named(load_trace(TRACE), "nothing::here") == []


GPUBENCH_TRACE = FIXTURES / "traces" / "gpubench_trace_matmul_1024.json.gz"


def test_gpubench_trace_holds_a_labelled_region_per_variant_with_its_kernels():
    from gpubench.timing.chrome_trace import event_counts, variant_traces

    trace = load_trace(GPUBENCH_TRACE)
    regions = variant_traces(trace, "gpubench/", "gpubench::call")
    assert [r.label for r in regions] == [f"matmul/{v}/1024/float32"
                                          for v in ("torch", "naive", "tiled", "triton")]
    by_label = {r.label.split("/")[1]: r for r in regions}
    assert all(len(r.calls) == 5 and r.launches_per_call == 1 for r in regions)
    assert "matmul_naive_kernel" in by_label["naive"].top_kernels()[0][0]
    assert "gemm" in by_label["torch"].top_kernels()[0][0]
    # the naive kernel is slower than the tiled one, which is slower than cuBLAS
    assert by_label["naive"].device_us_per_call > by_label["tiled"].device_us_per_call \
        > by_label["torch"].device_us_per_call
    assert all(r.launch_gap_us and r.launch_gap_us > 0 for r in regions)
    counts = event_counts(trace)
    flushes = [e for e in device_events(trace) if "reduce_kernel" in e.get("name", "")]
    assert counts["kernels"] == 20 + len(flushes)  # 4 variants x 5 calls, plus the flushes
