"""One place where tasks run: a worker process on one device, restarted after a crash.

A Lane turns a Task into an Outcome: the worker's WorkerResult, or how the
worker failed it (TIMEOUT, CRASHED, ERROR). It knows nothing of points, groups
or tables, so the same code serves `gpubench run` in the parent (one lane per
GPU or CPU slot) and a Dask worker on another node (gpubench/run/cluster/lanes.py), and
timeouts, crash isolation and the build cache behave the same in both.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from gpubench.codec import Record
from gpubench.records import result as R
from gpubench.records.point import Task
from gpubench.records.worker_result import MalformedWorkerResult, WorkerResult
from gpubench.run.judge.ruling import rule
from gpubench.run.lanes.protocol import GARBAGE, Envelope, ResultKey
from gpubench.run.lanes.worker_process import WorkerDied, WorkerProcess, WorkerTimeout


@dataclass(frozen=True)
class Slot:
    """Where a lane's worker runs. `visible` pins it to one GPU (CUDA_VISIBLE_DEVICES),
    None leaves the environment's choice; `label` is what results say measured them."""

    device: str  # "cuda" or "cpu"
    label: str  # "cuda:1", "cpu:0"; a Dask lane prefixes the worker's address
    visible: str | None = None
    threads: int | None = None  # CPU threads of a CPU worker (None: torch's default)

    def env(self) -> dict[str, str]:
        env = {"CUDA_VISIBLE_DEVICES": self.visible} if self.visible is not None else {}
        threads = self.threads
        if threads is None and self.device == "cpu":  # the one default worker
            threads = cpu_threads(os.cpu_count() or 1)
        if threads:
            env.update(thread_env(threads))
        return env


@dataclass
class Outcome(Record):
    """What became of one task: the worker's result, or a status and the reason."""

    result: WorkerResult | None = None  # None when the worker failed the task
    failure: str | None = None  # R.TIMEOUT, R.CRASHED or R.ERROR when the worker failed it
    error: str | None = None
    device: dict = field(default_factory=dict)  # the facts of the device that ran it


def default_lane(device: str, log_dir: Path, log_prefix: str = "worker") -> Lane:
    """One worker on the device's default GPU (or the CPU): a run without --devices."""
    return Lane(Slot(device, f"{device}:0"), log_dir, log_prefix)


class Lane:
    """A worker on one slot, started on first use and after every crash."""

    def __init__(self, slot: Slot, log_dir: Path, log_prefix: str = "worker"):
        self.slot, self.log_dir, self.log_prefix = slot, log_dir, log_prefix
        self.worker: WorkerProcess | None = None
        self.workers_started = 0
        self.env: dict = {}  # the first worker's hello: the device's facts
        self.previous: Task | None = None  # the last task this worker answered
        # A worker started before this lane existed, still starting (prestart.py): taken
        # at the lane's first use, so that a lane whose worker is ready starts measuring
        # without waiting for the others'.
        self.prestarted: Callable[[], tuple[WorkerProcess, dict] | None] | None = None

    def start(self) -> dict:
        """Start the worker now (not at the first task) and return its environment."""
        self._live_worker()
        return self.env

    def execute(self, task: Task, timeout_s: float, build_timeout_s: float,
                on_phase: Callable[[str], None] = lambda phase: None) -> Outcome:
        """Run one task; a worker that hangs, dies or forges a message is killed and
        the outcome says so (the next task gets a fresh worker)."""
        envelope = Envelope(task)
        try:
            worker = self._live_worker()
            if worker.judge is not None:
                worker.judge.open(task)
            worker.send(envelope)
            exchange = Exchange(worker, envelope, self.previous)
            result = exchange.await_result(timeout_s, build_timeout_s, on_phase)
            result = self._judged(worker, result)
        except WorkerTimeout as timeout:
            self.kill()
            return Outcome(failure=R.TIMEOUT, error=str(timeout), device=self.env)
        except WorkerDied as death:
            self.kill()
            return Outcome(failure=R.CRASHED, error=str(death), device=self.env)
        except ForeignMessage as foreign:
            self.kill()
            return Outcome(failure=R.ERROR, error=str(foreign), device=self.env)
        except MalformedWorkerResult as malformed:  # gpubench's own bug, or a worker
            self.kill()  # a variant touched: say so, and the next task gets a fresh one
            return Outcome(failure=R.ERROR, error=f"the worker's result cannot be read: "
                                                  f"{malformed}", device=self.env)
        self.previous = task
        if result.status == R.CRASHED or exchange.retired:  # the worker exits by itself
            self.kill()
        return Outcome(result, device=self.env)

    def _judged(self, worker: WorkerProcess, result: WorkerResult) -> WorkerResult:
        """The result as the worker's judge lets it stand (run/judge/ruling.py). A worker
        the judge overruled was tampered with, a judge that gave no word is gone, and pipes
        that carried what neither gpubench nor the judge wrote are no longer theirs alone:
        all are replaced after this task (new pipes with the new worker), so the next
        variant is judged as it would be alone."""
        if worker.judge is None:
            return result
        summary = worker.judge.summary()
        ruled = rule(result, summary)
        if summary is None or summary.tampering or ruled.status != result.status:
            self.kill()
        return ruled

    def adopt(self, worker: WorkerProcess, env: dict) -> None:
        """Take a worker started before this lane existed (prestart.py) as its first: its
        log moves to where this lane's first worker logs."""
        self.workers_started += 1
        worker.log_path = self.log_dir / f"{self.log_prefix}-{self.workers_started}.log"
        if worker.log is not None:
            worker.log.move_to(worker.log_path)
        self.worker = worker
        if not self.env:  # results.json's env says so: the run's start was overlapped
            self.env = {**env, "device_id": self.slot.label, "prestarted": True}

    def adopt_when_used(self, take: Callable[[], tuple[WorkerProcess, dict] | None]) -> None:
        """Adopt, at this lane's first use, the worker `take()` returns once its start is
        over (None: its start failed, and the lane starts one of its own as before)."""
        self.prestarted = take

    def _live_worker(self) -> WorkerProcess:
        take, self.prestarted = self.prestarted, None
        if self.worker is None and take is not None:
            started = take()
            if started is not None:
                self.adopt(*started)
        if self.worker is None:
            self.workers_started += 1
            log = self.log_dir / f"{self.log_prefix}-{self.workers_started}.log"
            worker = WorkerProcess(self.slot.device, log, self.slot.env())
            try:
                env = worker.start()
            except WorkerTimeout:
                worker.kill()
                raise WorkerDied(f"worker did not start (log: {log})") from None
            self.worker = worker
            if not self.env:
                self.env = {**env, "device_id": self.slot.label}
        return self.worker

    def kill(self) -> None:
        """Kill the worker now (a crash, a timeout, Ctrl-C)."""
        if self.worker is not None:
            self.worker.kill()
            self.worker = None
        self.previous = None

    def stop(self) -> None:
        """End the worker politely (the run is over)."""
        if self.worker is not None:
            self.worker.stop()
            self.worker = None


