"""RunDocument: one run — schema version, run metadata, environment, results — saved as
results.json (everything, strict JSON) and results.csv (flat rows), and loaded back.

Later features build on these files: `compare`, reports, merging shards. So the
JSON must round-trip (save -> load gives equal Results) and be strict: JSON has
no NaN or Infinity, and strict parsers refuse Python's bare `Infinity` token. A
non-finite number is written as null, and the dict holding it gets a
`_nonfinite` entry naming the key and the value (strict_json.py), which `load`
puts back.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from gpubench.errors import UsageError
from gpubench.records.result import Result
from gpubench.records.strict_json import restore_nonfinite, strict_dumps
from gpubench.timing.settings import TimingSettings

SCHEMA_VERSION = 2
RESULTS_JSON = "results.json"
RESULTS_CSV = "results.csv"
LATEST = "latest"


@dataclass(frozen=True)
class RunDocument:
    meta: dict  # run id, command, started/finished, wall_s, seed, timing settings, versions
    env: dict  # host and device facts: GPU, clocks, driver, torch/triton, ceilings
    results: tuple[Result, ...]
    schema: int = SCHEMA_VERSION

    # ------------------------------------------------------------ views

    @property
    def timing(self) -> TimingSettings:
        return TimingSettings.from_dict(self.meta.get("timing") or {})

    def by_key(self) -> dict[str, Result]:
        """point key text -> result: what joins two runs."""
        return {r.key.text(): r for r in self.results}

    def to_frame(self):
        """A pandas DataFrame, one row per result, one column per axis (and `shape`)."""
        import pandas as pd

        return pd.DataFrame([r.to_record() for r in self.results])

    def __repr__(self) -> str:
        counts = Counter(r.status for r in self.results)
        statuses = ", ".join(f"{n} {s}" for s, n in counts.most_common())
        where = self.env.get("gpu") or self.env.get("device") or "?"
        name = self.meta.get("run_id") or self.meta.get("run_dir", "")
        return f"<RunDocument {name}: {len(self.results)} results ({statuses}) on {where}>"

    # ------------------------------------------------------------ serialisation

    def to_dict(self) -> dict:
        return {"schema": self.schema, "meta": self.meta, "env": self.env,
                "results": [r.to_dict() for r in self.results]}

    def to_json(self) -> str:
        return strict_dumps(self.to_dict())

    @classmethod
    def from_dict(cls, data: dict) -> RunDocument:
        data = restore_nonfinite(data)
        schema = data.get("schema", 1)
        if schema > SCHEMA_VERSION:
            raise UsageError(f"results written by a newer gpubench (schema {schema}; this one "
                             f"reads up to {SCHEMA_VERSION}): upgrade gpubench")
        rows = data.get("results") or []
        if schema == 1:
            rows = [_upgrade_v1(row) for row in rows]
        return cls(meta=data.get("meta") or {}, env=data.get("env") or {},
                   results=tuple(Result.from_dict(row) for row in rows))

    def save(self, run_dir: Path) -> list[Path]:
        """Write results.json and results.csv atomically; returns [csv, json]."""
        run_dir = Path(run_dir)
        run_dir.mkdir(parents=True, exist_ok=True)
        json_path, csv_path = run_dir / RESULTS_JSON, run_dir / RESULTS_CSV
        atomic_write(json_path, self.to_json())
        atomic_write(csv_path, self.to_frame().to_csv(index=False))
        return [csv_path, json_path]

    @classmethod
    def load(cls, path: Path | str) -> RunDocument:
        file = Path(path)
        if file.is_dir():
            file = file / RESULTS_JSON
        try:
            text = file.read_text()
        except OSError as exc:
            raise UsageError(f"no run results at {file}: {exc.strerror or exc}") from None
        try:
            return cls.from_dict(json.loads(text))
        except (ValueError, KeyError, TypeError) as exc:
            raise UsageError(f"{file} is not a gpubench results file: {exc}") from None


# ---------------------------------------------------------------- files


def atomic_write(path: Path, text: str) -> None:
    """Write through a private temporary file in the same folder, then rename: readers
    never see half a file, and two writers never share a temporary name."""
    handle, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "w") as sink:
            sink.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def point_latest(base: Path, run_dir: Path) -> None:
    """Make base/latest name run_dir: a relative symlink, or a one-line file where the
    filesystem has no symlinks."""
    link = base / LATEST
    try:
        tmp = base / f".{LATEST}.{os.getpid()}"
        tmp.unlink(missing_ok=True)
        tmp.symlink_to(run_dir.name)
        os.replace(tmp, link)
    except OSError:
        atomic_write(link, run_dir.name + "\n")


def resolve_run(reference: str | Path, base: Path = Path("profiles")) -> Path:
    """A run folder from what a user types: a folder, a results.json, 'latest', or
    'latest~N' (the Nth run before the newest, by folder name, which starts with the
    UTC time the run began)."""
    text = str(reference)
    if text == LATEST or text.startswith(LATEST + "~"):
        back = _steps_back(text)
        runs = sorted((p for p in base.iterdir() if (p / RESULTS_JSON).is_file()
                       and not p.is_symlink()), key=lambda p: p.name) if base.is_dir() else []
        if back == 0 and (base / LATEST).exists():
            return _follow_latest(base)
        if len(runs) <= back:
            raise UsageError(f"'{text}': only {len(runs)} run(s) with results in {base}/")
        return runs[-1 - back]
    path = Path(reference)
    if path.name == RESULTS_JSON:
        path = path.parent
    if not (path / RESULTS_JSON).is_file():
        raise UsageError(f"no run results at {path} (expected {path / RESULTS_JSON})")
    return path


def _steps_back(text: str) -> int:
    suffix = text.removeprefix(LATEST).removeprefix("~") or "0"
    if not suffix.isdigit():
        raise UsageError(f"'{text}': expected latest or latest~N (N = runs back)")
    return int(suffix)


def _follow_latest(base: Path) -> Path:
    link = base / LATEST
    if link.is_symlink() or link.is_dir():
        return link.resolve()
    return base / link.read_text().strip()


def load_run(reference: str | Path = LATEST, base: Path | str = "profiles") -> RunDocument:
    """The run document of a run folder, a results.json, 'latest' or 'latest~N'."""
    return RunDocument.load(resolve_run(reference, Path(base)))


# ---------------------------------------------------------------- older files


def _upgrade_v1(row: dict) -> dict:
    """Schema 1 (gpubench 0.1, one integer size, measurement fields at the top level)."""
    row = dict(row)
    row.setdefault("shape", {"n": row.get("size")})
    if row.get("method") is not None or row.get("samples_s"):
        row["measurement"] = {
            "mode": row.get("mode", ""), "method": row.get("method"),
            "samples_s": row.get("samples_s") or [], "warmup_calls": row.get("warmup_calls"),
            "stop_reason": row.get("stop_reason"), "details": row.get("timing_details") or {},
            "clocks": row.get("clocks"), "recheck": row.get("recheck")}
    row.setdefault("build", {"compile_s": row.get("compile_s"),
                             "cached": row.get("compile_cached")})
    return row
