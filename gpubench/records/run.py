"""RunDocument: one run — schema version, run metadata, environment, results — as the
dicts and strict JSON of results.json, and back. Pure: the files themselves (results.json,
results.csv, 'latest') are written in store/folder.py and read in store/results_file.py.

Later features build on these files: `compare`, reports, merging shards. So the
JSON must round-trip (save -> load gives equal Results) and be strict: JSON has
no NaN or Infinity, and strict parsers refuse Python's bare `Infinity` token. A
non-finite number is written as null, and the dict holding it gets a
`_nonfinite` entry naming the key and the value (strict_json.py), which reading
(`upgrade`, before the codec decodes the rest) puts back.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

from gpubench.codec import Record
from gpubench.records.ab import PairVerdict, pairs_of_run
from gpubench.records.completeness import incomplete_of
from gpubench.records.result import Result
from gpubench.records.strict_json import restore_nonfinite, strict_dumps
from gpubench.timing.settings import TimingSettings

SCHEMA_VERSION = 2
# How meta says when a run started and finished (time.strftime), and how history reads it.
TIME_FORMAT = "%Y-%m-%dT%H:%M:%S%z"


class NewerSchema(ValueError):
    """Results written by a newer gpubench than this one: upgrading is the fix."""


@dataclass(frozen=True)
class RunDocument(Record):
    WRITTEN = ("schema", "meta", "env", "results")  # the file's order, older than the fields'

    meta: dict  # run id, command, started/finished, wall_s, seed, timing settings, versions
    env: dict  # host and device facts: GPU, clocks, driver, torch/triton, ceilings
    results: tuple[Result, ...]
    schema: int = SCHEMA_VERSION

    # ------------------------------------------------------------ views

    @property
    def incomplete(self) -> str | None:
        """Why this run lacks some of its planned points (records/completeness.py), or None."""
        return incomplete_of(self.meta)

    @property
    def pairs(self) -> tuple[PairVerdict, ...]:
        """An A/B run's verdicts (records/ab.PairVerdict), one per point and mode; () for
        any other run."""
        return pairs_of_run(self.meta)

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

    def to_json(self) -> str:
        return strict_dumps(self.to_dict())

    @classmethod
    def upgrade(cls, data: Mapping) -> dict:
        """results.json as today's fields read it: its non-finite numbers put back, a
        schema-1 file's rows upgraded; refused when its results are no list (null, or a
        missing list, would load as a run that measured nothing) or a newer gpubench
        wrote it (NewerSchema)."""
        data = restore_nonfinite(dict(data))
        schema = data.get("schema", 1)
        if not isinstance(data.get("results"), list):
            raise ValueError(f"'results' is {_json_kind(data, 'results')}, not a list")
        if schema > SCHEMA_VERSION:
            raise NewerSchema(f"results written by a newer gpubench (schema {schema}; this one "
                             f"reads up to {SCHEMA_VERSION}): upgrade gpubench")
        rows = data["results"]
        if schema == 1:
            rows = [_upgrade_v1(row) for row in rows]
        return {**data, "schema": SCHEMA_VERSION, "meta": data.get("meta") or {},
                "env": data.get("env") or {}, "results": rows}


def _json_kind(data: dict, key: str) -> str:
    if key not in data:
        return "missing"
    return "null" if data[key] is None else f"a {type(data[key]).__name__}"


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
