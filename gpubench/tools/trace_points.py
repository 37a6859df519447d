"""A torch.profiler (Chrome) trace of planned points, all in one tracing worker: used by
`gpubench trace` and `gpubench run --trace`. A variant that crashes or hangs the worker is
left out and the rest traced again."""

from __future__ import annotations

import gzip
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from gpubench import errors, safe_text
from gpubench.run.lanes.protocol import read_result
from gpubench.run.lanes.worker_process import worker_env
from gpubench.run.plan import Point
from gpubench.run.worker.tracing import CALL_RANGE, PROGRESS, REGION_PREFIX
from gpubench.timing.chrome_trace import event_counts, load_trace, variant_traces
from gpubench.tools.find import run_tool
from gpubench.tools.trace_view import OPEN_HINT, counts_line, trace_table


@dataclass
class TraceOutcome:
    path: Path
    statuses: dict = field(default_factory=dict)
    traces: list = field(default_factory=list)
    counts: dict = field(default_factory=dict)
    has_device: bool = False


def trace_points(points: list[Point], device: str, run_dir: Path, iterations: int = 5,
                 timeout_s: float = 600.0, compress: bool = False) -> TraceOutcome:
    """Trace every runnable point in one worker; return where the trace is and its summary.
    A variant that crashes or hangs the tracing worker is left out and the rest traced
    again, so one bad variant costs its own row, not everyone's trace."""
    runnable = [p for p in points if not p.skip]
    if not runnable:
        raise errors.UsageError("nothing to trace: every chosen variant is skipped here")
    left_out: dict[str, str] = {}
    while True:
        log = run_dir / ("trace.log" if not left_out else f"trace-{len(left_out) + 1}.log")
        done, path, result_file = _trace_once(runnable, device, run_dir, iterations, timeout_s,
                                              log)
        culprit = _culprit(done) if (done.timed_out or not path.is_file()) else None
        if culprit is None or culprit not in {p.task(0).label for p in runnable}:
            break
        how = f"hung (killed after {timeout_s:.0f} s)" if done.timed_out else \
            f"crashed the tracing worker (exit {done.returncode})"
        left_out[culprit] = f"{how}; log: {done.log}"
        runnable = [p for p in runnable if p.task(0).label != culprit]
        if not runnable:
            break
    if done.timed_out and not path.is_file():
        raise errors.ProfilerTimeout(f"tracing ran past {timeout_s:.0f} s and was killed "
                                     f"(log: {done.log})")
    if not path.is_file():
        tail = done.output.strip().splitlines()[-1:] or ["no output"]
        raise errors.ProfilerError(f"no trace was written: {tail[0]} (log: {done.log})")
    trace = load_trace(path)
    statuses = {**left_out, **read_result(result_file).get("variants", {})}
    if compress:
        path = _gzip(path)
    return TraceOutcome(path, statuses, variant_traces(trace, REGION_PREFIX, CALL_RANGE),
                        event_counts(trace), device == "cuda")


def _trace_once(points: list[Point], device: str, run_dir: Path, iterations: int,
                timeout_s: float, log: Path):
    tasks_file, result_file = run_dir / "trace-tasks.json", run_dir / "trace-result.json"
    tasks_file.write_text("[" + ",".join(p.task(i).to_json() for i, p in enumerate(points))
                          + "]")
    path = run_dir / "trace.json"
    path.unlink(missing_ok=True)
    argv = [sys.executable, "-m", "gpubench.run.worker", "--trace", str(tasks_file), "--trace-out",
            str(path), "--result", str(result_file), "--iterations", str(iterations)]
    done = run_tool(argv, timeout_s, log, env=worker_env(device))
    return done, path, result_file


def _culprit(done) -> str | None:
    """The label of the variant the tracing worker was running when it died or hung."""
    lines = [line for line in done.output.splitlines() if line.startswith(PROGRESS)]
    return lines[-1].removeprefix(PROGRESS).strip() if lines else None


def show_trace(outcome: TraceOutcome, console: Console) -> None:
    console.print(f"trace: {escape(safe_text.terminal(outcome.path))}")
    console.print(OPEN_HINT, soft_wrap=True)
    console.print(trace_table(outcome.traces, outcome.has_device))
    console.print(f"events: {counts_line(outcome.counts)}")
    for label, status in outcome.statuses.items():
        if status != "ok":
            text = escape(f"{label}: left out of the trace, {status}")
            console.print(f"[red]{text}[/]", soft_wrap=True)


def _gzip(path: Path) -> Path:
    target = path.with_suffix(".json.gz")
    with open(path, "rb") as source, gzip.open(target, "wb") as sink:
        shutil.copyfileobj(source, sink)
    path.unlink()
    return target
