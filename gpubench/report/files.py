"""Where a run's files go: profiles/<UTC time>-<families>, one folder per run.

The run document itself (results.json, results.csv) is written by
gpubench/run/folder.py, which also reads it back.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path


def new_run_dir(base: Path, families: list[str]) -> Path:
    """profiles/<UTC timestamp>-<families>, made unique."""
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%d-%H%M%S")
    label = "-".join(families)[:40] or "run"
    candidate = base / f"{stamp}-{label}"
    suffix = 2
    while candidate.exists():
        candidate = base / f"{stamp}-{label}-{suffix}"
        suffix += 1
    return candidate
