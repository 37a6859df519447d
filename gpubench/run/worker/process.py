"""The worker process: runs tasks for the parent, one at a time, and dies alone.

Started as `python -m gpubench.run.worker --fd N`. Tasks arrive as JSON lines on
stdin; messages leave on a private copy of descriptor N, and a result is sent only
with a one-time key the parent hands over after the worker said "done" (see
protocol.py), so a result a variant writes there is told apart from gpubench's own.
Before the first task the worker seals what the harness depends on; after each
task it checks the seal and the threads left running (seal.py, tamper.py), and its
own health: descriptors, forked copies, processes left behind (health.py). A tampered
process reports the task FAIL and exits, so no later variant runs in it; one that
only left processes behind keeps the task's result and is restarted after it.
A segfault or a hang takes down only this process: the parent notices (EOF on N,
or its timeout), records CRASHED or TIMEOUT and starts a fresh worker. A CUDA
fault that poisons the context is reported, then the worker exits on purpose. A
watchdog forked first thing kills this worker's whole session when gpubench goes
away, even by `kill -9`.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
import traceback
from dataclasses import replace

from gpubench.records.point import Task
from gpubench.records.result import CRASHED, OK
from gpubench.records.worker_result import WorkerResult
from gpubench.run import timeline
from gpubench.run.lanes.protocol import Envelope, ResultKey, private_channel, send
from gpubench.run.worker.prewarm import Prewarm, start_driver

# Exit status after reporting a CUDA fault: the parent starts a fresh worker.
EXIT_CUDA_FAULT = 3
# Exit status after a task tampered with the process (or its result key went to
# someone else): the parent starts a fresh worker.
EXIT_TAMPERED = 4
# Exit status when the kernel refused the sandbox the hello announced (sandbox.py): no
# variant runs in a worker less restricted than its hello says.
EXIT_SANDBOX = 5


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="gpubench.run.worker")
    parser.add_argument("--fd", type=int, help="descriptor to write messages to")
    parser.add_argument("--judge", help="the judge's descriptors (run/judge/server.py): "
                        "control,report,judge-socket,worker-socket")
    parser.add_argument("--once", help="run this one task file for a profiler, then exit")
    parser.add_argument("--result", help="with --once: where to write the result JSON")
    parser.add_argument("--region", default="nvtx:gb_profile",
                        help="with --once: nvtx:RANGE (gpubench domain) or cuda-profiler-api")
    parser.add_argument("--trace", help="trace the tasks of this JSON list file, then exit")
    parser.add_argument("--trace-out", help="with --trace: the Chrome trace to write")
    parser.add_argument("--iterations", type=int, default=5, help="with --trace: calls traced")
    parser.add_argument("--ncu-check", help="run the tasks of this JSON list file under ncu, "
                        "a few calls each in a range of its own (run --ncu-check), then exit")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    timeline.mark_process_start("worker")
    device = os.environ.get("GPUBENCH_DEVICE", "cpu")
    judge = Forked(args.judge, device)
    if device == "cuda":
        judge.fork()  # before the driver starts: the judge makes its own CUDA context
    prewarm = None
    if device == "cuda" and args.fd is not None and not (args.once or args.trace
                                                         or args.ncu_check):
        start_driver()  # a serving worker's: beside torch's import, which comes next
        # Host-side first uses (Triton's import and key, then the C++ loader) beside it too.
        prewarm = Prewarm(torch_pending=True)
    if device == "cpu":
        # Triton reads this when a @triton.jit function is defined: before any kernel import.
        os.environ.setdefault("TRITON_INTERPRET", "1")
    import gpubench.timing.pristine  # noqa: F401  the timers' references, before any variant
    judge.fork()  # on a CPU: after torch's import, which the judge then shares
    steps = StartSteps(started)
    steps.mark("torch")
    if prewarm is not None:
        prewarm.torch_imported()
    if args.once:
        return _profile_once(device, args.once, args.result, args.region)
    if args.ncu_check:
        return _ncu_check(device, args.ncu_check, args.result)
    if args.trace:
        return _trace(device, args.trace, args.trace_out, args.result, args.iterations)
    if args.fd is None:
        parser.error("--fd or --once is required")
    from gpubench.run.lanes.processes import become_subreaper, start_watchdog

    become_subreaper()  # a variant's child in a new session stays below this worker
    watchdog = start_watchdog(os.getppid())
    fd = private_channel(args.fd)
    try:
        machine, sandbox = _start(device, fd, steps)
    except Exception as exc:
        send(fd, {"type": "fatal", "error": f"worker failed to start: {exc}",
                  "traceback": traceback.format_exc()})
        return 2
    status = _serve(machine, fd, watchdog, prewarm, judge, sandbox)
    if status == 0:  # the parent closed stdin: the run is over, every result is sent
        _exit_now()
    return status


class Forked:
    """The judge this worker forks (run/judge/server.py), when the parent gave it one."""

    def __init__(self, arg: str | None, device: str):
        from gpubench.run.judge.server import JudgeEnds

        self.ends = JudgeEnds.from_arg(arg) if arg else None
        self.device = device
        self.pid: int | None = None

    def fork(self) -> None:
        if self.ends is not None and self.pid is None:
            from gpubench.run.judge.server import fork_judge

            self.pid = fork_judge(self.ends, self.device)

    def link(self):
        """The worker's side of the judge (None: decide in this process)."""
        if self.ends is None:
            return None
        from gpubench.run.judge.client import RemoteJudge

        return RemoteJudge(self.ends.worker_socket, self.device)


