"""Result: one row per (family, variant, dtype, shape, timing mode) — built once, complete.

A Result holds what was observed (status, the worker's Measurement, the check,
the build) and what was derived from its group (speedup, roofline position,
warnings: see derive.py, which returns new Results rather than mutating).
What a flag adds (--ncu, --ncu-check, --sanitize, ...) is not a field: it is an
Extra in `extras` (records/extras.py), registered with its columns in
records/features/. `to_record()` is the flat row of results.csv and of
`to_frame()`, one column per axis; the codec writes the full JSON form (its columns,
then its data: `WRITTEN`) and reads it back whole (`upgrade`). Pure data.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property

from gpubench.codec import Record, saved_as
from gpubench.records.build_info import BuildInfo
from gpubench.records.columns import COLUMNS, EXTRAS_AT, RESERVED
from gpubench.records.extras import Extra
from gpubench.records.features import EXTRAS, SPECS
from gpubench.records.point import PointKey
from gpubench.records.warning import TimingWarning
from gpubench.timing import roofline
from gpubench.timing.check_result import CheckResult
from gpubench.timing.device_work import DeviceWork
from gpubench.timing.measurement import Measurement
from gpubench.timing.stats import Summary, summarize

OK = "ok"
FAIL = "fail"
ERROR = "error"
CRASHED = "crashed"
TIMEOUT = "timeout"
# A variant that did not build: compile, link or load of its extension failed.
BUILD_ERROR = "build_error"
SKIPPED = "skipped"
NOT_RUN = "not_run"  # interrupted before its turn
# Correct output, untrustworthy time: the variant games the timer (work outside the window,
# work skipped on repeated calls, tampering) or its time is beyond physics. The reason is
# in `error`; no speedup is given, and the run's exit status counts it (errors.EXIT_SUSPECT).
SUSPECT = "suspect"

# Statuses that mean "this variant is broken", as opposed to skipped or not run.
FAILED_STATUSES = frozenset({FAIL, ERROR, CRASHED, TIMEOUT, BUILD_ERROR})
# Each status's one name wherever it is shown: logs, tables, reports, compare, markdown.
STATUS_LABELS = {OK: "PASS", SUSPECT: "SUSPECT", FAIL: "FAIL", ERROR: "ERROR",
                 CRASHED: "CRASHED", TIMEOUT: "TIMEOUT", BUILD_ERROR: "BUILD ERROR",
                 SKIPPED: "skipped", NOT_RUN: "not run"}
# Names older records used: read as today's (results.json of runs before the rename).
_OLD_STATUSES = {"compile_error": BUILD_ERROR}


def status_label(status: str) -> str:
    """'BUILD ERROR' for "build_error": how a status is named to a reader."""
    return STATUS_LABELS.get(status, status.upper())

ITEMSIZE = {"float64": 8, "float32": 4, "float16": 2, "bfloat16": 2}

# Columns of the flat record that an axis may not be named after (it would overwrite them).
RESERVED_COLUMNS = RESERVED | {column.name for spec in EXTRAS for column in spec.columns}


def _delegate(holder: str, name: str, empty=None) -> property:
    """A read-only attribute read through `holder` (`empty` when the holder is None), so a
    Result answers r.family or r.samples_s without storing anything twice."""

    def get(self):
        owner = getattr(self, holder)
        return getattr(owner, name) if owner is not None else empty

    return property(get, doc=f"{holder}.{name}")


@dataclass(frozen=True)
class Result(Record):
    """One row (see the module docstring); results.json holds its flat record (for jq and
    eyes) and then its observed data in full, which is what is read back."""

    WRITTEN = ("*json_columns", "shape", "key", "measurement", "check", "build", "roof",
               "summary", "warnings", "device_work", "speedup_ci", "*saved_extras")

    key: PointKey = field(metadata=saved_as(write=PointKey.text))
    kind: str
    status: str
    baseline: bool = False
    device: str = ""
    flops: float | None = None
    bytes_moved: float | None = None
    seed: int | None = None
    measurement: Measurement | None = None
    check: CheckResult | None = None  # the first call's output against the reference
    build: BuildInfo = field(default_factory=BuildInfo)  # how its code was made ready
    error: str | None = None
    # Derived from the group (derive.finish_group); None/empty until then.
    speedup: float | None = field(default=None, metadata=saved_as("speedup_vs_baseline"))
    # its 95% CI (derive.speedup_cis)
    speedup_ci: tuple[float, float] | None = field(default=None,
                                                   metadata=saved_as("speedup_ci95"))
    # where it sits under the machine's roofline
    roof: roofline.RoofPosition | None = field(default=None, metadata=saved_as("roofline"))
    warnings: tuple[TimingWarning, ...] = ()
    device_work: DeviceWork | None = None  # kernels per call, their sum and span (GPU only)
    # What flags added (--ncu, --ncu-check, --sanitize, ...): name -> Extra, see extras.py.
    extras: Mapping[str, Extra] = field(default_factory=dict)
    # Which device measured it (several with --devices, --workers, --cluster): its id
    # ("cuda:1", "cpu:0", a Dask worker's "tcp://host:port cuda:0") and model.
    device_id: str = ""
    device_name: str = ""
    # What the variant computes in when its spec declares another precision than the dtype's
    # own ("tf32" for fp32 inputs on tensor cores): picks the ceiling of its roof. "": none.
    precision: str = ""

    # Identity, from the key; what was measured, from the measurement (empty without one).
    family = _delegate("key", "family")
    variant = _delegate("key", "variant")
    dtype = _delegate("key", "dtype")
    shape = _delegate("key", "shape")
    mode = _delegate("key", "mode")
    samples_s = _delegate("measurement", "samples_s", ())
    method = _delegate("measurement", "method")
    stop_reason = _delegate("measurement", "stop_reason")
    clocks = _delegate("measurement", "clocks")
    recheck = _delegate("measurement", "recheck")
    host_load = _delegate("measurement", "host_load")  # on a CPU: what else ran meanwhile

    @property
    def compile_s(self) -> float | None:
        return self.build.compile_s

    @property
    def compile_cached(self) -> bool | None:
        return self.build.cached

    @cached_property
    def summary(self) -> Summary | None:
        return summarize(self.samples_s) if self.samples_s else None

    @property
    def median_s(self) -> float | None:
        return self.summary.median if self.summary else None

    @property
    def timed_quantity(self) -> str:
        """Which time of a multi-kernel call the median is: the kernels' 'span' (event
        windows hold the gaps between launches), their 'sum' (cupti adds kernel
        durations), or 'host' (wall, cpu: what a caller waits, launches included)."""
        return {"cupti": "sum", "wall": "host", "cpu": "host"}.get(self.mode, "span")

    @property
    def kernel_sum_s(self) -> float | None:
        """The median as kernel time only (no gaps, memsets or copies): what ncu's per-kernel
        durations add up to. The median itself for one kernel."""
        work, median = self.device_work, self.median_s
        if work is None or median is None or self.timed_quantity != "span":
            return median if self.timed_quantity == "sum" else None
        return work.kernel_sum_s(median)

    @property
    def span_s(self) -> float | None:
        """The median as the span of the call's device work (first start to last end)."""
        work, median = self.device_work, self.median_s
        if self.timed_quantity == "span":
            return median
        if self.timed_quantity == "sum" and work is not None:
            return work.span_s(median)
        return None

    @property
    def tflops(self) -> float | None:
        return roofline.tflops(self.flops, self.median_s)

    @property
    def gbps(self) -> float | None:
        return roofline.gbps(self.bytes_moved, self.median_s)

    @property
    def passed(self) -> bool:
        return self.status == OK

    @property
    def correct(self) -> bool:
        """The output matched the reference: PASS, or SUSPECT (right answer, untrustworthy
        time), whose figures are still shown so the reader sees why."""
        return self.status in (OK, SUSPECT)

    def with_derived(self, **changes) -> Result:
        """A copy with derived fields set (speedup, roof, warnings) and extras by their
        registered name (ncu_check=..., sanitizer=...); an extra set to None is removed."""
        named = {name: changes.pop(name) for name in list(changes) if name in SPECS}
        if not named:
            return replace(self, **changes)
        extras = {k: v for k, v in self.extras.items() if k not in named}
        extras.update((k, Extra(SPECS[k], v)) for k, v in named.items() if v is not None)
        return replace(self, **changes, extras=extras)

    def with_extra(self, spec, value) -> Result:
        """A copy with `spec`'s extra set to `value`, None included ("asked; none found")."""
        return replace(self, extras={**self.extras, spec.name: Extra(spec, value)})

    def extra(self, name: str):
        """The value of the extra `name`, None when this result has none."""
        found = self.extras.get(name)
        return found.value if found is not None else None

    def __getattr__(self, name: str):
        """A registered extra read as an attribute (r.ncu_check), as before extras were."""
        if name in SPECS:
            return self.extra(name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __repr__(self) -> str:
        """'<Result matmul/naive M=256 N=128 K=64 float32 cold: 1.23 ms ±0.4% (n=57),
        5.12 TFLOP/s>' — the raw samples stay in .samples_s."""
        from gpubench import format as fmt

        head = f"{self.family}/{self.variant} {self.shape.label()} {self.dtype} {self.mode}"
        summary = self.summary
        if not self.passed or summary is None:
            why = f" ({self.error})" if self.error else ""
            return f"<Result {head}: {status_label(self.status)}{why}>"
        rate = (f", {fmt.rate(self.tflops)} TFLOP/s" if self.flops else "") + \
               (f", {fmt.rate(self.gbps)} GB/s" if self.bytes_moved else "")
        median = fmt.duration(summary.median, min(summary.significant_digits, 4))
        return f"<Result {head}: {median} ±{fmt.percent(summary.rel_ci)} (n={summary.n}){rate}>"

    # ------------------------------------------------------------ serialisation

    def to_record(self) -> dict:
        """A flat row for CSV and DataFrames: one column per axis and a `shape` string;
        times in seconds, rates in TFLOP/s and GB/s (records/columns.py: the table)."""
        extras = {column.name: column.read(self) for spec in EXTRAS for column in spec.columns}
        before, after = COLUMNS[:EXTRAS_AT], COLUMNS[EXTRAS_AT:]
        return {"family": self.family, "variant": self.variant, **dict(self.shape),
                **{c.name: c.read(self) for c in before}, **extras,
                **{c.name: c.read(self) for c in after}}

    def json_columns(self) -> dict:
        """The flat record without the shape's axes: what a results.json row shows first,
        for jq and eyes (its `shape` and `warnings` then take their full form in place)."""
        record = self.to_record()
        for axis in self.shape:
            record.pop(axis)
        return record

    def saved_extras(self) -> dict:
        """The saved extras by name, None for one this result lacks ("not asked")."""
        return {spec.name: self.extra(spec.name) for spec in EXTRAS if spec.saved}

    @classmethod
    def upgrade(cls, data: Mapping) -> dict:
        """A results.json row as the fields read it: the key from its parts, a status by
        today's name, the saved extras gathered, an empty part as none. ValueError naming
        the field when one is of a type no gpubench wrote (a hand-edited or foreign file),
        rather than a TypeError deep in a view later."""
        _check_types(data)
        return {**data, "kind": data.get("kind", ""),
                "key": {"family": data["family"], "variant": data["variant"],
                        "dtype": data["dtype"], "shape": data["shape"], "mode": data["mode"]},
                "status": _OLD_STATUSES.get(data["status"], data["status"]),
                "baseline": bool(data.get("baseline")),
                **{name: data.get(name) or "" for name in _TEXT_OR_EMPTY},
                **{name: data.get(name) or None for name in _PART_OR_NONE},
                "build": data.get("build") or {}, "warnings": data.get("warnings") or (),
                "extras": {spec.name: Extra(spec, data[spec.name]) for spec in EXTRAS
                           if spec.saved and data.get(spec.name) is not None}}


# Fields a row may hold as null or leave out that read as "" (none), and parts that read as
# None when empty (an older or hand-made file).
_TEXT_OR_EMPTY = ("device", "device_id", "device_name", "precision")
_PART_OR_NONE = ("measurement", "check", "roofline", "device_work", "speedup_ci95")


# The fields of a saved result whose type a view relies on: text, a number, a mapping.
_TEXT = ("family", "variant", "dtype", "mode", "status")
_OPTIONAL_TEXT = ("kind", "device", "device_id", "device_name", "precision", "error")
_OPTIONAL_NUMBER = ("flops", "bytes_moved", "seed", "speedup_vs_baseline")
_OPTIONAL_MAPPING = ("check", "build", "roofline", "measurement", "device_work")


def _check_types(data: Mapping) -> None:
    """ValueError naming the first field of a saved result that is not of its type."""
    if not isinstance(data, Mapping):
        raise ValueError(f"a result is a {type(data).__name__}, not an object")
    for name in _TEXT:
        if not isinstance(data.get(name), str):
            raise ValueError(f"a result's '{name}' is {_kind(data.get(name))}, not text")
    wrong = [n for n in _OPTIONAL_TEXT if data.get(n) is not None and not isinstance(data[n], str)]
    wrong += [n for n in _OPTIONAL_NUMBER if data.get(n) is not None
              and (isinstance(data[n], bool) or not isinstance(data[n], int | float))]
    wrong += [n for n in _OPTIONAL_MAPPING
              if data.get(n) is not None and not isinstance(data[n], Mapping)]
    wrong += [spec.name for spec in EXTRAS if spec.saved and data.get(spec.name) is not None
              and not isinstance(data[spec.name], Mapping)]
    roof = data.get("roofline")
    if isinstance(roof, Mapping) and (not isinstance(roof.get("fraction"), int | float)
                                      or not isinstance(roof.get("bound"), str)):
        wrong.append("roofline")
    if not isinstance(data.get("shape"), Mapping):
        wrong.append("shape")
    ci = data.get("speedup_ci95")
    if ci and not (isinstance(ci, list | tuple) and len(ci) == 2):
        wrong.append("speedup_ci95")
    warnings = data.get("warnings") or []
    if not isinstance(warnings, list) or not all(isinstance(w, Mapping) for w in warnings):
        wrong.append("warnings")
    if wrong:
        raise ValueError(f"a result's '{wrong[0]}' is {_kind(data.get(wrong[0]))}, which no "
                         "gpubench writes there")


def _kind(value) -> str:
    return "null" if value is None else f"a {type(value).__name__}"


# What a correctness-only row is, in the words every view uses (table legend, report, compare).
CORRECTNESS_ONLY = ("Triton interpreter (no GPU): the output is checked; the interpreter's "
                    "time would be no benchmark, so it is not taken")


def correctness_only(result: Result) -> bool:
    """A row whose output was checked but whose time means nothing for the kernel: a Triton
    variant run without a GPU, which the worker runs under TRITON_INTERPRET=1 (run/
    worker.py; the interpreter executes each program instance in numpy, ~1e4x slower than
    the kernel). Views show its check, never its time as a benchmark: no speedup, no
    TFLOP/s or GB/s, no roof share, no point on a chart, no compare verdict on speed. Read
    from what every result records (its kind and the device the worker ran on), so runs
    saved before this rule are judged alike."""
    return result.kind == "triton" and result.device == "cpu"


def exit_status(results) -> bool:
    """True when nothing that ran failed and nothing is SUSPECT."""
    return not any(r.status in FAILED_STATUSES or r.status == SUSPECT for r in results)


def exit_code(results) -> int:
    """errors.EXIT_VARIANT_FAILED when anything failed, else errors.EXIT_SUSPECT when a
    row is SUSPECT, else errors.EXIT_OK: a CI gate can tell "wrong" from "not trusted"."""
    from gpubench import errors

    statuses = {r.status for r in results}
    if statuses & FAILED_STATUSES:
        return errors.EXIT_VARIANT_FAILED
    return errors.EXIT_SUSPECT if SUSPECT in statuses else errors.EXIT_OK

