"""A GPU worker's once-per-process first-use costs, paid while it waits for its first task.

Why: a worker pays Triton's start once, at its first Triton kernel: import, compiler and
backend modules, the launcher (0.7 s on the lent H200, a cached kernel; 0.5 s of it the
first launch: .before-style probe of 2026-11-27 in docs/journal/perf-notes.md). One GPU
pays it once per run; N GPUs pay it N times, once in every lane's span (the first Triton
point of each of 4 H200 lanes took +0.45-0.97 s against the same point on one GPU). A
worker is started before the parent has planned (prestart.py), and waits 0.3-1 s between
its hello and its first task: that is where it goes now, on a thread, by launching a
kernel of gpubench's own (kernel.py); the first task waits for what is left of it.

Only Triton: the profiler's first start costs more (~3.4 s) but 2 points of 177 in
configs/gpu-full.toml needed it (the kernel-count probe's fallback), so on most lanes it
would be paid for nothing. GPUBENCH_PREWARM=0 turns this off.
"""

from __future__ import annotations

import os
import threading
import time

ENV = "GPUBENCH_PREWARM"


class Prewarm:
    """Triton's first use on a thread of its own; `wait()` before the first task."""

    def __init__(self):
        self.seconds: float | None = None
        self.problem = ""
        self._thread: threading.Thread | None = None

    def start(self, has_triton: bool) -> None:
        if has_triton and os.environ.get(ENV, "1") != "0":
            self._thread = threading.Thread(target=self._warm, daemon=True,
                                            name="gpubench-prewarm")
            self._thread.start()

    def wait(self) -> str | None:
        """Join the thread (once); a line for the worker log, or None if nothing ran."""
        if self._thread is None:
            return None
        started = time.perf_counter()
        self._thread.join()
        self._thread = None
        waited = time.perf_counter() - started
        done = f"failed: {self.problem}" if self.problem else f"{self.seconds:.2f} s"
        return (f"[gpubench worker] prewarm (Triton's first launch): {done}; the first task "
                f"waited {waited:.2f} s for it")

    def _warm(self) -> None:
        started = time.perf_counter()
        try:
            from gpubench.run.prewarm.kernel import launch_once

            launch_once()
        except Exception as exc:  # a task that needs Triton meets the problem itself
            self.problem = f"{type(exc).__name__}: {exc}"[:200]
        self.seconds = time.perf_counter() - started
