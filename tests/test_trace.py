"""`gpubench trace` on the CPU path: a valid Chrome trace with gpubench's regions."""

import json

import pytest

from conftest import TEST_KERNELS
from gpubench.timing.chrome_trace import event_counts, load_trace, variant_traces
from gpubench.tools.trace_view import short_kernel_name

pytestmark = pytest.mark.slow


def test_trace_writes_a_chrome_trace_with_a_region_per_variant(gpubench):
    done = gpubench("trace", "vector_add", "--sizes", "1024", "--variants", "torch,triton",
                    "--device", "cpu", "--out", "tr")
    assert done.code == 0, done.output
    trace = json.loads((done.cwd / "tr" / "trace.json").read_text())
    assert isinstance(trace["traceEvents"], list)
    regions = variant_traces(trace, "gpubench/", "gpubench::call")
    assert [r.label for r in regions] == ["vector_add/torch/n=1024/float32",
                                          "vector_add/triton/n=1024/float32"]
    assert all(len(r.calls) == 5 for r in regions)  # the active step's iterations
    assert "ui.perfetto.dev" in done.stdout and "gpubench spans" in done.stdout


def test_run_with_trace_and_gzip(gpubench):
    done = gpubench("trace", "square", "--sizes", "512", "--variants", "torch", "--gzip",
                    "--iterations", "2", "--out", "tr")
    assert done.code == 0, done.output
    trace = load_trace(done.cwd / "tr" / "trace.json.gz")
    assert event_counts(trace)["gpubench spans"] == 1 + 2


def test_run_trace_flag_traces_the_passing_variants(gpubench):
    done = gpubench("run", "square", "--sizes", "256", "--variants", "torch", "--trace",
                    "--max-time", "20", "--warmup", "5", "--out", "run")
    assert done.code == 0, done.output
    assert (done.cwd / "run" / "trace.json").is_file()


def test_short_kernel_names():
    name = "void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>>(int)"
    assert short_kernel_name(name) == "at::native::vectorized_elementwise_kernel"
    assert short_kernel_name("square_kernel(const float *, float *, int)") == "square_kernel"


def test_a_crashing_variant_is_left_out_and_the_others_are_traced(gpubench):
    done = gpubench("trace", "faulty", "--kernels-dir", str(TEST_KERNELS), "--variants",
                    "segfault,after_crash", "--device", "cpu", "--out", "tr")
    assert done.code == 1, done.output
    regions = variant_traces(json.loads((done.cwd / "tr" / "trace.json").read_text()),
                             "gpubench/", "gpubench::call")
    assert [r.label for r in regions] == ["faulty/torch/n=4096/float32",
                                          "faulty/after_crash/n=4096/float32"]
    assert "faulty/segfault/n=4096/float32: left out of the trace, crashed" in done.stdout
    assert "Traceback" not in done.output
