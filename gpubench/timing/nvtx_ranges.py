"""NVTX ranges in gpubench's own domain, so nsys and `ncu --nvtx` can select its regions.

Ranges are named 'family/variant/size/dtype:phase' (phase: check, warmup,
measure:<mode>, trace). The executor sets the point's label once (`labelled`);
code below it, the timers included, marks its phases with `phase(name)`.
Without the `nvtx` package, or with NVTX_DISABLE=1, these are no-op context
managers; with it and no profiler attached, a push/pop costs well under a
microsecond.
"""

from __future__ import annotations

import contextlib
import contextvars

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


_label: contextvars.ContextVar[str] = contextvars.ContextVar("gpubench_label", default="")


@contextlib.contextmanager
def labelled(label: str):
    """Name the point being worked on ('square/cuda/1048576/float32') for nested phases."""
    token = _label.set(label)
    try:
        yield
    finally:
        _label.reset(token)


def phase(name: str):
    """A range 'label:name' for the current point; 'name' alone outside any point."""
    label = _label.get()
    return region(f"{label}:{name}" if label else name)