class Exchange:
    """The parent's side of one task (see protocol.py): progress messages vouched for by
    the envelope's secret, then "done", the one-time key, and the result with the key."""

    def __init__(self, worker: WorkerProcess, envelope: Envelope, previous: Task | None):
        self.worker, self.envelope, self.previous = worker, envelope, previous
        self.key: ResultKey | None = None  # sent once the worker said "done"
        self.retired = False  # the worker exits, or must be restarted, after this task

    def await_result(self, timeout_s: float, build_timeout_s: float,
                     on_phase: Callable[[str], None]) -> WorkerResult:
        """The task's result, phase by phase: the build timeout while starting and
        compiling, the run timeout otherwise."""
        phase = "start"

        def limit(name: str) -> float:
            return build_timeout_s if name in ("start", "build") else timeout_s

        deadline = time.monotonic() + build_timeout_s
        while True:
            try:
                message = self.worker.next_message(deadline)
            except WorkerTimeout:
                raise WorkerTimeout(f"no answer within {limit(phase):.0f} s while in phase "
                                    f"'{phase}' (raise --timeout if it is just slow)") from None
            result = self._take(message, phase)
            if isinstance(result, WorkerResult):
                return result
            if message.get("type") == "phase":
                phase = message["phase"]
                deadline = time.monotonic() + limit(phase)
                on_phase(phase)

    def _take(self, message: dict, phase: str) -> WorkerResult | None:
        """The result when `message` is it; raises ForeignMessage for a line gpubench's
        worker code did not write at this point of the exchange."""
        if self.key is not None and message.get("type") == "result":
            if not self.key.opens(message):
                raise ForeignMessage(_foreign(message, phase))
            return WorkerResult.from_dict(message.get("result"))
        if not self.envelope.vouches_for(message) or message.get("type") == "result":
            raise ForeignMessage(self._stale(message) or _foreign(message, phase))
        if message.get("type") == "tampered":  # a FAIL needs no key: see protocol.py
            self.retired = True
            return WorkerResult(R.FAIL, str(message.get("error")))
        if message.get("type") == "done":
            self.retired = self.retired or bool(message.get("retire"))  # health.py
            if self.key is not None:
                raise ForeignMessage(f"'done' came twice during '{phase}': the variant "
                                     "played gpubench's result exchange itself")
            self.key = ResultKey(self.envelope.task.id)
            self.worker.send(self.key)
        return None

    def _stale(self, message: dict) -> str | None:
        """The reason when `message` is the previous task's "done": that task's variant
        answered for the worker, and its reported result was forged."""
        if self.previous is None or message.get("task") != self.previous.id:
            return None
        return (f"the worker's own 'done' for the previous task ({self.previous.label}) "
                f"came only now: that task's variant played gpubench's result exchange "
                f"itself, so its reported result was forged")


