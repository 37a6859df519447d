"""Physics: a time no kernel can have (beyond the measured roofline, faster than any
launch) is SUSPECT; one above a CPU's DRAM roof is cache; a host far behind its GPU is
launch-bound. Pure: a row's roof fraction and medians in."""

from __future__ import annotations

from gpubench.records.warning import TimingWarning

# On a CPU the roof is a DRAM copy; a small problem lives in the caches, whose bandwidth is
# several times DRAM's, so 1.5x-20x the roof is cache, not a forged result (719-1171% seen).
CPU_CACHE_ROOF = 1.5
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
