"""The build phase (issue 32): a run's distinct extensions compile up front in builder
processes, side by side, while the workers measure; each is compiled once; a failed build
is its points' BUILD ERROR at file:line; Ctrl-C leaves no compiler behind."""

from __future__ import annotations

import json
import os
import signal
import sys
import textwrap
import time
from pathlib import Path

import pytest
from test_scale_out import assert_nothing_left, marked_env, processes_with, run

from conftest import FAST, start_gpubench

pytestmark = pytest.mark.slow

SPEC = '''
import torch

from gpubench.families.spec import CudaVariant, Family, TorchVariant

family = Family(
    make_inputs=lambda n, dtype, device: (torch.randn(n, device=device).to(dtype),),
    reference=lambda x: x + {add},
    flops=lambda n: n,
    bytes_moved=lambda n, itemsize: 2 * n * itemsize,
    sizes=(256,),
    variants=(
        TorchVariant("torch", fn=lambda x, out: torch.add(x, {add}, out=out), baseline=True),
        CudaVariant("first", function="add_it", cpu=("first.cpp",)),
        {extra}
    ),
)
'''
SOURCE = '''
#include <ATen/core/Tensor.h>
{header}
void add_it(at::Tensor x, at::Tensor out) {{ out.copy_(x + {add}); }}  // {tag}
'''
BROKEN = '''
#include <ATen/core/Tensor.h>
void add_it(at::Tensor x, at::Tensor out) {
  out.copy_(x + undeclared_thing);  // the line the error names
}
'''


def make_family(root: Path, tag: str, heavy: bool = False) -> Path:
    """Two CPU extensions of distinct sources, unique to this test by `tag` (nothing is
    cached): one that builds and one that cannot compile (each C++ build is 10-40 s on 2
    cores, so the test has only these two). `heavy`: both build, with torch/extension.h,
    a 20-40 s compile, for the Ctrl-C test."""
    folder = root / "kernels" / "twobuilds"
    folder.mkdir(parents=True)
    second = "second" if heavy else "broken"
    extra = f'CudaVariant("{second}", function="add_it", cpu=("{second}.cpp",)),'
    (folder / "spec.py").write_text(SPEC.format(add=2, extra=extra))
    header = "#include <torch/extension.h>" if heavy else ""
    for name in ("first", "second") if heavy else ("first",):
        (folder / f"{name}.cpp").write_text(
            textwrap.dedent(SOURCE.format(header=header, add=2, tag=f"{tag} {name}")))
    if not heavy:
        (folder / "broken.cpp").write_text(BROKEN)
    return root / "kernels"


def test_builds_run_side_by_side_once_each_and_a_failure_is_build_error(tmp_path,
                                                                       private_cache):
    kernels = make_family(tmp_path, tmp_path.name)
    env, mark = marked_env(private_cache)
    env["GPUBENCH_BUILD_CORES"] = "8"  # 8 - 2 lanes - 1 = 5 free: two builders side by side
    out = tmp_path / "run"
    done = run(["run", "twobuilds", "--kernels-dir", str(kernels), "--workers", "2", *FAST,
                "--out", str(out)], tmp_path, env)
    assert done.returncode in (0, 1), done.stdout + done.stderr  # 1: a point failed to build
    document = json.loads((out / "results.json").read_text())
    phase = document["env"]["build_phase"]
    assert (phase["builds"], phase["builders"], phase["failed"]) == (2, 2, 1), phase
    assert phase["rebuilt_by_workers"] == 0, phase  # the worker found the build made
    assert "build phase: 2 extensions in" in done.stdout
    # Piped, the builders' progress is told while the lanes wait (10-40 s of compile).
    assert "first n=256 float32: build ..." in done.stdout, done.stdout
    first, broken = sorted(phase["jobs"], key=lambda j: j["variant"] != "twobuilds/first")
    assert broken["start_s"] < first["end_s"] and first["start_s"] < broken["end_s"], \
        phase["jobs"]  # side by side, in two builders
    by_variant = {r["variant"]: r for r in document["results"]}
    assert by_variant["first"]["status"] == "ok"
    assert by_variant["broken"]["status"] == "build_error"
    assert "broken.cpp:4" in by_variant["broken"]["error"]  # the compiler's file:line
    shown = by_variant["first"]["build"]
    assert shown.get("build_phase") and shown["compile_s"] > 0 and shown["cached"] is False, \
        shown  # the build's seconds on its row, as the phase measured them
    assert {p.name for p in out.glob("builder-*.log")} == {"builder-1.log", "builder-2.log"}
    # The interference reference ran while the builders worked, and says so.
    interference = document["env"]["interference"]
    assert interference["beside_builds"] >= 1, interference
    assert "builds compiling" in interference["summary"] or \
        "build compiling" in interference["summary"], interference
    assert_nothing_left(mark)


