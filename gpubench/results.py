"""One row of results per (family, variant, size, dtype), and the derived numbers.

Pure data: built from the worker's payload (or from a skip/crash/timeout the
parent observed), summarised with stats.py and roofline.py, flattened for CSV
and nested (raw samples included) for JSON.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from gpubench import roofline
from gpubench.stats import Summary, summarize

OK = "ok"
FAIL = "fail"
ERROR = "error"
CRASHED = "crashed"
TIMEOUT = "timeout"
COMPILE_ERROR = "compile_error"
SKIPPED = "skipped"
NOT_RUN = "not_run"  # interrupted before its turn

# Statuses that mean "this variant is broken", as opposed to skipped or not run.
FAILED_STATUSES = frozenset({FAIL, ERROR, CRASHED, TIMEOUT, COMPILE_ERROR})

ITEMSIZE = {"float64": 8, "float32": 4, "float16": 2, "bfloat16": 2}


@dataclass
class Result:
    family: str
    variant: str
    kind: str
    size: int
    dtype: str
    status: str
    baseline: bool = False
    device: str = ""
    flops: float | None = None
    bytes_moved: float | None = None
    samples_s: list[float] = field(default_factory=list)
    method: str | None = None
    warmup_calls: int | None = None
    stop_reason: str | None = None
    timing_details: dict = field(default_factory=dict)
    sm_clock_mhz: int | None = None
    check: dict | None = None
    recheck: dict | None = None
    compile_s: float | None = None
    compile_cached: bool | None = None
    build: dict = field(default_factory=dict)
    error: str | None = None
    speedup: float | None = None
    seed: int | None = None

    @property
    def summary(self) -> Summary | None:
        return summarize(self.samples_s) if self.samples_s else None

    @property
    def median_s(self) -> float | None:
        summary = self.summary
        return summary.median if summary else None

    @property
    def tflops(self) -> float | None:
        return roofline.tflops(self.flops, self.median_s)

    @property
    def gbps(self) -> float | None:
        return roofline.gbps(self.bytes_moved, self.median_s)

    @property
    def passed(self) -> bool:
        return self.status == OK

    def to_record(self) -> dict:
        """A flat row for CSV: every number in base units (seconds, FLOP/s as TFLOP/s, GB/s)."""
        summary = self.summary
        return {
            "family": self.family,
            "variant": self.variant,
            "kind": self.kind,
            "size": self.size,
            "dtype": self.dtype,
            "status": self.status,
            "baseline": self.baseline,
            "device": self.device,
            "median_s": summary.median if summary else None,
            "q1_s": summary.q1 if summary else None,
            "q3_s": summary.q3 if summary else None,
            "iqr_s": summary.iqr if summary else None,
            "mean_s": summary.mean if summary else None,
            "min_s": summary.min if summary else None,
            "max_s": summary.max if summary else None,
            "samples": summary.n if summary else 0,
            "tflops": self.tflops,
            "gbps": self.gbps,
            "speedup_vs_baseline": self.speedup,
            "flops": self.flops,
            "bytes_moved": self.bytes_moved,
            "method": self.method,
            "stop_reason": self.stop_reason,
            "sm_clock_mhz": self.sm_clock_mhz,
            "check_max_abs_err": (self.check or {}).get("max_abs_err"),
            "check_mismatches": (self.check or {}).get("mismatches"),
            "compile_s": self.compile_s,
            "compile_cached": self.compile_cached,
            "error": self.error,
            "seed": self.seed,
        }

    def to_json(self) -> dict:
        record = self.to_record()
        record.update(samples_s=self.samples_s, check=self.check, recheck=self.recheck,
                      warmup_calls=self.warmup_calls, timing_details=self.timing_details,
                      build=self.build)
        return record


def from_payload(base: Result, payload: dict) -> Result:
    """Fill `base` (identity and cost model already set) from a worker's result message."""
    timing = payload.get("timing") or {}
    build = payload.get("build") or {}
    base.status = payload.get("status", ERROR)
    base.error = payload.get("error")
    base.device = payload.get("device", base.device)
    base.check = payload.get("check")
    base.recheck = payload.get("recheck")
    base.samples_s = list(timing.get("samples_s") or [])
    base.method = timing.get("method")
    base.warmup_calls = timing.get("warmup_calls")
    base.stop_reason = timing.get("stop_reason")
    base.timing_details = timing.get("details") or {}
    base.sm_clock_mhz = timing.get("sm_clock_mhz")
    base.compile_s = build.get("compile_s")
    base.compile_cached = build.get("cached")
    base.build = build
    if payload.get("build_log"):
        base.build = {**build, "log": payload["build_log"]}
    return base


def apply_speedups(group: list[Result]) -> None:
    """Speedup vs the group's baseline, only for rows that passed (a wrong answer has none)."""
    baseline = next((r for r in group if r.baseline and r.passed), None)
    for result in group:
        result.speedup = (roofline.speedup(baseline.median_s, result.median_s)
                          if baseline is not None and result.passed else None)


def exit_status(results: list[Result]) -> bool:
    """True when nothing that ran failed."""
    return not any(r.status in FAILED_STATUSES for r in results)
