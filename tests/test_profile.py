"""`gpubench profile`: the trace analysis on a real H200 training trace, its arithmetic on
small cases, and the command end to end on CPU programs (a CPU-only script, one that
raises, one that hangs, one that is not Python)."""

import gzip
import json
import os
import time

import pytest

from conftest import FIXTURES, REPO
from gpubench.store.folder import read_run
from gpubench.tools.profile import kernels as K

GPT = FIXTURES / "profile" / "gpt_train_h200_trace.json.gz"
PROGRAMS = REPO / "tests" / "programs"


@pytest.fixture(scope="module")
def gpt() -> dict:
    return json.loads(gzip.decompress(GPT.read_bytes()))


# ---------------------------------------------------------------- the H200 training trace


def test_a_training_step_by_kernel_matmuls_first_then_the_rest(gpt):
    profile = K.analyse(gpt)
    assert profile.device and profile.region == "train" and profile.region_instances == 5
    top = profile.groups[0]
    assert top.origin == "cuBLAS" and "gemm" in top.name and top.calls % 5 == 0
    names = " ".join(K.compact_name(g.name) for g in profile.groups)
    for op in ("gemm", "softmax_warp_forward", "masked_fill_kernel", "layer_norm",
               "multi_tensor_apply_kernel"):
        assert op in names, op  # matmuls, attention's mask and softmax, layernorm, AdamW
    adamw = [g for g in profile.groups if g.name.startswith("at::native::{anon}::multi_tensor")]
    assert adamw and all(g.ranges[0] == "Optimizer.step#AdamW.step" for g in adamw)
    assert sum(g.share for g in profile.groups) == pytest.approx(1.0)
    assert profile.kernel_us <= profile.busy_us <= profile.window_us  # one stream


def test_skipping_instances_of_the_region_drops_their_kernels(gpt):
    all_five, last_two = K.analyse(gpt, "train"), K.analyse(gpt, "train", skip_first=3)
    assert (last_two.region_instances, last_two.skipped_instances) == (5, 3)
    calls = {g.name: g.calls for g in all_five.groups}
    for group in last_two.groups:
        assert group.calls * 5 == calls[group.name] * 2  # the same work each step
    whole = K.analyse(gpt, "no-such-range")
    assert whole.notes == ("no range named 'no-such-range' in the trace",)


def test_ncu_is_pointed_at_the_first_launch_inside_the_region(gpt):
    profile = K.analyse(gpt)
    (first,) = K.representative_launches(gpt, profile.groups[:1], "train", 0)
    events = sorted((e for e in K.events_of(gpt) if e.category == "kernel"),
                    key=lambda e: e.start_us)
    same = [e for e in events if K.function_name(K.short_name(e.name)) == first.function]
    # Three warm-up steps ran the same GEMM before the region began.
    assert first.skip > 0 and K.short_name(same[first.skip].name) == profile.groups[0].name
    launch = K.launches(K.events_of(gpt))[same[first.skip].correlation]
    (train,) = [r for r in K.events_of(gpt) if r.name == "gpubench.region:train"][:1]
    assert launch.start_us >= train.start_us


# ---------------------------------------------------------------- the arithmetic


def event(start, duration, name="k", category="kernel"):
    return K.Event(category, name, float(start), float(duration))


def test_busy_time_is_the_union_of_overlapping_events_and_gaps_are_the_holes():
    events = [event(0, 10), event(5, 10), event(40, 5), event(100, 1)]
    assert K.union_length(events) == 15 + 5 + 1
    gaps = K.gaps(events, minimum_us=10)
    assert [(g.start_us, g.duration_us) for g in gaps] == [(45, 55), (15, 25)]
    assert K.gaps(events, minimum_us=60) == []


def test_names_origins_and_compact_forms():
    assert K.origin("ampere_sgemm_128x64_nn") == "cuBLAS"
    assert K.origin("triton_poi_fused_add_0") == "Triton"
    assert K.origin("void at::native::vectorized_elementwise_kernel<4, F>(int, F)") == "PyTorch"
    assert K.origin("void my_kernel<float>(float const*, float*)") == "CUDA C++"
    long = ("at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl_nocast<"
            "at::native::masked_fill_kernel(at::TensorIterator&)::{lambda(float)#1}>")
    assert K.compact_name(long) == "elementwise_kernel<masked_fill_kernel>"
    assert K.short_name("void at::native::(anonymous namespace)::f(int*)") == \
        "at::native::{anon}::f"


# ---------------------------------------------------------------- the command on the CPU


