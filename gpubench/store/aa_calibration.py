"""Where `ab --aa` keeps what each point of a family can resolve, per device model:
<cache>/aa/<model>/<family>.json, written by the calibration and read by every later `ab`
of that family on that model (analysis/aa.py says what the figures mean).

Per device model, not per machine: two H200s resolve alike, an H100 does not. A file that
cannot be read (damaged, from a newer gpubench) is no calibration: the A/B still decides,
only without the note.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from gpubench.analysis.aa import Calibration
from gpubench.build.cache import cache_base
from gpubench.files import atomic_write
from gpubench.records.strict_json import strict_dumps


def calibration_path(family: str, device_model: str) -> Path:
    """A file name from the names, with anything but letters, digits, '.', '_' and '-'
    replaced: a family or model name can never reach outside the folder."""
    def safe(name: str) -> str:
        return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._") or "_"

    return cache_base() / "aa" / safe(device_model) / f"{safe(family)}.json"


def save_calibration(family: str, device_model: str, found: list[Calibration]) -> Path:
    path = calibration_path(family, device_model)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, strict_dumps([c.to_dict() for c in found]) + "\n")
    return path


def load_calibration(family: str, device_model: str) -> dict[str, Calibration]:
    """The points' calibrations by label; {} when there is none or it cannot be read."""
    try:
        rows = json.loads(calibration_path(family, device_model).read_text())
        found = [Calibration.from_dict(row) for row in rows]
    except (OSError, ValueError, TypeError, KeyError, AttributeError):
        return {}
    return {c.label: c for c in found}
