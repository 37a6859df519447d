"""After each task, in the worker: did the variant tamper with the process it ran in?

Three signs, each making the task FAIL with what was found, after which the worker
restores what it can and exits, so that no later variant runs in a tampered
process (the parent starts a fresh worker; see gpubench/run/worker/process.py):
- a sealed binding replaced (gpubench/run/worker/seal.py): a patched checker, timer or clock;
- a callable attribute of one of gpubench's live objects (the executor, its timers
  and their CudaSupport) that is not gpubench's own nor a captured original: a
  HostTimer's `clock` found through `gc` and swapped;
- Python threads the task started and left running: work, or tampering, that goes
  on after the call returned. Threads gpubench starts are marked (`gpubench_owned`,
  see gpubench/timing/clocks.py) and not counted.
"""

from __future__ import annotations

import os
import threading
import types
from pathlib import Path

from gpubench.run.worker.seal import Seal, is_gpubench_module
from gpubench.run.worker.signal_guard import SignalGuard
from gpubench.timing import pristine

PACKAGE = str(Path(__file__).resolve().parents[2]) + os.sep  # .../gpubench/
# Marks a thread gpubench started (the clock watcher): not the variant's.
OWNED = "gpubench_owned"
# Threads named in a verdict, at most; the count says how many there were.
MAX_NAMED_THREADS = 5


class Watch:
    """What to compare after a task: the seal (taken once) and the threads before it."""

    def __init__(self, seal: Seal, guard: SignalGuard | None = None):
        self.seal, self.guard = seal, guard
        self.threads_before: set[threading.Thread] = set()

    def before_task(self) -> None:
        self.threads_before = set(threading.enumerate())

    def verdict(self, executor) -> str | None:
        """Why the task's process can no longer be trusted (None: it can). Restores the
        sealed bindings when they were replaced."""
        reasons = []
        replaced = self.seal.broken() + foreign_attributes(gpubench_objects(executor))
        if replaced:
            self.seal.restore()
            reasons.append("variant code replaced " + ", ".join(replaced))
        if self.guard is not None:
            reasons += self.guard.take_attempts()
        left = left_threads(self.threads_before)
        if left:
            names = ", ".join(thread.name for thread in left[:MAX_NAMED_THREADS])
            reasons.append(f"left {len(left)} thread(s) running: {names}")
        return "; ".join(reasons) or None

    def after_clean_task(self) -> None:
        """Seal gpubench modules the task imported (timers are imported on first use)."""
        self.seal.extend()


def left_threads(before: set[threading.Thread]) -> list[threading.Thread]:
    """Threads alive now that were not before, gpubench's own and torch.compile's excepted."""
    library = compile_pool_threads()
    return [thread for thread in threading.enumerate()
            if thread not in before and thread.is_alive() and not getattr(thread, OWNED, False)
            and thread not in library]


def compile_pool_threads() -> set[threading.Thread]:
    """The threads of torch.compile's compile pool (torch._inductor's AsyncCompile.pool(),
    made once per process and kept by design): a variant that calls torch.compile, as
    GPU MODE's leaderboard solutions do, starts them on its first call. They run inductor's
    compile jobs, not the variant's code; a variant could still hand that pool work of its
    own, which this leaves unseen (docs/guide.md, 'Leaderboard problems')."""
    import sys

    module = sys.modules.get("torch._inductor.async_compile")
    pool = getattr(getattr(module, "AsyncCompile", None), "pool", None)
    try:
        if pool is None or not pool.cache_info().currsize:
            return set()
        return set(getattr(pool(), "_threads", ()))
    except Exception:  # another torch: its pool is not known, its threads count
        return set()


def gpubench_objects(executor) -> list[object]:
    """The executor and the long-lived objects it times with: its timers and what they
    share (CudaSupport and its persisting-L2 helper)."""
    objects = [executor, *executor.timers.values(), *executor.shared.values()]
    return objects + [value for item in list(objects) for value in vars(item).values()
                      if _is_gpubench_instance(value)]


def foreign_attributes(objects: list[object]) -> list[str]:
    """'HostTimer.clock' for each callable instance attribute that is neither gpubench's
    own code nor a reference captured before any variant ran."""
    trusted = {id(value) for value in pristine.captured().values()}
    found = []
    for item in objects:
        for name, value in vars(item).items():
            if callable(value) and id(value) not in trusted and not _is_gpubench_code(value):
                found.append(f"{type(item).__name__}.{name}")
    return found


def _is_gpubench_code(value) -> bool:
    """A function, method or class whose code lives in gpubench's package folder."""
    if isinstance(value, types.MethodType):
        value = value.__func__
    if isinstance(value, types.FunctionType):
        return value.__code__.co_filename.startswith(PACKAGE)
    if isinstance(value, type):
        return is_gpubench_module(value.__module__)
    return _is_gpubench_instance(value)  # a callable gpubench object


def _is_gpubench_instance(value) -> bool:
    return is_gpubench_module(type(value).__module__) and hasattr(value, "__dict__")
