"""TimingSettings: how every point is measured, one type from the command line and the
suite file down to the worker (which gets it inside each Task) and into the run document.

Users type milliseconds and percent (`--warmup 100`, `warmup_ms = 100`); the
settings hold seconds and fractions. USER_KEYS is the one table of names and
conversions that both the CLI and the suite files use, so the two cannot drift.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from gpubench.codec import Record

GPU_MODES = ("cold", "warm", "graph", "cupti", "wall")
# A point's limits below one second cannot hold a worker's start, a check and a sample.
MIN_TIMEOUT_S = 1.0
# How users name each setting: the command-line option and the suite-file key.
_LABEL = {
    "warmup_s": "--warmup/warmup_ms", "min_time_s": "--min-time/min_time_ms",
    "max_time_s": "--max-time/max_time_ms", "target_rel_ci": "--target-ci/target_ci_pct",
    "min_samples": "--min-samples/min_samples", "max_samples": "--max-samples/max_samples",
    "timeout_s": "--timeout/timeout_s", "build_timeout_s": "--build-timeout/build_timeout_s",
}


@dataclass(frozen=True)
class TimingSettings(Record):
    """The defaults are justified in docs/measurement.md, "Warmup" to "Timeouts" (H100, H200),
    and keep one point of a us-scale kernel under ~1 s of wall time."""

    # Clocks ramp from 345 MHz idle to 1980 MHz within a few ms of load; the rest
    # of the 100 ms covers lazy module loading, autotuning and allocator growth.
    warmup_s: float = 0.1
    # The order-statistic CI needs >= 6 samples to be narrower than (min, max).
    min_samples: int = 10
    max_samples: int = 10_000
    # At least 50 ms of samples, so one lucky batch cannot end the measurement.
    min_time_s: float = 0.05
    # Give up converging after 0.5 s: the point then costs ~0.7 s with warmup and check.
    max_time_s: float = 0.5
    # +-0.5% on the median: below the run-to-run differences worth acting on.
    target_rel_ci: float = 0.005
    # Which timers run for every point (see gpubench/timers): cold-L2 events by default.
    modes: tuple[str, ...] = ("cold",)
    # Measure a point again, once, when NVML saw a thermal/hardware slowdown meanwhile.
    remeasure_throttled: bool = False
    # A point's check and timing take ~1 s; 120 s leaves room for a 100 ms kernel's
    # warmup and samples, and a hung kernel is given up within 2 minutes.
    timeout_s: float = 120.0
    # A cold load_inline build is 20-35 s with torch headers; 600 s is generous even
    # on 2 cores, yet ends a compiler stuck for good.
    build_timeout_s: float = 600.0
    # How many paired verdicts are decided together (an `ab`'s points times modes): each
    # point's interval widens with it, so that all of them together keep one false
    # FASTER/SLOWER at most 5% of the time (timing/paired.family_z).
    decisions: int = 1
    # Seconds a paired point may add beyond max_time to reach the blocks a verdict needs
    # (an `ab`'s --budget shared over its points); 0: never (timing/paired.time_for_blocks).
    blocks_time_s: float = 0.0

    def __post_init__(self) -> None:
        """Settings that could never measure anything sensible are refused here, whatever
        their source (command line, suite file, API), with the reason."""
        for name in ("warmup_s", "min_time_s", "max_time_s", "target_rel_ci", "timeout_s",
                     "build_timeout_s"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) \
                    or not math.isfinite(value) or value < 0:
                raise ValueError(f"{_LABEL[name]} must be a finite, non-negative number, "
                                 f"got {value!r}")
        if self.max_time_s <= 0 or self.target_rel_ci <= 0:
            raise ValueError(f"{_LABEL['max_time_s']} and {_LABEL['target_rel_ci']} must be "
                             "above zero")
        if self.min_time_s > self.max_time_s:
            raise ValueError(f"{_LABEL['min_time_s']} ({self.min_time_s * 1e3:g} ms) exceeds "
                             f"{_LABEL['max_time_s']} ({self.max_time_s * 1e3:g} ms)")
        if self.min_samples > self.max_samples:
            raise ValueError(f"{_LABEL['min_samples']} ({self.min_samples}) exceeds "
                             f"{_LABEL['max_samples']} ({self.max_samples})")
        for name in ("timeout_s", "build_timeout_s"):
            if getattr(self, name) < MIN_TIMEOUT_S:
                raise ValueError(f"{_LABEL[name]} must be at least {MIN_TIMEOUT_S:g} s: "
                                 "starting a worker and checking one point takes about that")
        if not self.modes:
            raise ValueError("no timing mode given")


def parse_modes(names) -> tuple[str, ...]:
    """Timing modes from 'cold,wall' or a list; 'all' for every GPU mode."""
    from gpubench.errors import unknown_name
    from gpubench.parsing import split_names

    chosen = split_names(names)
    if "all" in chosen:
        return GPU_MODES
    for mode in chosen:
        if mode not in GPU_MODES:
            raise unknown_name("timing mode", mode, GPU_MODES)
    if not chosen:
        raise ValueError("no timing mode given")
    return chosen


def _number(value, *, minimum: float = 0.0, strict: bool = True) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"expected a finite number, got {value!r}")
    if value < minimum or (strict and value == minimum):
        relation = ">" if strict else ">="
        raise ValueError(f"expected a number {relation} {minimum:g}, got {value!r}")
    return float(value)


def whole_number(value, minimum: int = 1) -> int:
    """A typed value (TOML, click) that must be an int >= minimum; bools are refused."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"expected a whole number >= {minimum}, got {value!r}")
    return value


