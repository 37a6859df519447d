"""Warnings about a measurement, as data: what is wrong, and what to do about it.

Pure. Each check looks at one result's statistics, stop reason and clocks (or,
for launch-boundness, at two modes of the same point) and returns a TimingWarning
with a remedy, so tables, JSON and notebooks can all show the same advice.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpubench.codec import Record
from gpubench.timing.clocks import ClockReport
from gpubench.timing.hostload import HostLoad, busy_reason

# IQR above 5% of the median: two variants 5% apart can no longer be told apart
# from one run's spread alone.
NOISY_REL_IQR = 0.05
# The host clock on a shared CPU is noisier: `run --config configs/quick.toml` on the 2-core
# CI machine has IQRs of 0.1-5.9% over 25 rows; beyond 25% something else ran,
# or the op is too short for the host clock (an IQR of 13846% was once shown unwarned).
NOISY_REL_IQR_CPU = 0.25
# On a CPU the roof is a DRAM copy; a small problem lives in the caches, whose bandwidth is
# several times DRAM's, so 1.5x-20x the roof is cache, not a forged result (719-1171% seen).
CPU_CACHE_ROOF = 1.5
# More than 5% of samples (and at least 3) beyond Tukey's fences: something else ran
# now and then. One outlier in 10 samples is chance, not a pattern.
OUTLIER_FRACTION = 0.05
MIN_OUTLIERS = 3
# Under 3 us a kernel is mostly launch: the event window's fixed cost subtracted from each
# sample (~2 us on an H200, fitted per process) lands within +-0.3 us of ncu across kernels
# (docs/measurement.md, "The window's fixed cost"), 10% and more of such a kernel.
SHORT_KERNEL_S = 3e-6
FIXED_COST_SPREAD_US = 0.3
# How far past the measured roofline a result may land before it is suspect. The
# ceilings are a device copy and cuBLAS: a good streaming kernel beats the copy by a few
# percent (105% seen on the H100), never by half. With the L2 flushed (cold, graph,
# cupti, wall) 1.5x is far beyond any honest kernel. Warm mode may find its inputs in L2,
# whose bandwidth is ~2-3x HBM's on Hopper: 4x. On a CPU the "roof" is a DRAM copy while
# small problems live in cache: only gross violations (20x) count there.
SUSPECT_ROOF_FRACTION = {"warm": 4.0, "cpu": 20.0}
SUSPECT_ROOF_DEFAULT = 1.5
# No GPU kernel completes in under ~1 us from launch to end; after the event-pair cost is
# subtracted an honest tiny kernel still reads hundreds of ns. 50 ns is a result that
# cannot be a kernel's.
SUSPECT_MEDIAN_S = 50e-9
# Host-visible time 1.5x the GPU time, and 5 us more: the host, not the kernel, sets the pace.
LAUNCH_BOUND_RATIO = 1.5
LAUNCH_BOUND_GAP_S = 5e-6


@dataclass(frozen=True)
class TimingWarning(Record):
    code: str
    message: str
    remedy: str

    def __str__(self) -> str:
        return f"{self.message} — {self.remedy}"


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


def suspect(roof_fraction: float | None, median_s: float | None, mode: str) -> TimingWarning | None:
    """A result no kernel can produce: far beyond the measured roofline, or faster than
    any launch. Whatever produced it (a variant that skipped its work, a forged or
    misread measurement, wrong napkin math in the spec), its speedup is not shown."""
    limit = SUSPECT_ROOF_FRACTION.get(mode, SUSPECT_ROOF_DEFAULT)
    if roof_fraction is not None and roof_fraction > limit:
        return TimingWarning("suspect", f"{roof_fraction:.0%} of the measured roofline, beyond the "
                       f"{limit:.0%} any honest kernel reaches in {mode} mode",
                       "check the family's flops/bytes_moved and that the variant does the "
                       "work; no speedup is shown")
    if mode != "cpu" and median_s is not None and median_s < SUSPECT_MEDIAN_S:
        return TimingWarning("suspect", f"a median of {median_s * 1e9:.0f} ns is faster than any "
                       "kernel launch", "check that the variant launches its kernel; no "
                       "speedup is shown")
    return None


def cpu_cache_roof(roof_fraction: float | None, mode: str) -> TimingWarning | None:
    """A CPU result above the DRAM roof but short of suspect: the data sits in cache."""
    if mode != "cpu" or roof_fraction is None:
        return None
    if CPU_CACHE_ROOF < roof_fraction <= SUSPECT_ROOF_FRACTION["cpu"]:
        return TimingWarning("above_dram_roof", f"{roof_fraction:.0%} of the CPU's DRAM-copy roof",
                       "the data fits in the caches, whose bandwidth the roof does not "
                       "model; time a size beyond the last-level cache to compare with DRAM")
    return None


def launch_bound(gpu_median_s: float, wall_median_s: float) -> TimingWarning | None:
    """When the host-visible time is far above the GPU time, the kernel is launch-bound."""
    if gpu_median_s <= 0:
        return None
    ratio = wall_median_s / gpu_median_s
    if ratio >= LAUNCH_BOUND_RATIO and wall_median_s - gpu_median_s >= LAUNCH_BOUND_GAP_S:
        return TimingWarning("launch_bound", f"host-visible time is {ratio:.1f}x the GPU time "
                       f"({wall_median_s * 1e6:.1f} vs {gpu_median_s * 1e6:.1f} us)",
                       "launch-bound: batch work per launch, fuse kernels or use CUDA graphs")
    return None
