"""Strict JSON: no NaN or Infinity tokens, which strict parsers (jq, JavaScript, Python's
json with parse_constant) refuse, yet nothing lost.

A non-finite float becomes null, and the dict that holds it (directly, or in a list it
holds) gets a `_nonfinite` entry naming the key and the value: {"max_abs_err": null,
"_nonfinite": {"max_abs_err": "inf"}}. restore_nonfinite() reverses it.
"""

from __future__ import annotations

import json
import math

NONFINITE_KEY = "_nonfinite"


def strict_dumps(document) -> str:
    """JSON with no NaN/Infinity tokens; refuses (ValueError) anything that slipped through."""
    return json.dumps(mark_nonfinite(document), indent=2, default=str, allow_nan=False)


def mark_nonfinite(value):
    """A copy where every non-finite float is None, noted in its dict's `_nonfinite`."""
    if isinstance(value, dict):
        out, notes = {}, {}
        for key, item in value.items():
            if isinstance(item, float) and not math.isfinite(item):
                out[key], notes[str(key)] = None, _name(item)
            elif isinstance(item, list | tuple) and _has_nonfinite(item):
                out[key] = [None if _bad(x) else mark_nonfinite(x) for x in item]
                for index, x in enumerate(item):
                    if _bad(x):
                        notes[f"{key}[{index}]"] = _name(x)
            else:
                out[key] = mark_nonfinite(item)
        if notes:
            out[NONFINITE_KEY] = notes
        return out
    if isinstance(value, list | tuple):
        return [None if _bad(x) else mark_nonfinite(x) for x in value]
    return value


def restore_nonfinite(value):
    """The inverse of mark_nonfinite."""
    if isinstance(value, list):
        return [restore_nonfinite(x) for x in value]
    if not isinstance(value, dict):
        return value
    out = {k: restore_nonfinite(v) for k, v in value.items() if k != NONFINITE_KEY}
    for where, name in (value.get(NONFINITE_KEY) or {}).items():
        number = float(name)
        key, _, index = where.partition("[")
        if index and isinstance(out.get(key), list):
            out[key][int(index.rstrip("]"))] = number
        else:
            out[where] = number
    return out


def _bad(x) -> bool:
    return isinstance(x, float) and not math.isfinite(x)


def _has_nonfinite(items) -> bool:
    return any(_bad(x) for x in items)


def _name(x: float) -> str:
    return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")
