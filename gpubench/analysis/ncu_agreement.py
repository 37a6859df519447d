"""`gpubench run --ncu-check`: ncu's own duration beside every timed point, and a verdict.

gpubench claims its cold median lands on Nsight Compute's `gpu__time_duration`
(docs/measurement.md). --ncu-check makes that claim checkable on the user's GPU:
each passing point is run again under ncu, a few calls, duration only, and the
per-call sum of its kernels' durations is set beside our number. Pure: the
profiled launches come in as (label, duration) pairs, results go out as dicts.

What is compared: ncu profiles kernels one by one, so its per-call sum is a
*kernel sum*; ours is the result's kernel sum (its span less the gaps, memsets and
copies CUPTI saw: records/device_work.py), or the median itself for one kernel.

Targets, from issue 11 (cold vs ncu on an H200): within 2% from 20 us, within 5%
from 3 to 20 us; under 3 us no target — the kernel is mostly launch overhead in
ncu's number too — so it is always reported with a warning.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import dataclass

from gpubench.codec import Record
from gpubench.records import result as R
from gpubench.records.warning import TimingWarning
from gpubench.timing.clocks import ClockReport
from gpubench.verdicts.noise import FIXED_COST_SPREAD_US, SHORT_KERNEL_S

CHECK_RANGE = "gb_check:"  # NVTX range per point: gb_check:<index in the task list>
CALLS = 5  # profiled calls per point: a median of 5 sets one odd replay aside
LONG_S, SHORT_S = 20e-6, SHORT_KERNEL_S
LONG_TARGET, SHORT_TARGET = 0.02, 0.05
# Modes whose number is meant to land on ncu's. warm (L2 may hold the inputs) and wall
# (launch overhead included) measure other things: their deviation is shown, not judged.
JUDGED_MODES = ("cold", "graph", "cupti")
FIXED_COST_UNCERTAINTY_S = FIXED_COST_SPREAD_US * 1e-6


@dataclass(frozen=True)
class NcuTime(Record):
    """ncu's time for one point: the median over calls of the per-call kernel sum."""

    ncu_s: float
    kernels: int  # kernels per call as ncu saw them
    calls: int


def ncu_times(launches: Iterable[tuple[str, float]], calls: int = CALLS) -> dict[str, NcuTime]:
    """Per label, ncu's time from the profiled launches (label, seconds) in launch order.
    Each label's launches are `calls` calls of the same op, so kernels per call is their
    count over `calls`; a label whose count does not divide is summed over all and
    averaged (an op whose kernel count varies between calls)."""
    by_label: dict[str, list[float]] = {}
    for label, seconds in launches:
        by_label.setdefault(label, []).append(seconds)
    times = {}
    for label, durations in by_label.items():
        per_call, rest = divmod(len(durations), calls)
        if per_call and not rest:
            sums = [sum(durations[i:i + per_call]) for i in range(0, len(durations), per_call)]
            times[label] = NcuTime(statistics.median(sums), per_call, calls)
        else:
            times[label] = NcuTime(sum(durations) / calls, round(len(durations) / calls), calls)
    return times


def target_for(ncu_s: float) -> float | None:
    """The allowed deviation for a kernel of ncu length `ncu_s`; None under 3 us."""
    if ncu_s >= LONG_S:
        return LONG_TARGET
    return SHORT_TARGET if ncu_s >= SHORT_S else None


def check_result(result: R.Result, ncu: NcuTime) -> R.Result:
    """The result with its `ncu_check` and, when it misses, a warning naming the likely cause."""
    ours = result.kernel_sum_s if result.kernel_sum_s is not None else result.median_s
    if ours is None or ncu.ncu_s <= 0:
        return result
    deviation = ours / ncu.ncu_s - 1
    target = target_for(ncu.ncu_s)
    judged = result.mode in JUDGED_MODES
    within = target is not None and abs(deviation) <= target
    check = {**ncu.to_dict(), "ours_s": ours, "compared": _compared(result),
             "deviation": deviation, "target": target, "judged": judged,
             "within": within if judged else None}
    if not judged or within:
        return result.with_derived(ncu_check=check)
    cause = likely_cause(result, ncu, deviation)
    check["cause"] = cause
    limit = f"the ±{target:.0%} target" if target else "any target (ncu under 3 us)"
    warning = TimingWarning(
        "ncu_deviation",
        f"{deviation:+.1%} from ncu's {ncu.ncu_s * 1e6:.2f} us, beyond {limit}",
        cause)
    return result.with_derived(ncu_check=check, warnings=(*result.warnings, warning))


def _compared(result: R.Result) -> str:
    work = result.device_work
    if work is not None and not work.single and result.kernel_sum_s is not None:
        return "kernel sum"
    return "median"


def likely_cause(result: R.Result, ncu: NcuTime, deviation: float) -> str:
    """The first explanation the data supports, most specific first."""
    work = result.device_work
    if work is not None and work.kernels != ncu.kernels:
        return (f"ncu saw {ncu.kernels} kernel(s) per call, gpubench {work.kernels}: the op "
                "launches different kernels under ncu (autotuning, workspace) or per call")
    if clocks_dropped(result.clocks):
        return ("clocks were power-capped or throttled while timing; ncu times one kernel "
                "on a GPU that has just rested, back-to-back samples do not")
    if ncu.ncu_s < SHORT_S or abs(deviation) * ncu.ncu_s <= FIXED_COST_UNCERTAINTY_S:
        return (f"launch-bound: {abs(deviation) * ncu.ncu_s * 1e6:.2f} us apart, within the "
                f"±{FIXED_COST_UNCERTAINTY_S * 1e6:.1f} us the event window's fixed cost "
                "varies between kernels; time a larger problem")
    if work is not None and work.outside_kernels_us * 1e-6 > 0.02 * ncu.ncu_s:
        return (f"multi-kernel gaps: {work.outside_kernels_us:.1f} us per call lie between "
                "its kernels; the kernel sum takes them off using CUPTI's timestamps")
    return ("not explained by power, launch overhead or gaps: see `gpubench ncu` for the "
            "kernel's own profile, and rerun to rule out drift")


# A power-cap flag with the SM clock within 3% of its top (1965 of 1980 MHz on an H200, seen
# on 4 us kernels) explains no 5% deviation; a drop of 3% or more may (1650-1800 MHz under
# bf16 matmuls).
CLOCK_DROP = 0.03


def clocks_dropped(clocks: ClockReport | None) -> bool:
    """The clock report shows a slowdown, or a power cap that pulled the SM clock down."""
    if clocks is None or not (clocks.slowed_down or clocks.power_capped):
        return False
    if clocks.slowed_down:
        return True
    low = clocks.sm_mhz_min
    top = clocks.sm_mhz_max_possible or clocks.sm_mhz_max
    if not low or not top:
        return True  # capped, the clock unknown: the cap stays a candidate
    return low < (1 - CLOCK_DROP) * top


def attach(results: list[R.Result], times: dict[str, NcuTime],
           labels: dict[str, tuple]) -> list[R.Result]:
    """Every result whose point (family, variant, dtype, shape) has an ncu time, checked.
    `labels` maps each ncu label to the point's identity."""
    by_point = {labels[label]: time for label, time in times.items() if label in labels}
    out = []
    for result in results:
        ncu = by_point.get((result.family, result.variant, result.dtype, result.shape.text()))
        out.append(check_result(result, ncu) if ncu and result.passed else result)
    return out
