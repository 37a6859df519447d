"""Inside a worker: a few iterations of each variant under torch.profiler -> a Chrome trace.

Schedule wait=1, warmup=1, active=1 over three passes through all variants:
the first pass absorbs lazy loading and JIT compilation, the second warms the
profiler, the third (ITERATIONS calls per variant) is recorded. Each variant
runs inside `record_function("gpubench/<family>/<variant>/<size>/<dtype>")`
(and the matching NVTX range); each call inside `gpubench::call`, after an L2
flush inside `gpubench::flush` and a synchronisation: the GPU is idle when the
call launches, so the trace's launch-to-start gap is the real launch latency.
"""

from __future__ import annotations

import sys
from pathlib import Path

from gpubench.run.lanes.protocol import Task
from gpubench.timing import nvtx_ranges

REGION_PREFIX = "gpubench/"
CALL_RANGE = "gpubench::call"
FLUSH_RANGE = "gpubench::flush"
# Written to stderr (the trace log) before each variant runs: if the worker crashes or
# hangs, the last such line names the variant to leave out of the next try.
PROGRESS = "[gpubench trace] running "


def _progress(task: Task) -> None:
    print(PROGRESS + task.label, file=sys.stderr, flush=True)


def trace_tasks(executor, tasks: list[Task], out_path: Path, iterations: int) -> dict:
    """Profile every task's variant and export one Chrome trace; returns per-task status."""
    import torch
    from torch.profiler import ProfilerActivity, profile, record_function, schedule

    cuda = executor.machine.has_cuda
    prepared, statuses = [], {}
    for task in tasks:
        _progress(task)
        try:
            prepared.append((task, *executor.prepare_for_trace(task)))
            statuses[task.label] = "ok"
        except Exception as exc:  # a broken variant is left out of the trace, not fatal
            statuses[task.label] = f"error: {type(exc).__name__}: {exc}"
    flush = _flusher(executor) if cuda else None

    def one_pass(calls: int) -> None:
        for task, fn, group in prepared:
            _progress(task)
            with record_function(REGION_PREFIX + task.label), nvtx_ranges.labelled(task.label), \
                    nvtx_ranges.phase("trace"):
                for _ in range(calls):
                    if flush is not None:
                        with record_function(FLUSH_RANGE):
                            flush()
                        torch.cuda.synchronize()
                    with record_function(CALL_RANGE):
                        fn(group.time_inputs, group.out)
                if cuda:
                    torch.cuda.synchronize()

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    with profile(activities=activities, schedule=schedule(wait=1, warmup=1, active=1),
                 on_trace_ready=lambda prof: prof.export_chrome_trace(str(out_path))) as prof:
        for step in range(3):
            one_pass(iterations if step == 2 else 1)
            prof.step()
    return {"status": "ok", "variants": statuses}


def _flusher(executor):
    from gpubench.timing.timers.flush_spin import CudaSupport

    support = executor.shared.get("cuda")
    if support is None:
        support = executor.shared["cuda"] = CudaSupport()
    return support.flush