def _exit_now() -> None:
    """End without Python's and torch's teardown (CUDA context, allocator, module
    finalisers: ~1 s that the parent would wait for after the last point of every run).
    Nothing is left to say; the parent kills what remains of the session, and the driver
    frees the context with the process."""
    with contextlib.suppress(OSError, ValueError):
        sys.stdout.flush()
        sys.stderr.flush()
    os._exit(0)


class StartSteps:
    """How long each step of the worker's start took, for its log: a run's fixed cost is
    mostly this (benchmarks/startup.py reads the line)."""

    def __init__(self, started: float):
        self.last = started
        self.steps: list[tuple[str, float]] = []

    def mark(self, step: str) -> None:
        timeline.mark(f"worker: {step} done")
        now = time.perf_counter()
        self.steps.append((step, now - self.last))
        self.last = now

    def line(self) -> str:
        total = sum(seconds for _, seconds in self.steps)
        named = ", ".join(f"{step} {seconds:.2f} s" for step, seconds in self.steps)
        return f"{START_LINE} {total:.2f} s ({named})"


# The worker log's line that times the start (benchmarks/startup.py parses it).
START_LINE = "[gpubench worker] start:"


def _start(device: str, fd: int, steps: StartSteps):
    """Import torch, say hello with the device's facts; returns this machine's description
    and the sandbox to enter before the first task (sandbox.py), which the hello names."""
    from gpubench.families.compiled import no_progress_monitor
    from gpubench.families.spec import Machine
    from gpubench.run.worker import sandbox
    from gpubench.timing.envinfo import device_env

    no_progress_monitor()  # a submission's own torch.compile draws tqdm bars too
    machine = Machine(has_cuda=device == "cuda", has_triton=_has_module("triton"))
    env = device_env(device)
    steps.mark("device facts")
    if os.environ.get("GPUBENCH_CEILINGS", "1") != "0":
        from gpubench.timing.ceilings import load_checked

        # Cached ceilings are checked by a short copy probe (~0.2 s): a cache measured at a
        # bad moment would skew every "of roof" silently. The verdict travels in env, so
        # results.json keeps it and the run can warn.
        ceilings, check = load_checked(env)
        env["ceilings"] = ceilings.to_dict()
        if check is not None:
            env["ceilings_check"] = check
        steps.mark("ceilings")
    plan = sandbox.plan(device)  # the start-up's writes are done: what may still write
    env["sandbox"] = plan.describe()
    send(fd, {"type": "hello", "pid": os.getpid(), "env": env})
    timeline.mark("worker: hello sent")
    _log(steps.line())
    return machine, plan


def _serve(machine, fd: int, watchdog: int | None, prewarm: Prewarm | None = None,
           judge: Forked | None = None, sandbox=None) -> int:
    from gpubench.run.worker.execute import Executor
    from gpubench.run.worker.health import Health

    current: dict = {"envelope": None}
    own = tuple(pid for pid in (watchdog, judge.pid if judge else None) if pid)
    health = Health(fd, keep=own)

    def report_phase(phase: str) -> None:
        _end_if_copy(health)
        current["envelope"].send(fd, {"type": "phase", "phase": phase})

    if prewarm is not None:  # its imports done before the seal and the first timing
        _log(prewarm.wait())
    sealing = time.perf_counter()
    executor = Executor(machine, report_phase, judge.link() if judge else None, _run_pair)
    watch = _seal()
    # The session id stays the line's last word (tests/test_hardening.py reads it).
    _log(f"[gpubench worker] pid {os.getpid()} (timers imported and sealed "
         f"{time.perf_counter() - sealing:.2f} s after its hello), session {os.getsid(0)}")
    if sandbox is not None and not _restrict(sandbox):
        return EXIT_SANDBOX
    while line := sys.stdin.readline():
        if not line.strip():
            continue
        envelope = Envelope.from_json(line)
        current["envelope"] = envelope
        status = _serve_one(executor, watch, health, envelope, fd)
        if status is not None:
            return status
    timeline.mark("worker: stdin closed (the run is over)")
    return 0


