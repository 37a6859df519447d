"""NVTX ranges in gpubench's own domain, so nsys and `ncu --nvtx` can select its regions.

Ranges are named 'family/variant/size/dtype:phase'. Without the `nvtx` package,
or with NVTX_DISABLE=1, `region` is a no-op context manager; with it and no
profiler attached, a push/pop costs well under a microsecond.
"""

from __future__ import annotations

import contextlib

DOMAIN = "gpubench"

try:  # nvtx is a dependency, but the GPU image may lack it: never fail for it
    import nvtx as _nvtx
except ImportError:  # pragma: no cover - depends on the machine
    _nvtx = None


def region(name: str, color: str = "green"):
    """A context manager marking `name` in the gpubench domain (no-op without nvtx)."""
    if _nvtx is None:
        return contextlib.nullcontext()
    return _nvtx.annotate(name, color=color, domain=DOMAIN)


def available() -> bool:
    return _nvtx is not None
