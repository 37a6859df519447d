"""Noise and clock warnings of one measured row: what makes its number less certain, and
what to do about it. Pure: a row's statistics, stop reason, clocks and host load in."""

from __future__ import annotations

from gpubench.records.warning import TimingWarning
from gpubench.timing.clocks import ClockReport
from gpubench.timing.hostload import HostLoad, busy_reason

# IQR above 5% of the median: two variants 5% apart can no longer be told apart
# from one run's spread alone.
NOISY_REL_IQR = 0.05
# The host clock on a shared CPU is noisier: `run --config configs/quick.toml` on the 2-core
# CI machine has IQRs of 0.1-5.9% over 25 rows; beyond 25% something else ran,
# or the op is too short for the host clock (an IQR of 13846% was once shown unwarned).
NOISY_REL_IQR_CPU = 0.25
# More than 5% of samples (and at least 3) beyond Tukey's fences: something else ran
# now and then. One outlier in 10 samples is chance, not a pattern.
OUTLIER_FRACTION = 0.05
MIN_OUTLIERS = 3
# Under 3 us a kernel is mostly launch: the event window's fixed cost subtracted from each
# sample (~2 us on an H200, fitted per process) lands within +-0.3 us of ncu across kernels
# (docs/measurement.md, "The window's fixed cost"), 10% and more of such a kernel.
SHORT_KERNEL_S = 3e-6
FIXED_COST_SPREAD_US = 0.3


def assess(summary, stop_reason: str | None, target_rel_ci: float, clocks: ClockReport | None,
           mode: str, host_load: HostLoad | None = None) -> list[TimingWarning]:
    """Warnings for one measured result (summary from stats.summarize). CPU timings
    are indicative only, so their spread draws no warning; a busy host does."""
    found = []
    if mode == "cpu":
        busy = busy_reason(host_load)
        if busy:
            found.append(TimingWarning("host_busy", f"the host clock timed other work too: {busy}",
                                 "time on an idle machine; `compare` decides only changes "
                                 "beyond what that load explains"))
        if summary.rel_iqr > NOISY_REL_IQR_CPU:
            found.append(TimingWarning("noisy", f"IQR is {summary.rel_iqr:.0%} of the median "
                                 "(host clock)", "CPU timings are indicative: raise "
                                 "--min-time, time a larger size, or an idle machine"))
        return found
    if summary.rel_iqr > NOISY_REL_IQR:
        found.append(TimingWarning("noisy", f"IQR is {summary.rel_iqr:.0%} of the median",
                             "raise --max-time, or look for other work on the GPU"))
    if stop_reason != "converged" and summary.rel_ci > target_rel_ci:
        found.append(TimingWarning("not_converged",
                             f"stopped at {stop_reason}: 95% CI of the median is "
                             f"+-{summary.rel_ci:.1%}, target +-{target_rel_ci:.1%}",
                             "raise --max-time or accept the wider interval"))
    if summary.outliers >= MIN_OUTLIERS and summary.outliers / summary.n > OUTLIER_FRACTION:
        found.append(TimingWarning("outliers", f"{summary.outliers} of {summary.n} samples are "
                             "outliers (beyond 1.5 IQR)",
                             "something else ran at times; the median is robust to it"))
    if mode in ("cold", "warm") and summary.median < SHORT_KERNEL_S:
        found.append(TimingWarning("short_kernel",
                             f"{summary.median * 1e6:.2f} us is mostly launch: read it "
                             f"+-{FIXED_COST_SPREAD_US} us (the event window's fixed cost, "
                             "subtracted, varies that much between kernels)",
                             "time a larger problem, or check with --ncu-check or --mode graph"))
    found.extend(clock_warnings(clocks))
    return found


def clock_warnings(clocks: ClockReport | None) -> list[TimingWarning]:
    if not clocks:
        return []
    if clocks.slowed_down:
        return [TimingWarning("throttled", "clocks slowed down during the measurement "
                              f"({', '.join(clocks.reasons)}; SM {clocks.sm_mhz_min}"
                              f"-{clocks.sm_mhz_max} MHz)",
                              "re-run with --remeasure-throttled, or let the GPU cool down")]
    if clocks.power_capped:
        return [TimingWarning("power_capped", f"ran at the power cap (SM down to "
                              f"{clocks.sm_mhz_min} MHz)",
                              "normal for heavy kernels; compare variants at the same cap")]
    return []
