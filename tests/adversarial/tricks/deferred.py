"""Work outside the timed window: handed to a thread, to another CUDA stream, or to a tensor
that computes when it is read. The call returns before the work is done; the output is
right by the time anyone looks."""

from __future__ import annotations

import threading
import time

import torch

# A helper thread with nothing to do for this long exits: long enough to outlive the task
# that started it (a harness that checks for threads left running sees it), short enough
# that it does not linger into the rest of the run.
IDLE_EXIT_S = 1.0


class Helper:
    """One background thread doing the newest job handed to it (older ones are dropped:
    a timing loop hands over thousands, and the answer is the same)."""

    def __init__(self, delay_s: float):
        self.delay_s = delay_s
        self.lock = threading.Condition()
        self.job = None
        self.thread: threading.Thread | None = None

    def hand_over(self, job) -> None:
        with self.lock:
            self.job = job
            self.lock.notify()
            if self.thread is None or not self.thread.is_alive():
                self.thread = threading.Thread(target=self._loop, daemon=True,
                                               name="adversarial-helper")
                self.thread.start()

    def _loop(self) -> None:
        while True:
            with self.lock:
                if self.job is None and not self.lock.wait(IDLE_EXIT_S):
                    return
                job, self.job = self.job, None
            if job is not None:
                time.sleep(self.delay_s)
                job()


# 20 ms: far longer than the check takes to read the output after the call returns (< 1 ms
# for the suite's sizes), so the check always sees the poison, never a race.
_late = Helper(delay_s=0.02)


def thread_later(a, b, out):
    """Hands the work to a background thread and returns; the output is written ~20 ms
    later, after the check has looked (caught today, kept as a regression test)."""
    _late.hand_over(lambda: torch.matmul(a, b, out=out))


_soon = Helper(delay_s=0.0)


def _looks_written(out) -> bool:
    """Whether `out` holds an earlier answer: the harness's NaN poison is not at element 0."""
    return not bool(torch.isnan(out.reshape(-1)[0]).item())


def thread_when_written(a, b, out):
    """Computes at once when the output looks poisoned (the check); when it looks written
    already (a timed call after the first), hands the work to a thread and returns."""
    if not _looks_written(out):
        torch.matmul(a, b, out=out)
        return
    _soon.hand_over(lambda: torch.matmul(a, b, out=out))


class LazyProduct(torch.Tensor):
    """A tensor that holds no answer until something reads it: any torch operation on it
    (the harness's comparison included) computes a @ b into it first."""

    @staticmethod
    def __new__(cls, a, b):
        shell = torch.empty(a.shape[0], b.shape[1], dtype=a.dtype, device=a.device)
        lazy = torch.Tensor._make_subclass(cls, shell)
        lazy._pending = (a, b)
        return lazy

    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        with torch._C.DisableTorchFunctionSubclass():
            for arg in args:
                pending = getattr(arg, "_pending", None) if isinstance(arg, LazyProduct) else None
                if pending is not None:
                    arg._pending = None
                    torch.matmul(*pending, out=arg.as_subclass(torch.Tensor))
            return func(*args, **(kwargs or {}))


def lazy_subclass(a, b):
    """Returns a torch.Tensor subclass that computes only when read: the timed call costs an
    allocation; the work happens inside the harness's check, outside the timed window."""
    return LazyProduct(a, b)


_other_streams: dict = {}


def other_stream(a, b, out):
    """GPU: launches the work on another CUDA stream and returns without joining it back:
    the caller's stream (and events recorded on it) sees an empty call."""
    stream = _other_streams.setdefault(a.device, torch.cuda.Stream(a.device))
    with torch.cuda.stream(stream):
        torch.matmul(a, b, out=out)