def test_ctrl_c_during_the_build_phase_leaves_no_compiler(tmp_path, private_cache):
    kernels = make_family(tmp_path, tmp_path.name, heavy=True)
    env, mark = marked_env(private_cache)
    env["GPUBENCH_BUILD_CORES"] = "8"
    child = start_gpubench(["run", "twobuilds", "--kernels-dir", str(kernels), *FAST,
                            "--out", str(tmp_path / "run")], tmp_path, env)
    deadline = time.monotonic() + 120
    while not any("cc1plus" in p for p in processes_with(mark)):
        assert time.monotonic() < deadline and child.poll() is None, child.stdout.read()
        time.sleep(0.2)
    child.send_signal(signal.SIGINT)
    output, _ = child.communicate(timeout=60)
    assert child.returncode == 130, output
    assert_nothing_left(mark)
    document = json.loads((tmp_path / "run" / "results.json").read_text())
    statuses = {r["variant"]: r["status"] for r in document["results"]}
    assert statuses["first"] == statuses["second"] == "not_run", statuses


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))


def test_workers_started_before_the_plan_die_with_a_plan_that_fails(tmp_path):
    """run/lanes/prestart.py starts the workers before the specs are read: a spec that fails to
    import (exit 4) must still leave no worker and no temporary log folder behind."""
    from conftest import TEST_KERNELS

    env, mark = marked_env(tmp_path / "cache")
    env["TMPDIR"] = str(tmp_path / "tmp")
    (tmp_path / "tmp").mkdir()
    done = run(["run", "brokenspec", "--kernels-dir", str(TEST_KERNELS), "--workers", "2",
                "--out", str(tmp_path / "run")], tmp_path, env)
    assert done.returncode == 4, done.stdout + done.stderr
    assert_nothing_left(mark)
    assert not list((tmp_path / "tmp").glob("gpubench-prestart-*"))


def test_prestarted_slots_match_the_lanes_the_options_make():
    from gpubench.run.lanes.lane import cpu_slots
    from gpubench.run.lanes.prestart import guessed_slots

    assert guessed_slots("cpu", None, 2) == cpu_slots(2)  # --workers 2 on a CPU
    assert guessed_slots("cpu", None, None)[0].device == "cpu"
    assert guessed_slots("cpu", "all", None) == []  # --devices needs torch to say what is wrong


def test_the_prestarted_worker_is_the_one_that_runs(tmp_path):
    """The worker started before torch was imported in the parent is adopted by the lane
    (its environment, the compiled variant's choice included, was guessed right), and its
    log lands in the run folder."""
    env, mark = marked_env(tmp_path / "cache")
    out = tmp_path / "run"
    done = run(["run", "square", "--variants", "torch", "--sizes", "1024", *FAST, "--out",
                str(out)], tmp_path, env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert json.loads((out / "results.json").read_text())["env"].get("prestarted") is True
    assert "[gpubench worker] pid" in (out / "worker-1.log").read_text()
    assert_nothing_left(mark)


def test_a_cpu_worker_runs_one_thread_unless_told(monkeypatch):
    """The torch baseline runs on the one thread the C++ CPU versions run on: two threads
    waited on each other on a busy 2-core host (8 ms against 3 us, issue 52)."""
    from gpubench.run.lanes.lane import CPU_THREADS_ENV, cpu_slots

    monkeypatch.delenv(CPU_THREADS_ENV, raising=False)
    assert [s.threads for s in cpu_slots(1)] == [1]
    assert cpu_slots(1)[0].env()["OMP_NUM_THREADS"] == "1"
    from gpubench.run.lanes.lane import Slot

    assert Slot("cpu", "cpu:0").env()["OMP_NUM_THREADS"] == "1"  # the default worker too
    assert "OMP_NUM_THREADS" not in Slot("cuda", "cuda:0").env()
    monkeypatch.setenv(CPU_THREADS_ENV, "64")
    assert cpu_slots(1)[0].threads == max(1, os.cpu_count() or 1)  # never past the cores
    monkeypatch.setenv(CPU_THREADS_ENV, "many")
    assert cpu_slots(1)[0].threads == 1
