"""Persisting L2 lines: what a variant can set aside so that its data survives the flush.

Since Ampere a program may reserve part of L2 for "persisting" accesses
(cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, n) plus an access-policy
window on a stream or a graph node). Lines marked persisting are evicted last,
so the cold-mode flush (a read of 2x L2) leaves them in place and the variant's
next call hits L2: a cold time that is really a warm one. Before each flush the
timers therefore return persisting lines to normal (cudaCtxResetPersistingL2Cache)
whenever the limit is non-zero.

The CUDA runtime that torch loaded is reached through ctypes: the libcudart
mapped into this process (/proc/self/maps), or else the driver (libcuda, the same
calls on the current context, which is the runtime's primary context). The limit
query is a host call that reads a context field (about a microsecond, no device
synchronisation), cheap beside the ~35-40 us flush it precedes.
"""

from __future__ import annotations

import ctypes
import os
from dataclasses import dataclass

# driver_types.h: cudaLimitPersistingL2CacheSize = 0x06; cuda.h:
# CU_LIMIT_PERSISTING_L2_CACHE_SIZE = 0x06 (checked against CUDA 13.0's headers).
PERSISTING_L2_LIMIT = 0x06


@dataclass
class L2Calls:
    """The two calls, from the runtime (cuda*) or the driver (cu*); both return 0 on success."""

    get_limit: object  # (size_t*, limit) -> status
    reset: object  # () -> status
    source: str


class PersistingL2:
    """Resets persisting L2 lines before a flush when a variant reserved any."""

    def __init__(self, calls: L2Calls | None = None):
        self.calls = calls if calls is not None else find_calls()
        self.resets = 0  # flushes preceded by a reset: the measurement's details say so

    def limit_bytes(self) -> int:
        """The persisting-L2 limit now (0 when unknown: no library, or the call failed)."""
        if self.calls is None:
            return 0
        value = ctypes.c_size_t(0)
        if self.calls.get_limit(ctypes.byref(value), PERSISTING_L2_LIMIT) != 0:
            return 0
        return int(value.value)

    def reset_if_reserved(self) -> bool:
        """Return persisting lines to normal if the limit is set; whether it did."""
        if self.limit_bytes() == 0:
            return False
        if self.calls.reset() == 0:
            self.resets += 1
            return True
        return False


def find_calls() -> L2Calls | None:
    """The runtime's calls from the libcudart already loaded here, else the driver's;
    None when neither library can be opened (a CPU machine)."""
    for path in _loaded_libraries("libcudart"):
        calls = _runtime_calls(path)
        if calls is not None:
            return calls
    return _driver_calls()


def _loaded_libraries(stem: str) -> list[str]:
    """Paths of mapped shared objects whose file name starts with `stem`."""
    try:
        with open("/proc/self/maps") as maps:
            paths = {line.split()[-1] for line in maps if ".so" in line}
    except OSError:
        return []
    return sorted(path for path in paths if os.path.basename(path).startswith(stem))


def _runtime_calls(path: str) -> L2Calls | None:
    try:
        library = ctypes.CDLL(path)
        return _typed(library.cudaDeviceGetLimit, library.cudaCtxResetPersistingL2Cache,
                      f"runtime {os.path.basename(path)}")
    except (OSError, AttributeError):
        return None


def _driver_calls() -> L2Calls | None:
    try:
        library = ctypes.CDLL("libcuda.so.1")
        return _typed(library.cuCtxGetLimit, library.cuCtxResetPersistingL2Cache, "driver")
    except (OSError, AttributeError):
        return None


def _typed(get_limit, reset, source: str) -> L2Calls:
    get_limit.argtypes = [ctypes.POINTER(ctypes.c_size_t), ctypes.c_int]
    get_limit.restype = ctypes.c_int
    reset.argtypes = []
    reset.restype = ctypes.c_int
    return L2Calls(get_limit, reset, source)
