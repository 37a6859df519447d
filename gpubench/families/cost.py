"""A family's napkin math (`flops`, `bytes_moved`) for one point, evaluated so that a spec
whose cost model breaks cannot take a run down with it.

These callables are the spec's own code, run in gpubench's process. Evaluated while the
points are planned (on the main thread, before any worker starts), every failure becomes
the reason of that point alone: an exception, a value that is not a number (a string
would reach the tables as text, or abort a lane thread later), NaN or infinity (shown as
a rate), or a negative count (a negative GB/s). The point is then recorded ERROR with that
reason and not run; the family's other points run as usual.
"""

from __future__ import annotations

import math
import traceback
from dataclasses import dataclass
from pathlib import Path

from gpubench.families.interrupts import sigint_watch

# The cost model, as the spec names its parts (the error says which one failed).
WHAT = {"flops": "floating-point operations", "bytes_moved": "bytes moved"}


@dataclass(frozen=True)
class Cost:
    """One point's napkin math, or why there is none."""

    flops: float | None = None
    bytes_moved: float | None = None
    error: str | None = None


def cost_of(family, shape, itemsize: int) -> Cost:
    """flops and bytes_moved of `family` at `shape`; never raises for the spec's faults."""
    if getattr(family, "cost_unknown", False):  # no cost model (a leaderboard problem):
        return Cost()  # its rates and roofline are shown as unknown, not as 0
    arg = shape[family.axes[0].name] if family.legacy else shape
    where = shape.text() if hasattr(shape, "text") else str(shape)
    try:
        flops = _number(family, "flops", where, lambda: family.flops(arg))
        moved = _number(family, "bytes_moved", where,
                        lambda: family.bytes_moved(arg, itemsize))
    except _Broken as broken:
        return Cost(error=str(broken))
    return Cost(flops, moved)


class _Broken(Exception):
    """The cost model failed at this point: the message is the point's ERROR reason."""


def _number(family, name: str, where: str, call) -> float:
    """The callable's value as a finite count >= 0, or _Broken saying what went wrong."""
    label = f"the family's cost model: {name}({where})"
    with sigint_watch() as pressed:
        try:
            value = call()
        except (Exception, SystemExit, KeyboardInterrupt) as exc:
            if isinstance(exc, KeyboardInterrupt) and pressed():
                raise  # a real Ctrl-C while planning
            raise _Broken(f"{label} raised {_what(exc, family)}") from None
    if isinstance(value, str | bytes | bool) or value is None:
        raise _Broken(f"{label} returned {_shown(value)}, not a number: it must return the "
                      f"{WHAT[name]} of one call")
    try:
        number = float(value)
    except (TypeError, ValueError, OverflowError, RuntimeError):
        raise _Broken(f"{label} returned {_shown(value)}, not a number: it must return the "
                      f"{WHAT[name]} of one call") from None
    if not math.isfinite(number) or number < 0:
        raise _Broken(f"{label} returned {number!r}: the {WHAT[name]} of one call must be a "
                      "finite number >= 0")
    return number


def _shown(value) -> str:
    text = repr(value)
    text = text if len(text) <= 60 else text[:57] + "..."
    return f"{text} (a {type(value).__name__})"


def _what(exc: BaseException, family) -> str:
    """'ValueError: message (spec.py line 20)': the innermost frame in the family's folder."""
    message = str(exc).splitlines()[0] if str(exc) else ""
    text = f"{type(exc).__name__}: {message}" if message else type(exc).__name__
    folder = Path(family.directory).resolve() if family.directory else None
    line = None
    for frame in traceback.extract_tb(exc.__traceback__):
        if folder is not None and Path(frame.filename).resolve().parent == folder:
            line = f"{Path(frame.filename).name} line {frame.lineno}"
    return f"{text} ({line})" if line else text
