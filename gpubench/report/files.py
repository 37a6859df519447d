"""Where a run's files go: profiles/<UTC time>-<families>, one folder per run.

The run document itself (results.json, results.csv) is written by
gpubench/store/folder.py and read back by gpubench/store/results_file.py.
"""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

# A family's name is its folder's: any character. The run folder's name keeps only
# these, so it is safe to print, type and glob ('x<!--<script>' -> 'x_____script_').
_UNSAFE_IN_NAME = re.compile(r"[^A-Za-z0-9_.+-]")


def new_run_dir(base: Path, families: list[str]) -> Path:
    """profiles/<UTC timestamp>-<families>, made unique."""
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%d-%H%M%S")
    label = _UNSAFE_IN_NAME.sub("_", "-".join(families))[:40].lstrip(".-") or "run"
    candidate = base / f"{stamp}-{label}"
    suffix = 2
    while candidate.exists():
        candidate = base / f"{stamp}-{label}-{suffix}"
        suffix += 1
    return candidate
