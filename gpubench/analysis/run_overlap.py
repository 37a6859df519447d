"""Why two runs share no point: which families, variants, dtypes, shapes and modes one run
has and the other lacks, in one line.

`gpubench compare` of runs with nothing in common has no verdict to give, and a CI gate
must not read "0 points" as green: the command stops with a usage error (exit 2) whose
message is this line, so the user sees at once that NEW ran float32 where BASE ran float16,
or another size, rather than a table with nothing in it. Pure: point keys in, words out.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

# Axes in the order a reader checks them; variants are named only when they differ (two
# runs of one family usually share them, so "variants match" would be noise).
AXES = (("family", "families"), ("variant", "variants"), ("dtype", "dtypes"),
        ("shape", "shapes"), ("mode", "modes"))
ALWAYS_SAID = frozenset({"families", "dtypes", "shapes", "modes"})
# More values than this are cut to '+N more': one line, even for a sweep of 40 shapes.
MAX_LISTED = 4


def _value(key, axis: str) -> str:
    return key.shape.label() if axis == "shape" else str(getattr(key, axis))


def what_differs(base_keys: Iterable, new_keys: Iterable) -> str:
    """'BASE has dtype float16, NEW has float32; families, shapes, modes match' for two sets
    of PointKeys (records/point.py) that share no point."""
    base_keys, new_keys = list(base_keys), list(new_keys)
    if not base_keys or not new_keys:
        return f"{'BASE' if not base_keys else 'NEW'} has no results"
    differing, matching = [], []
    for axis, plural in AXES:
        base = list(dict.fromkeys(_value(k, axis) for k in base_keys))
        new = list(dict.fromkeys(_value(k, axis) for k in new_keys))
        if set(base) == set(new):
            matching.append(plural)
        else:
            differing.append(_difference(axis, base, new))
    matched = [p for p in matching if p in ALWAYS_SAID]
    if not differing:
        return (f"each of their {', '.join(matched)} appears in both, but no combination "
                "of them does")
    tail = f"; {', '.join(matched)} match" if matched else ""
    return "; ".join(differing) + tail


def _difference(axis: str, base: Sequence[str], new: Sequence[str]) -> str:
    """'BASE has dtype float16, NEW has float32' when the sets are disjoint, else what each
    run has that the other lacks: 'shape n=2^20 only in BASE, n=2^22 / n=2^24 only in NEW'."""
    if not set(base) & set(new):
        return f"BASE has {axis} {_listed(base)}, NEW has {_listed(new)}"
    parts = [f"{_listed(only)} only in {side}" for side, only in
             (("BASE", [v for v in base if v not in new]),
              ("NEW", [v for v in new if v not in base])) if only]
    return f"{axis} " + ", ".join(parts)


def _listed(values: Sequence[str]) -> str:
    """'float16 / bfloat16': ' / ' keeps a list apart from the ', ' between the runs (a
    shape's label has spaces of its own: 'M=16 N=4096 K=4096')."""
    shown = " / ".join(values[:MAX_LISTED])
    return shown + (f" +{len(values) - MAX_LISTED} more" if len(values) > MAX_LISTED else "")