def _run_pair(executor, task: Task) -> WorkerResult:
    """`gpubench ab`'s pair task (run/ab/pair.py), imported with its first pair: a worker
    that times no pair never pays for it (its comparison imports take ~70 ms)."""
    from gpubench.run.ab.pair import run_pair

    return run_pair(executor, task)


def _serve_one(executor, watch, health, envelope: Envelope, fd: int) -> int | None:
    """Run one task and answer for it; an exit status when the worker must exit."""
    from gpubench.run.worker.execute import CudaFault

    task = envelope.task
    _log(f"[gpubench worker] {_now()} task {task.id}: {task.label}")
    watch.before_task()
    health.before_task()
    exit_status = None
    try:
        result = executor.run(task)
    except CudaFault as exc:
        result, exit_status = WorkerResult(CRASHED, str(exc)), EXIT_CUDA_FAULT
    _end_if_copy(health)
    fit = health.verdict()
    if executor.judge_lost and not fit.retire:  # a fresh worker forks a fresh judge
        fit = replace(fit, retire=f"the judge is gone ({executor.judge_lost})")
    tampered = "; ".join(r for r in (watch.verdict(executor), fit.fail) if r)
    if tampered:
        envelope.send(health.channel_for_verdict(), {"type": "tampered", "error": tampered})
        _log(f"[gpubench worker] task {task.id}: {tampered}; exiting")
        health.end_leftovers()
        return EXIT_TAMPERED
    watch.after_clean_task()
    envelope.send(fd, {"type": "done", **({"retire": fit.retire} if fit.retire else {})})
    key = ResultKey.read(sys.stdin.readline(), task.id)
    if key is None:  # something in this process read the key first: nothing here is sure
        _log(f"[gpubench worker] task {task.id}: its result key was taken; exiting")
        return EXIT_TAMPERED
    send(fd, {"type": "result", "task": task.id, "key": key, "result": result.to_dict()})
    _log(f"[gpubench worker] {_now()} task {task.id} done")
    if fit.retire:  # the parent kills this worker and what it holds, then starts another
        _log(f"[gpubench worker] task {task.id}: {fit.retire}")
    return exit_status


def _restrict(plan) -> bool:
    """Enter the sandbox (sandbox.py): after the prewarm thread has ended and the seal is
    made, before any variant code. False when the kernel refused it."""
    from gpubench.run.worker.sandbox import OFF_VARIABLE, apply

    try:
        _log(apply(plan))
    except OSError as exc:
        _log(f"[gpubench worker] sandbox error: {exc} (the hello said '{plan.describe()}'; "
             f"{OFF_VARIABLE}=0 runs without it)")
        return False
    return True


def _end_if_copy(health) -> None:
    """A variant's fork() returned into gpubench's code in the copy: end the copy before
    it says or reads anything (the worker blames the fork on the variant: health.py)."""
    if health.is_copy():
        os._exit(0)


def _log(line: str) -> None:
    """A line in the worker log; a variant may have closed stderr (health.py blames it)."""
    with contextlib.suppress(OSError, ValueError):
        print(line, file=sys.stderr, flush=True)


def _seal():
    """Import every module the timing and the check call into (so their names exist to
    be sealed), then seal them, before any variant code runs."""
    import importlib

    from gpubench.families.trusted import when_trusted
    from gpubench.run.worker.seal import Seal
    from gpubench.run.worker.signal_guard import SignalGuard
    from gpubench.run.worker.tamper import Watch

    for name in EAGER_MODULES:
        importlib.import_module(name)
    guard = SignalGuard(os.getppid())
    guard.install()
    watch = Watch(Seal(), guard)
    when_trusted(watch.seal.extend)  # a problem's reference, sealed before a submission
    return watch


# Imported lazily elsewhere; imported here before the seal so they are sealed too.
EAGER_MODULES = (
    "gpubench.timing.pristine", "gpubench.timing.persisting_l2",
    "gpubench.timing.timers.flush_spin", "gpubench.timing.timers.cuda_events",
    "gpubench.timing.timers.graph", "gpubench.timing.timers.cupti",
    "gpubench.timing.timers.host", "gpubench.timing.timers.wall",
    "gpubench.timing.device_work_probe", "gpubench.timing.chrome_trace",
)


