"""A GPU worker's first uses, paid while it starts instead of inside its first points.

Each worker process pays some costs once, the first time a point needs them. One GPU pays
them once per run; N GPUs pay them N times, each inside a lane's span, so they cut the
speedup of a run on several GPUs. Measured in a fresh worker on an H200
(torch 2.11, triton 3.6, docs/journal/perf-notes.md "What a fresh worker pays"):

- Triton's import (113 modules) and `triton_key()`, its cache key's hash of Triton's
  sources and native library (0.42 s): the first Triton point took 1.09 s longer;
- torch.utils.cpp_extension's import (setuptools, distutils): the first C++ point +0.13 s.

Both are host work that needs no GPU, so a thread does them while the worker's main
thread imports torch, reads the device's facts and checks the ceilings (and while
`start_driver`'s thread, below, starts CUDA); `wait()` joins it before anything is sealed
or timed (worker.py), so no import runs beside a measurement. Started after torch's
import, the thread would outlast the main thread's start by 0.27-0.37 s on a 4-H200 host
(docs/journal/perf-notes.md), time every lane and one GPU alike would wait before the first
point; so it starts before torch's import.
A step that fails is left to the point that needs it, which reports the failure as it
always did.
"""

from __future__ import annotations

import contextlib
import importlib
import threading
import time

from gpubench.run import timeline


def _triton() -> None:
    importlib.import_module("triton")
    for where in ("triton.runtime.cache", "triton.compiler.compiler"):  # 3.3+, then older
        with contextlib.suppress(ImportError, AttributeError):
            importlib.import_module(where).triton_key()  # lru_cache'd: later calls are free
            return


def _cpp_extension() -> None:
    importlib.import_module("torch.utils.cpp_extension")


# (name, step, whether it imports torch). Triton's import imports no torch (3.x), so it
# can start before torch's; the C++ loader's waits for it: a thread that imported part of
# torch while the main thread imported the rest could meet it in a cycle of import locks.
STEPS = (("triton", _triton, False), ("cpp_extension", _cpp_extension, True))


class Prewarm:
    """STEPS on a daemon thread, started at once; `wait()` joins it.

    Started before torch's import (`torch_pending=True`, then `torch_imported()` once it
    is in), Triton's step runs beside that import: its key hashes Triton's native library
    (hundreds of MB) in 1 MB reads and hashlib updates, which leave the GIL, so only its
    module imports take turns with torch's."""

    def __init__(self, torch_pending: bool = False) -> None:
        self.seconds: dict[str, float] = {}
        self._torch = threading.Event()
        if not torch_pending:
            self._torch.set()
        self.thread = threading.Thread(target=self._run, name="gpubench-prewarm", daemon=True)
        self.thread.start()

    def torch_imported(self) -> None:
        """torch is imported: the steps that import it may run."""
        self._torch.set()

    def _run(self) -> None:
        for name, step, needs_torch in STEPS:
            if needs_torch:
                self._torch.wait()
            started = time.perf_counter()
            with contextlib.suppress(Exception):
                step()
            self.seconds[name] = time.perf_counter() - started
        timeline.mark("worker: prewarm done")

    def wait(self) -> str:
        """Join the thread; a line for the worker's log: what each step took."""
        started = time.perf_counter()
        self.thread.join()
        waited = time.perf_counter() - started
        steps = ", ".join(f"{name} {seconds:.2f} s" for name, seconds in self.seconds.items())
        return f"[gpubench worker] prewarm: {steps}; waited {waited:.2f} s for it"


def start_driver() -> threading.Thread:
    """The CUDA driver's start (cuInit, then the device's primary context: the context
    torch's runtime uses) on a thread, beside the worker's import of torch.

    Both are driver calls through ctypes, which releases the GIL, so they overlap the
    import. On a 4-H200 host (scripts/cuda_init_probe.py, docs/journal/perf-notes.md)
    cuInit takes 0.27 s alone and 0.8-1.5 s with four workers and the parent starting at
    once, and the first context 0.1-1.0 s: the worker's whole start after torch's import.
    torch finds the driver started and the context made, and uses both. A failure (no
    driver, no GPU) is left to torch, which reports it as it always did."""
    thread = threading.Thread(target=_driver, name="gpubench-cuda-driver", daemon=True)
    thread.start()
    return thread


_PRIMARY_CONTEXTS: list = []  # retained for the process's life, as torch's runtime does


def _driver() -> None:
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        driver = ctypes.CDLL("libcuda.so.1")
        if driver.cuInit(0) != 0:
            return
        device, context = ctypes.c_int(0), ctypes.c_void_p()
        if driver.cuDeviceGet(ctypes.byref(device), 0) == 0 and \
                driver.cuDevicePrimaryCtxRetain(ctypes.byref(context), device) == 0:
            _PRIMARY_CONTEXTS.append(context)
    timeline.mark("worker: CUDA driver and context ready")
