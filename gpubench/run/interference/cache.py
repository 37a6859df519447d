"""A recent interference reference, reused: what these GPUs do to each other is a fact of
the machine, like its ceilings, not of the kernels a run measures.

Why: the reference (interference_timing.py) costs a several-GPU run its time before the
first point: 1.65 s on 2 H100s, 2.3 s through Dask, 2.7 s on 4 H200s (warm
runs of configs/gpu-full.toml), a tenth of a 28 s warm 4-GPU run, paid again at every
edit of an edit-measure loop. What it measures (shared power, cooling and host cores)
changes with the machine and with how the run is spread over it, so the samples are kept
per host, set of GPUs (by UUID), kind and number of lanes, driver, torch and reference
(key_for), and reused for GPUBENCH_INTERFERENCE_MAX_AGE_S (MAX_AGE_S); 0 measures every
time. The run's record and its summary line say that they were reused, measured by which
run and how long before. CPU workers always measure: their contention is with whatever
else runs on the machine, which changes by the minute.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

from gpubench.build.cache import cache_base
from gpubench.files import atomic_write
from gpubench.timing.envinfo import gpubench_version, nvml_gpu_facts

# An hour: a warm rerun or an edit-measure loop comes back within minutes, and the
# machine's state that matters here (which GPUs, driver, what shares them) is in the key;
# ambient drift over an hour is below the reference's 1% bar.
MAX_AGE_S = 3600.0
MAX_AGE_ENV = "GPUBENCH_INTERFERENCE_MAX_AGE_S"

Samples = dict[tuple[str, str], list[float]]  # (device_id, reference) -> seconds


@dataclass(frozen=True)
class Recorded:
    """Samples of an earlier run, keyed by GPU UUID instead of that run's device ids."""

    alone: Samples
    together: Samples
    measured_at: float  # time.time()
    run_id: str
    beside_builds: int = 0  # builds that compiled while it was measured (a cold run's)

    def samples_for(self, ids: dict[str, str]) -> tuple[Samples, Samples]:
        """(alone, together) under this run's device ids; `ids`: UUID -> device id."""
        def renamed(samples):
            return {(ids[uuid], label): values for (uuid, label), values in samples.items()
                    if uuid in ids}
        return renamed(self.alone), renamed(self.together)

    def describe(self, now: float) -> str:
        """Where the samples come from (Interference.source); the builds they were measured
        beside travel as a count of their own (beside_builds)."""
        return f"reused: measured {now - self.measured_at:.0f} s before, by run {self.run_id}"


def max_age_s(environ=os.environ) -> float:
    """How old a reused reference may be; a value that is not a number counts as 0
    (measure), so that a typo never reuses more than asked."""
    try:
        return max(0.0, float(environ.get(MAX_AGE_ENV, MAX_AGE_S)))
    except ValueError:
        return 0.0


def gpu_ids(facts: list[dict]) -> dict[str, str] | None:
    """UUID -> device id of each lane's GPU; None unless every lane has a GPU with one."""
    ids = {f.get("gpu_uuid"): f.get("device_id") for f in facts}
    if len(ids) != len(facts) or not all(ids) or not all(ids.values()):
        return None
    return ids


def key_for(facts: list[dict], lane_kind: str, reference: str) -> str | None:
    """The cache key of a run's lanes (their workers' device facts), or None when they
    cannot be told apart from another machine's (a lane without a GPU UUID)."""
    if gpu_ids(facts) is None:
        return None
    first = facts[0]
    parts = [first.get("host", ""), lane_kind, str(len(facts)),
             *sorted(f["gpu_uuid"] for f in facts), first.get("driver", ""),
             first.get("torch", ""), gpubench_version(), reference]
    return hashlib.sha256("\n".join(map(str, parts)).encode()).hexdigest()[:24]


def early_facts(lanes: int) -> list[dict] | None:
    """What key_for reads of the lanes' GPUs (host, driver, torch, UUIDs), from NVML and
    this process, before any worker has said hello; None unless the run's `lanes` are
    every GPU of this machine, one each (no CUDA_VISIBLE_DEVICES: NVML lists every GPU
    whatever CUDA is shown), so that their UUIDs are NVML's whichever lane has which.

    Why: a reused reference needs no lane, but a key from every worker's facts would make
    every lane wait for the slowest worker's start: on 4 H200s the first two workers are
    ready 0.6-0.7 s before the last, 1.5 s of lane time (docs/journal/perf-notes.md)."""
    if os.environ.get("CUDA_VISIBLE_DEVICES") is not None:
        return None
    found = nvml_gpu_facts()
    if not found or len(found) != lanes or len({f["gpu_uuid"] for f in found}) != lanes:
        return None
    return [{**facts, "device_id": f"nvml:{index}"} for index, facts in enumerate(found)]


def _path(key: str) -> Path:
    return cache_base() / "interference" / f"{key}.json"


def recent(key: str, now: float, max_age: float) -> Recorded | None:
    """The samples kept under `key` if measured within `max_age` seconds; None if not, or
    if the file cannot be read (then the run measures, as without a cache)."""
    if max_age <= 0:
        return None
    try:
        data = json.loads(_path(key).read_text())
        recorded = Recorded(_unpacked(data["alone"]), _unpacked(data["together"]),
                            float(data["measured_at"]), str(data["run_id"]),
                            int(data.get("beside_builds", 0)))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return recorded if 0 <= now - recorded.measured_at <= max_age else None


def store(key: str, alone: Samples, together: Samples, ids: dict[str, str],
          run_id: str, beside_builds: int = 0) -> None:
    """Keep a run's samples under `key`, by GPU UUID; written whole (rename) or not at all:
    a cache that cannot be written costs only the next run's measurement."""
    uuids = {device: uuid for uuid, device in ids.items()}
    data = {"measured_at": time.time(), "run_id": run_id, "beside_builds": beside_builds,
            "alone": _packed(alone, uuids), "together": _packed(together, uuids)}
    path = _path(key)
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(path, json.dumps(data))


def _packed(samples: Samples, uuids: dict[str, str]) -> list:
    return [[uuids[device], label, values] for (device, label), values in samples.items()
            if device in uuids]


def _unpacked(rows: list) -> Samples:
    return {(str(uuid), str(label)): [float(v) for v in values]
            for uuid, label, values in rows}
