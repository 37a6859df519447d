"""Writing a run's results: results.csv (one flat row per point) and results.json.

JSON carries everything (environment, settings, raw samples, check details);
CSV is the flat view for pandas and spreadsheets. Both are rewritten after
every group, atomically, so a crash or Ctrl-C leaves the last complete state.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from pathlib import Path

from gpubench.results import Result

SCHEMA_VERSION = 1


def results_document(meta: dict, env: dict, results: list[Result]) -> dict:
    """The JSON document of a run. Pure."""
    return {
        "schema": SCHEMA_VERSION,
        "meta": meta,
        "env": env,
        "results": [r.to_json() for r in results],
    }


def write_results(run_dir: Path, meta: dict, env: dict, results: list[Result]) -> list[Path]:
    """Write results.json and results.csv into run_dir; returns the paths."""
    import pandas as pd

    run_dir.mkdir(parents=True, exist_ok=True)
    json_path, csv_path = run_dir / "results.json", run_dir / "results.csv"
    document = results_document(meta, env, results)
    _atomic_write(json_path, json.dumps(document, indent=2, default=str))
    frame = pd.DataFrame([r.to_record() for r in results])
    _atomic_write(csv_path, frame.to_csv(index=False))
    return [csv_path, json_path]


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


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