def _now() -> str:
    """Wall-clock time in worker logs: where a run's time went, point by point."""
    import time

    now = time.time()  # one reading: two could straddle a second (12:00:07.004 for 08.004)
    return time.strftime("%H:%M:%S", time.localtime(now)) + f".{int(now * 1000) % 1000:03d}"


def _profile_once(device: str, task_file: str, result_file: str | None, region: str) -> int:
    """One task, one measured call, for ncu or nsys; the result goes to a file, since the
    profiler owns this process's stdout."""
    import json
    from pathlib import Path

    from gpubench.families.spec import Machine
    from gpubench.run.worker.execute import Executor

    task = Task.from_json(Path(task_file).read_text())
    executor = Executor(Machine(has_cuda=device == "cuda", has_triton=_has_module("triton")),
                        lambda phase: None)
    try:
        result = executor.profile_once(task, _region(region))
    except Exception as exc:
        result = _failure(exc, task)
    if result_file:
        Path(result_file).write_text(json.dumps(result.to_dict()))
    return 0 if result.status == OK else 1


def _failure(exc: Exception, task: Task) -> WorkerResult:
    """A one-shot task that did not run: BUILD ERROR with the compiler's first error (the
    parent names it instead of the tool's "returned an error code", tools/driver.py), or
    ERROR at the line of the family's files that raised."""
    from gpubench.build.diagnostics import CompileError
    from gpubench.run.worker.failures import build_failure, variant_failure

    if isinstance(exc, CompileError):
        return build_failure(exc)
    return variant_failure(exc, task)


def _ncu_check(device: str, tasks_file: str, result_file: str | None) -> int:
    """Each task's calls in ranges 'gb_check:<index>' for ncu to profile and attribute: in
    gpubench's NVTX domain (ncu filters on it), or, without the nvtx package, in the
    default domain between cudaProfilerStart/Stop (ncu --profile-from-start off)."""
    import json
    from pathlib import Path

    from gpubench.analysis.ncu_agreement import CALLS, CHECK_RANGE
    from gpubench.families.spec import Machine
    from gpubench.run.worker.execute import Executor

    tasks = [Task.from_dict(item) for item in json.loads(Path(tasks_file).read_text())]
    executor = Executor(Machine(has_cuda=device == "cuda", has_triton=_has_module("triton")),
                        lambda phase: None)
    outcomes = []
    for index, task in enumerate(tasks):
        try:
            region = _labelled_region(f"{CHECK_RANGE}{index}")
            outcomes.append(executor.profile_once(task, region, calls=CALLS))
        except Exception as exc:
            outcomes.append(_failure(exc, task))
    if result_file:
        Path(result_file).write_text(json.dumps([outcome.to_dict() for outcome in outcomes]))
    return 0


def _labelled_region(name: str):
    from gpubench.timing import nvtx_ranges

    if nvtx_ranges.available():
        return lambda: nvtx_ranges.region(name)
    import contextlib

    @contextlib.contextmanager
    def api_and_default_domain():
        import torch

        torch.cuda.cudart().cudaProfilerStart()
        torch.cuda.nvtx.range_push(name)
        try:
            yield
        finally:
            torch.cuda.nvtx.range_pop()
            torch.cuda.cudart().cudaProfilerStop()

    return api_and_default_domain


def _trace(device: str, tasks_file: str, out: str, result_file: str | None,
           iterations: int) -> int:
    """Several tasks under torch.profiler, one Chrome trace (see gpubench/run/worker/tracing.py)."""
    import json
    from pathlib import Path

    from gpubench.families.spec import Machine
    from gpubench.run.worker.execute import Executor
    from gpubench.run.worker.tracing import trace_tasks

    tasks = [Task.from_dict(item) for item in json.loads(Path(tasks_file).read_text())]
    executor = Executor(Machine(has_cuda=device == "cuda", has_triton=_has_module("triton")),
                        lambda phase: None)
    result = trace_tasks(executor, tasks, Path(out), iterations)
    if result_file:
        Path(result_file).write_text(json.dumps(result))
    return 0


def _region(spec: str):
    """The context manager marking the profiled call: an NVTX range in gpubench's domain
    (ncu --nvtx-include 'gpubench@RANGE/'), or cudaProfilerStart/Stop."""
    import contextlib

    if spec.startswith("nvtx:"):
        from gpubench.timing import nvtx_ranges

        return lambda: nvtx_ranges.region(spec.removeprefix("nvtx:"))

    @contextlib.contextmanager
    def profiler_api():
        import torch

        torch.cuda.cudart().cudaProfilerStart()
        try:
            yield
        finally:
            torch.cuda.cudart().cudaProfilerStop()

    return profiler_api


def _has_module(name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(name) is not None


if __name__ == "__main__":
    sys.exit(main())
