"""One row of results per (family, variant, size, dtype, timing mode), and the derived numbers.

Pure data: built from the worker's payload (or from a skip/crash/timeout the
parent observed), summarised with stats.py, placed on the roofline with the
machine's measured ceilings, flattened for CSV and nested (raw samples
included) for JSON.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property

from gpubench import noise, roofline
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
    mode: str = ""
    baseline: bool = False
    device: str = ""
    flops: float | None = None
    bytes_moved: float | None = None
    samples_s: list[float] = field(default_factory=list)
    method: str | None = None
    warmup_calls: int | None = None
    stop_reason: str | None = None
    target_rel_ci: float | None = None
    timing_details: dict = field(default_factory=dict)
    clocks: dict | None = None
    check: dict | None = None
    recheck: dict | None = None
    compile_s: float | None = None
    compile_cached: bool | None = None
    build: dict = field(default_factory=dict)
    error: str | None = None
    speedup: float | None = None
    seed: int | None = None
    roof: dict | None = None  # roofline.position(...) with the machine's ceilings
    warnings: list[noise.Warning] = field(default_factory=list)
    ncu: dict | None = None  # `gpubench run --ncu`: duration, top SOL %, top hint

    @cached_property
    def summary(self) -> Summary | None:
        """Computed once, on first use: set samples_s before asking."""
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

    def place_on_roofline(self, ceilings: dict | None) -> None:
        """Set `roof` from measured ceilings ({'bandwidth_gbps', 'tflops': {dtype: x}})."""
        if not ceilings or not self.passed or self.bytes_moved is None:
            return
        rates = ceilings.get("tflops", {})
        peak = rates.get(self.dtype) or rates.get("float32")
        self.roof = roofline.position(self.flops or 0.0, self.bytes_moved, self.median_s,
                                      ceilings.get("bandwidth_gbps"), peak)

    def assess(self) -> None:
        """Attach noise and clock warnings (measured rows only)."""
        if self.summary is not None and self.passed:
            self.warnings = noise.assess(self.summary, self.stop_reason,
                                         self.target_rel_ci or 0.0, self.clocks, self.mode)

    def to_record(self) -> dict:
        """A flat row for CSV: times in seconds, rates in TFLOP/s and GB/s."""
        s = self.summary
        roof = self.roof or {}
        clocks = self.clocks or {}
        return {
            "family": self.family, "variant": self.variant, "kind": self.kind,
            "size": self.size, "dtype": self.dtype, "mode": self.mode, "status": self.status,
            "baseline": self.baseline, "device": self.device,
            "median_s": s.median if s else None,
            "ci95_low_s": s.ci_low if s else None, "ci95_high_s": s.ci_high if s else None,
            "q1_s": s.q1 if s else None, "q3_s": s.q3 if s else None,
            "iqr_s": s.iqr if s else None, "mean_s": s.mean if s else None,
            "min_s": s.min if s else None, "max_s": s.max if s else None,
            "stdev_s": s.stdev if s else None, "samples": s.n if s else 0,
            "outliers": s.outliers if s else None,
            "significant_digits": s.significant_digits if s else None,
            "tflops": self.tflops, "gbps": self.gbps,
            "roof_fraction": roof.get("fraction"), "bound": roof.get("bound"),
            "intensity_flop_per_byte": roof.get("intensity"),
            "speedup_vs_baseline": self.speedup,
            "flops": self.flops, "bytes_moved": self.bytes_moved,
            "method": self.method, "stop_reason": self.stop_reason,
            "sm_clock_min_mhz": clocks.get("sm_mhz_min"),
            "sm_clock_max_mhz": clocks.get("sm_mhz_max"),
            "throttled": clocks.get("slowed_down"),
            "check_max_abs_err": (self.check or {}).get("max_abs_err"),
            "check_mismatches": (self.check or {}).get("mismatches"),
            "compile_s": self.compile_s, "compile_cached": self.compile_cached,
            "warnings": "; ".join(w.code for w in self.warnings) or None,
            "error": self.error, "seed": self.seed,
        }

    def to_json(self) -> dict:
        record = self.to_record()
        record.update(samples_s=self.samples_s, check=self.check, recheck=self.recheck,
                      warmup_calls=self.warmup_calls, timing_details=self.timing_details,
                      build=self.build, clocks=self.clocks, roofline=self.roof,
                      summary=self.summary.to_dict() if self.summary else None,
                      warnings=[w.to_dict() for w in self.warnings], ncu=self.ncu)
        return record


def from_payload(base: Result, payload: dict, modes: tuple[str, ...]) -> list[Result]:
    """One Result per timing mode from a worker's result message (same check, same build)."""
    build = payload.get("build") or {}
    if payload.get("build_log"):
        build = {**build, "log": payload["build_log"]}
    timings = payload.get("timings") or {}
    results = []
    for mode in modes:
        timing = timings.get(mode) or {}
        status = payload.get("status", ERROR)
        error = payload.get("error")
        if status == OK and timing.get("error"):
            status, error = (FAIL if timing.get("recheck_failed") else ERROR), timing["error"]
        results.append(Result(
            family=base.family, variant=base.variant, kind=base.kind, size=base.size,
            dtype=base.dtype, status=status, mode=mode, baseline=base.baseline,
            device=payload.get("device", base.device), flops=base.flops,
            bytes_moved=base.bytes_moved, samples_s=list(timing.get("samples_s") or []),
            method=timing.get("method"), warmup_calls=timing.get("warmup_calls"),
            stop_reason=timing.get("stop_reason"), target_rel_ci=timing.get("target_rel_ci"),
            timing_details=timing.get("details") or {}, clocks=timing.get("clocks"),
            check=payload.get("check"), recheck=timing.get("recheck"),
            compile_s=build.get("compile_s"), compile_cached=build.get("cached"), build=build,
            error=error, seed=base.seed,
        ))
    return results


def apply_speedups(group: list[Result]) -> None:
    """Speedup vs the group's baseline in the same mode, only for rows that passed."""
    for mode in {r.mode for r in group}:
        rows = [r for r in group if r.mode == mode]
        baseline = next((r for r in rows if r.baseline and r.passed), None)
        for result in rows:
            result.speedup = (roofline.speedup(baseline.median_s, result.median_s)
                              if baseline is not None and result.passed else None)


def finish_group(group: list[Result], ceilings: dict | None) -> None:
    """Everything derived once a group is complete: speedups, roofline, warnings."""
    apply_speedups(group)
    for result in group:
        result.place_on_roofline(ceilings)
        result.assess()
    by_variant: dict[str, dict[str, Result]] = {}
    for result in group:
        if result.passed:
            by_variant.setdefault(result.variant, {})[result.mode] = result
    for modes in by_variant.values():
        gpu = modes.get("cold") or modes.get("cupti") or modes.get("graph")
        if gpu is not None and "wall" in modes:
            warning = noise.launch_bound(gpu.median_s, modes["wall"].median_s)
            if warning:
                modes["wall"].warnings.append(warning)


def exit_status(results: list[Result]) -> bool:
    """True when nothing that ran failed."""
    return not any(r.status in FAILED_STATUSES for r in results)