class ForeignMessage(Exception):
    """A line on the worker's private channel that gpubench's worker code did not write."""


def _foreign(message: dict, phase: str) -> str:
    if message.get("type") == GARBAGE:
        what = "a line that is not JSON"
    elif message.get("type") == "result":
        what = "a result without the one-time key gpubench sends once the task is done"
    else:
        what = "a message without this task's secret"
    sample = message.get("text") if message.get("type") == GARBAGE else message
    return (f"{what} appeared on gpubench's private result channel during '{phase}': the "
            f"variant (or something it ran) wrote to it, so nothing it reports can be "
            f"trusted ({str(sample)[:120]})")


def thread_env(threads: int) -> dict[str, str]:
    """Environment that caps a worker's CPU threads (torch reads it at import)."""
    return {"OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}


# A CPU worker's intra-op threads: one, as the C++ CPU versions a family ships are
# single-threaded loops, so the torch baseline they are compared with runs on what they
# run on. Two threads also wait on each other: on the busy 2-core machine torch.square of
# 2^16 floats took 8 ms a call on 2 threads (one waiting a scheduler slice for the other)
# against 3 us on 1, and the C++ loop read "1213x faster than PyTorch" (issue 52); idle,
# 1 thread was faster too at that size (2.97 against 4.31 us). GPUBENCH_CPU_THREADS sets
# another count (torch's speed on many cores, knowing the comparison is then uneven).
CPU_THREADS_ENV = "GPUBENCH_CPU_THREADS"


def cpu_threads(share: int) -> int:
    """A CPU worker's threads: CPU_THREADS_ENV's count (one unless it says otherwise, or
    says something that is no number), never more than `share`, the cores it may have."""
    try:
        asked = int(os.environ.get(CPU_THREADS_ENV, "1"))
    except ValueError:
        asked = 1
    return max(1, min(asked, share))


def cpu_slots(workers: int) -> list[Slot]:
    """`--workers N` on a CPU: N workers of cpu_threads each, the cores shared evenly."""
    check_cpu_workers(workers)
    threads = cpu_threads(max(1, (os.cpu_count() or 1) // workers))
    return [Slot("cpu", f"cpu:{index}", threads=threads) for index in range(workers)]


def check_cpu_workers(workers: int) -> None:
    """`--workers N` past the machine's cores is a usage error: each worker is a process
    that imports torch, so an absurd N (a typo, 99999999999) would fill the memory or hang
    making its list of workers; and more workers than cores only time each other."""
    from gpubench.errors import UsageError

    cores = os.cpu_count() or 1
    if workers > cores:
        raise UsageError(f"--workers {workers}: this machine has {cores} CPU cores; more "
                         f"workers than cores would time each other (use --workers "
                         f"{cores} or fewer)")


def choose_gpus(spec: str, visible: list[str]) -> list[str]:
    """`--devices all|0,2,3` against the GPUs this process sees (CUDA_VISIBLE_DEVICES
    entries, else 0..n-1): the chosen ones, in the order given, duplicates dropped."""
    from gpubench.errors import UsageError

    if not visible:
        raise UsageError("--devices needs CUDA GPUs and none is visible here; for "
                         "parallel CPU workers use --workers N")
    if spec.strip().lower() == "all":
        return list(visible)
    chosen = list(dict.fromkeys(item.strip() for item in spec.split(",") if item.strip()))
    unknown = [item for item in chosen if item not in visible]
    if unknown or not chosen:
        raise UsageError(f"--devices {spec}: no GPU {', '.join(unknown) or '(none named)'} "
                         f"here; visible: {', '.join(visible)} (or 'all')")
    return chosen


def visible_gpus() -> list[str]:
    """The GPUs this process may use, as CUDA_VISIBLE_DEVICES entries: that variable's
    own list when set (so `CUDA_VISIBLE_DEVICES=2,3 gpubench run --devices all` uses
    those two), else 0..count-1 as torch counts them."""
    listed = os.environ.get("CUDA_VISIBLE_DEVICES")
    if listed is not None:
        return [item.strip() for item in listed.split(",") if item.strip()]
    import torch

    return [str(index) for index in range(torch.cuda.device_count())]


def start_quietly(lane) -> None:
    """Start a lane's worker ahead of its first task; one that cannot start fails its
    first task instead (with the reason), not the run."""
    with contextlib.suppress(Exception):
        lane.start()