def of_type(value, kind: type, what: str):
    """`value` if it is a `kind`, else a ValueError saying what was expected."""
    if not isinstance(value, kind):
        raise ValueError(f"expected {what}, got {value!r}")
    return value


# user key (CLI option dest and suite-file key alike) -> (field, conversion to its unit)
USER_KEYS = {
    "warmup_ms": ("warmup_s", lambda v: _number(v, strict=False) / 1e3),
    "min_time_ms": ("min_time_s", lambda v: _number(v, strict=False) / 1e3),
    "max_time_ms": ("max_time_s", lambda v: _number(v) / 1e3),
    "target_ci_pct": ("target_rel_ci", lambda v: _number(v) / 100),
    "min_samples": ("min_samples", whole_number),
    "max_samples": ("max_samples", whole_number),
    "modes": ("modes", parse_modes),
    "remeasure_throttled": ("remeasure_throttled", lambda v: of_type(v, bool, "true or false")),
    "timeout_s": ("timeout_s", lambda v: _number(v, minimum=MIN_TIMEOUT_S, strict=False)),
    "build_timeout_s": ("build_timeout_s",
                        lambda v: _number(v, minimum=MIN_TIMEOUT_S, strict=False)),
}


def _follow_bounds(settings: TimingSettings, changes: dict) -> None:
    """A bound the user set moves the other, default one out of its way (--max-time 20
    lowers the 50 ms minimum to 20) — only both set by the user can contradict."""
    for low, high in (("min_time_s", "max_time_s"), ("min_samples", "max_samples")):
        if high in changes and low not in changes:
            changes[low] = min(getattr(settings, low), changes[high])
        elif low in changes and high not in changes:
            changes[high] = max(getattr(settings, high), changes[low])


def with_user_values(settings: TimingSettings, values: dict, on_error) -> TimingSettings:
    """`settings` with the user's values (keys of USER_KEYS; None means 'not given').
    A bad value calls on_error(key, exception), which raises the caller's error type;
    settings that contradict each other call on_error(None, exception)."""
    changes = {}
    for key, value in values.items():
        if value is None or key not in USER_KEYS:
            continue
        name, convert = USER_KEYS[key]
        try:
            changes[name] = convert(value)
        except Exception as exc:  # ValueError, TypeError, or UsageError from parse_modes
            on_error(key, exc)
    _follow_bounds(settings, changes)
    try:
        return replace(settings, **changes)
    except ValueError as exc:
        on_error(None, exc)
        raise
