"""WorkerResult: what a worker did with one task — the return trip, typed once.

The trip out is a Task (point.py); the trip back is this: the status, the error,
how the build went, the check, one Measurement per timing mode and what one call
runs on the device. The worker builds it once (run/worker/execute.py); it crosses the
pipe (or Dask) as `to_dict()` and is rebuilt whole with `from_dict()` (the codec's, with
`upgrade` checking the message), which refuses a dict it does not recognise rather than
guessing: the dict comes from
gpubench's own worker code (the protocol's secret vouches for that), so an
unknown or missing key is a version mismatch or a bug, and a PASS must never be
read out of it. The runner turns it into Results, one per mode (runner.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from gpubench.codec import Record
from gpubench.records.build_info import BuildInfo
from gpubench.records.error_site import SiteEvidence
from gpubench.records.result import BUILD_ERROR, CRASHED, ERROR, FAIL, OK, SKIPPED
from gpubench.timing.check_result import CheckResult
from gpubench.timing.device_work import DeviceWork
from gpubench.timing.measurement import Measurement
from gpubench.timing.paired import PairedTiming

# What a worker can say of a task; TIMEOUT and the like are the parent's verdicts. SKIPPED:
# what the variant needs failed on this machine, not the variant (torch.compile with no
# C++ compiler for Inductor: families/compiled.py).
WORKER_STATUSES = frozenset({OK, FAIL, ERROR, BUILD_ERROR, CRASHED, SKIPPED})


class MalformedWorkerResult(ValueError):
    """A worker's result dict that is not a WorkerResult's."""


@dataclass(frozen=True)
class WorkerResult(Record):
    status: str
    error: str | None = None
    build: BuildInfo = field(default_factory=BuildInfo)
    check: CheckResult | None = None  # the first call's output against the reference
    measurements: Mapping[str, Measurement] = field(default_factory=dict)  # mode -> it
    device: str = ""  # "cuda" or "cpu": where the worker ran it
    device_work: DeviceWork | None = None  # kernels per call, their sum and span
    # Where the error happened in the user's source, and its whole traceback or compiler
    # log (records/error_site.py); None without an error.
    error_site: SiteEvidence | None = None
    # Why a checked variant was not timed (a Triton kernel in the interpreter: its time is
    # the interpreter's); its rows are then PASS with no measurement, not an ERROR.
    untimed: str | None = None
    # An A/B task (`gpubench ab`, run/ab/): this result is NEW's; `base` is BASE's own, and
    # `paired` the two versions' interleaved pairs, per mode (timing/paired.py).
    base: WorkerResult | None = None
    paired: Mapping[str, PairedTiming] = field(default_factory=dict)

    UNKNOWN = "refuse"  # from gpubench's own worker: an unknown key is a mismatch or a bug
    ERROR = MalformedWorkerResult

    @classmethod
    def upgrade(cls, data: Mapping) -> dict:
        """Checks what the types alone do not (a status a worker may send, each part of its
        kind) and reads an absent part as none: a failure carries only its error."""
        if data.get("status") not in WORKER_STATUSES:
            raise MalformedWorkerResult(f"a worker result's status must be one of "
                                        f"{', '.join(sorted(WORKER_STATUSES))}, not "
                                        f"{data.get('status')!r}")
        for key, kind in _PARTS.items():
            _expect(data, key, kind)
        return {**data, "build": data.get("build") or {},
                "measurements": data.get("measurements") or {},
                "device": data.get("device") or "",
                "paired": data.get("paired") or {},
                **{key: data.get(key) or None for key in ("check", "device_work", "error_site",
                                                          "base")}}


# The parts of a worker result that are not text, and the kind each must be.
_PARTS = {"build": Mapping, "check": Mapping, "measurements": Mapping, "device_work": Mapping,
          "error_site": Mapping, "untimed": str, "base": Mapping, "paired": Mapping}


def _expect(data: Mapping, key: str, kind: type) -> None:
    value = data.get(key)
    if value is not None and not isinstance(value, kind):
        raise MalformedWorkerResult(f"a worker result's {key} must be a "
                                    f"{'dict' if kind is Mapping else kind.__name__}, not "
                                    f"{type(value).__name__}")