def test_a_cpu_only_script_gets_a_cpu_op_table_and_says_why(gpubench):
    done = gpubench("profile", "--out", "p", "--", "python", str(PROGRAMS / "cpu_only.py"),
                    "one", "two")
    assert done.code == 0, done.output
    assert "done" in done.stdout and "['one', 'two']" in done.stdout  # its argv, unchanged
    assert "No CUDA kernels" in done.output and "aten::matmul" in done.output
    # Issue 52: kineto's own start/stop lines ('USDT:... profiler_start') are the profiler
    # gpubench put in, not the program's output
    assert "USDT:" not in done.output and "profiler_start" not in done.output
    run = read_run(done.cwd / "p")
    assert run.meta["kind"] == "profile" and run.meta["exit_code"] == 0
    assert run.meta["profile"]["groups"][0]["name"].startswith("aten::")
    assert (done.cwd / "p" / "kernels.csv").read_text().startswith("name,origin,calls")
    assert (done.cwd / "p" / "trace.json").is_file()


def test_a_region_of_the_training_script_on_the_cpu(gpubench):
    done = gpubench("profile", "--out", "g", "--json", "--", "python",
                    str(PROGRAMS / "gpt_train.py"))
    assert done.code == 0, done.output
    profile = json.loads(done.stdout)["profile"]
    assert profile["region"] == "train" and profile["region_instances"] == 2
    assert not profile["device"]


def test_a_script_that_raises_keeps_its_table_and_exit_code(gpubench):
    done = gpubench("profile", "--out", "r", "--", "python", str(PROGRAMS / "raises.py"))
    assert done.code == 1, done.output
    assert "RuntimeError: the program failed on purpose" in done.output
    assert "exited with 1" in done.output and "aten::matmul" in done.output
    assert "gpubench/tools/profile/child.py" not in done.output  # the user's traceback only
    assert read_run(done.cwd / "r").meta["exit_code"] == 1


def test_a_hanging_script_is_stopped_and_what_it_recorded_kept(gpubench, tmp_path):
    script = tmp_path / "hangs.py"
    script.write_text("import os, time, torch\n"
                      "open('pid', 'w').write(str(os.getpid()))\n"
                      "torch.randn(64, 64) @ torch.randn(64, 64)\n"
                      "time.sleep(600)\n")
    start = time.monotonic()
    done = gpubench("profile", "--timeout", "20", "--out", "h", "--", "python", str(script))
    assert done.code == 9, done.output
    assert time.monotonic() - start < 120
    assert "ran past --timeout" in done.output and "aten::matmul" in done.output
    pid = int((done.cwd / "pid").read_text())
    assert not os.path.exists(f"/proc/{pid}"), "the program outlived its timeout"


def test_what_is_not_a_python_program_is_refused(gpubench):
    for argv, words in ((("--", "ls", "-l"), "runs Python programs"),
                        (("--", "python", "missing.py"), "no such script"),
                        ((), "name the program")):
        done = gpubench("profile", *argv)
        assert done.code == 2 and words in done.output, done.output
        assert "Traceback" not in done.output


def test_the_api_region_is_a_profiler_range_named_for_the_analysis():
    import torch
    from torch.profiler import profile

    import gpubench

    with profile() as prof, gpubench.region("x"):
        torch.ones(4) + 1
    assert K.REGION_PREFIX + "x" in {e.name for e in prof.events()}


def test_ncu_on_the_top_kernels_without_ncu_says_so_with_its_exit_code(gpt, tmp_path,
                                                                       monkeypatch):
    """The kernel table stays (it was printed before); ncu's absence is one line and the
    documented exit code (6), as for `gpubench ncu`."""
    import io

    from rich.console import Console

    from gpubench.tools import find as tools
    from gpubench.tools.profile.ncu_top import profile_top_kernels

    monkeypatch.setenv("PATH", "/nonexistent")
    monkeypatch.setattr(tools, "SEARCH_GLOBS", {})
    sink = io.StringIO()
    code = profile_top_kernels("python", ["train.py"], K.analyse(gpt), gpt, tmp_path, 3,
                               Console(file=sink, width=100), {})
    assert code == 6 and "ncu not found" in sink.getvalue()


def test_ncu_on_a_program_without_kernels_is_skipped(gpubench):
    done = gpubench("profile", "--ncu", "--out", "c", "--", "python",
                    str(PROGRAMS / "cpu_only.py"))
    assert done.code == 0, done.output
    assert "--ncu: skipped — the program ran no CUDA kernel" in done.output
