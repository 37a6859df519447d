"""The Dask workers of `--cluster local`: processes gpubench starts itself, at once.

Why not Dask's Nanny: a nanny lives in the process that starts the cluster, so it can
spawn its worker only once that process has imported Dask (~0.5 s) and started the
scheduler, and the worker it spawns imports Dask again before it runs any code of ours
(another ~0.5 s). Only then would the worker start its gpubench worker (Python, torch,
CUDA: ~2 s), the run's critical path: on 2 H200s that puts the first point of a warm
`--cluster local` run 1.4 s after `--devices all`'s, the widest gap left between the two
(docs/journal/perf-notes.md).

Here the parent starts each Dask worker with a plain subprocess first thing, before its
own imports; the worker starts its gpubench worker before it imports Dask, then waits for
the scheduler's address on stdin (the parent writes it once its scheduler is up). So the
gpubench workers start as early as `--devices all`'s prestarted ones, a process hop later.

Lifetime: the worker's stdin is the parent's pipe. When it closes (the run ends, or the
parent dies however it dies) the worker kills its gpubench worker and exits (a run that
ended asked it to stop first). Each worker is in a session of its own: a Ctrl-C in the
terminal reaches the parent, which closes the cluster, not the workers in the middle of a
task. Without a nanny a lost worker is not started again: its lane tries the point once
more on another worker (cluster.DaskLane.execute).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path

SPEC_ENV = "GPUBENCH_DASK_WORKER"  # the worker's WorkerSpec, as JSON
# How long a closing parent waits for its workers to exit after their stdin closed (they
# kill their gpubench worker, if any is left, then exit at once) before it kills them.
EXIT_WAIT_S = 5.0
# How long a worker keeps trying to reach a scheduler that does not answer before it ends
# itself (Dask's death_timeout): a parent that dies closes the pipe first, this is the
# backstop.
DEATH_TIMEOUT_S = 60.0


@dataclass(frozen=True)
class WorkerSpec:
    """One Dask worker of a local cluster: its name, the lane device, the GPU it may
    see (None on CPU), where its gpubench worker logs and Dask's scratch folder."""

    name: str  # "gpu0", "cpu1": the Dask worker's name, its lane's label and log name
    device: str  # "cuda" or "cpu"
    gpu: str | None
    lane_logs: str | None
    scratch: str
    host: str  # the interface every port of the worker binds (loopback)

    def resources(self) -> dict[str, float]:
        return {"GPU": 1} if self.gpu is not None else {}

    def to_environ(self) -> dict[str, str]:
        gpu = {"CUDA_VISIBLE_DEVICES": self.gpu} if self.gpu is not None else {}
        return {SPEC_ENV: json.dumps(asdict(self)), **gpu}

    @classmethod
    def from_environ(cls) -> WorkerSpec:
        return cls(**json.loads(os.environ[SPEC_ENV]))


class LocalWorkers:
    """The worker processes of one local cluster (parent side)."""

    def __init__(self, specs: list[WorkerSpec], environ: dict[str, str],
                 log_path: Path | None):
        self.specs = specs
        self.processes: list[subprocess.Popen] = []
        # A worker's own stderr (a traceback before Dask's logging is set up) goes where
        # Dask's log lines go: the run folder's dask.log.
        self.log = open(log_path, "ab") if log_path is not None else None  # noqa: SIM115
        for spec in specs:
            self.processes.append(subprocess.Popen(
                [sys.executable, "-m", __name__], env={**environ, **spec.to_environ()},
                stdin=subprocess.PIPE, stdout=self.log or subprocess.DEVNULL,
                stderr=self.log or subprocess.DEVNULL, start_new_session=True))

    def connect(self, address: str) -> None:
        """Tell every worker where the scheduler is (each waits for this line)."""
        for process in self.processes:
            with contextlib.suppress(OSError):  # one that died is the wait's to report
                process.stdin.write(f"{address}\n".encode())
                process.stdin.flush()

    def all_exited(self) -> bool:
        return all(process.poll() is not None for process in self.processes)

    def close(self) -> None:
        """Close every worker's stdin (each stops its gpubench worker and exits), wait
        EXIT_WAIT_S for them all, then kill what is left."""
        for process in self.processes:
            with contextlib.suppress(OSError):
                process.stdin.close()
        deadline = time.monotonic() + EXIT_WAIT_S
        for process in self.processes:
            try:
                process.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self.processes = []
        if self.log is not None:
            self.log.close()
            self.log = None


# ---------------------------------------------------------------- in the worker process


def _stop_when_stdin_closes() -> None:
    """Wait for the parent's pipe to close, then kill the lane (a point in flight too:
    nothing waits for it now; a run that ended stopped it politely first) and exit."""
    from gpubench.run.cluster.dask_remote import kill_lanes

    while sys.stdin.buffer.readline():
        pass
    with contextlib.suppress(Exception):
        kill_lanes()
    os._exit(0)


# Dask's profiler samples the worker's threads' stacks 100 times a second (its
# distributed.worker.profile.interval, 10 ms) for the dashboard, which nothing of a local
# cluster reads: host work beside the gpubench worker's timed launches. Off, unless the
# environment says otherwise.
PROFILER_ENV = "DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED"


def quiet_profiler(environ=os.environ) -> None:
    """Dask's worker profiler off in this process, unless `environ` sets it."""
    import dask

    if PROFILER_ENV not in environ:
        dask.config.set({"distributed.worker.profile.enabled": False})


async def _serve(spec: WorkerSpec, address: str) -> None:
    import distributed

    quiet_profiler()
    # One thread: one task at a time, the GPU the resource that says so. No memory limit:
    # this process holds results only (the tensors live in the gpubench worker), and a
    # paused worker would stall a lane in the middle of a run.
    async with distributed.Worker(address, nthreads=1, name=spec.name, host=spec.host,
                                  resources=spec.resources() or None,
                                  dashboard_address=f"{spec.host}:0",
                                  local_directory=spec.scratch, memory_limit=0,
                                  death_timeout=DEATH_TIMEOUT_S) as worker:
        await worker.finished()


def main() -> int:
    spec = WorkerSpec.from_environ()
    from gpubench.run.cluster.dask_remote import start_lane_soon

    start_lane_soon(spec.device, spec.lane_logs, name=spec.name)  # before Dask's import
    import asyncio

    import distributed  # noqa: F401  (while the scheduler starts in the parent)

    address = sys.stdin.buffer.readline().decode().strip()
    if not address:  # the parent closed the pipe before its scheduler was up
        _stop_when_stdin_closes()
    threading.Thread(target=_stop_when_stdin_closes, daemon=True,
                     name="gpubench-parent-pipe").start()
    try:
        asyncio.run(_serve(spec, address))
    finally:  # the scheduler gone (death_timeout): the gpubench worker ends with this one
        from gpubench.run.cluster.dask_remote import kill_lanes

        kill_lanes()
    return 0


if __name__ == "__main__":
    sys.exit(main())
