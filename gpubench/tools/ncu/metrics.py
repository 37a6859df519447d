"""Which ncu metrics gpubench reads, and what it derives from them: the speed-of-light table,
the roofline ncu's own chart plots, and the per-instruction counters of the Source Counters
section summed per source line. Pure: plain values in, plain values out.
Metric names are the ones ncu 2025.3's own sections use (checked on H100 and H200 reports).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple


class MetricSpec(NamedTuple):
    key: str  # gpubench's name, used in KernelProfile.metrics, JSON and CSV
    ncu_name: str  # "" for values gpubench derives from several ncu metrics
    label: str  # as ncu's own section tables label it, where they do
    unit: str


# The "GPU Speed Of Light Throughput" section plus occupancy, hit rates and waves.
SOL_METRICS = (
    MetricSpec("duration_ns", "gpu__time_duration.sum", "Duration", "ns"),
    MetricSpec("compute_throughput_pct", "sm__throughput.avg.pct_of_peak_sustained_elapsed",
               "Compute (SM) Throughput", "%"),
    MetricSpec("memory_throughput_pct",
               "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed",
               "Memory Throughput", "%"),
    MetricSpec("dram_throughput_pct", "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed",
               "DRAM Throughput", "%"),
    MetricSpec("l1_throughput_pct", "l1tex__throughput.avg.pct_of_peak_sustained_active",
               "L1/TEX Cache Throughput", "%"),
    MetricSpec("l2_throughput_pct", "lts__throughput.avg.pct_of_peak_sustained_elapsed",
               "L2 Cache Throughput", "%"),
    MetricSpec("achieved_occupancy_pct", "sm__warps_active.avg.pct_of_peak_sustained_active",
               "Achieved Occupancy", "%"),
    MetricSpec("theoretical_occupancy_pct", "sm__maximum_warps_per_active_cycle_pct",
               "Theoretical Occupancy", "%"),
    MetricSpec("l1_hit_rate_pct", "l1tex__t_sector_hit_rate.pct", "L1/TEX Hit Rate", "%"),
    MetricSpec("l2_hit_rate_pct", "lts__t_sector_hit_rate.pct", "L2 Hit Rate", "%"),
    MetricSpec("waves_per_sm", "launch__waves_per_multiprocessor", "Waves Per SM", ""),
    MetricSpec("dram_bytes_per_s", "dram__bytes.sum.per_second", "DRAM Bandwidth", "B/s"),
    MetricSpec("sm_frequency_hz", "gpc__cycles_elapsed.avg.per_second", "SM Frequency", "Hz"),
    MetricSpec("dram_frequency_hz", "dram__cycles_elapsed.avg.per_second", "DRAM Frequency",
               "Hz"),
    MetricSpec("elapsed_cycles", "gpc__cycles_elapsed.max", "Elapsed Cycles", "cycle"),
)

# What ncu's "GPU Speed Of Light Roofline Chart" section plots, derived as it derives them:
# achieved = per-cycle instruction rates x SMSP clock (an FMA counts 2), peak = per-cycle peaks
# x the clock of the run. CUDA-core FP32/FP64 only: tensor-core work is not counted here.
ROOFLINE_METRICS = (
    MetricSpec("fp32_flop_per_s", "", "FP32 Achieved", "FLOP/s"),
    MetricSpec("fp64_flop_per_s", "", "FP64 Achieved", "FLOP/s"),
    MetricSpec("peak_fp32_flop_per_s", "", "FP32 Peak", "FLOP/s"),
    MetricSpec("peak_fp64_flop_per_s", "", "FP64 Peak", "FLOP/s"),
    MetricSpec("peak_dram_bytes_per_s", "", "DRAM Peak Bandwidth", "B/s"),
    MetricSpec("dram_bytes", "", "DRAM Bytes", "B"),
    MetricSpec("arithmetic_intensity", "", "Arithmetic Intensity (DRAM)", "FLOP/B"),
    MetricSpec("ridge_point", "", "Ridge Point (DRAM)", "FLOP/B"),
)

ALL_METRICS = {spec.key: spec for spec in SOL_METRICS + ROOFLINE_METRICS}

_FP32_INPUTS = ("smsp__sass_thread_inst_executed_op_fadd_pred_on.sum.per_cycle_elapsed",
                "smsp__sass_thread_inst_executed_op_fmul_pred_on.sum.per_cycle_elapsed",
                "derived__smsp__sass_thread_inst_executed_op_ffma_pred_on_x2")
_FP64_INPUTS = ("smsp__sass_thread_inst_executed_op_dadd_pred_on.sum.per_cycle_elapsed",
                "smsp__sass_thread_inst_executed_op_dmul_pred_on.sum.per_cycle_elapsed",
                "derived__smsp__sass_thread_inst_executed_op_dfma_pred_on_x2")
_SMSP_HZ = "smsp__cycles_elapsed.avg.per_second"
_SM_HZ = "sm__cycles_elapsed.avg.per_second"
_PEAK_FP32 = "derived__sm__sass_thread_inst_executed_op_ffma_pred_on_x2"
_PEAK_FP64 = "derived__sm__sass_thread_inst_executed_op_dfma_pred_on_x2"
_DRAM_PEAK_PER_CYCLE = "dram__bytes.sum.peak_sustained"
_DRAM_HZ = "dram__cycles_elapsed.avg.per_second"
_DRAM_BYTES = ("dram__bytes_read.sum", "dram__bytes_write.sum")
_LAUNCH = ("launch__grid_dim_x", "launch__grid_dim_y", "launch__grid_dim_z",
           "launch__block_dim_x", "launch__block_dim_y", "launch__block_dim_z",
           "launch__registers_per_thread", "launch__grid_size", "launch__block_size",
           "launch__shared_mem_per_block", "device__attribute_display_name")

# The time identity `ab --explain` splits a duration change with (tools/ncu/change.py):
# per scheduler, active cycles = instructions x warp cycles per issued instruction / active
# warps, and duration = active cycles / busy share / clock. All from the hint sections
# (InstructionStats, WarpStateStats, Occupancy, LaunchStats).
INSTRUCTIONS = "smsp__inst_executed.sum"
WARP_CYCLES_PER_ISSUE = "smsp__average_warp_latency_per_inst_issued.ratio"
ACTIVE_WARPS = "smsp__warps_active.avg.per_cycle_active"
SMSP_ACTIVE_CYCLES = "smsp__cycles_active.avg"
SMSP_ELAPSED_CYCLES = "smsp__cycles_elapsed.avg"
SMSP_HZ = _SMSP_HZ
REGISTER_LIMIT = "launch__occupancy_limit_registers"
# Warp stall reasons per issued instruction (WarpStateStats), the names ncu 2025.3 gives on
# Hopper; a reason a report lacks is skipped.
STALL_RATIO = "smsp__average_warps_issue_stalled_{}_per_issue_active.ratio"
STALL_REASONS = ("barrier", "branch_resolving", "dispatch_stall", "drain", "gmma", "imc_miss",
                 "lg_throttle", "long_scoreboard", "math_pipe_throttle", "membar",
                 "mio_throttle", "misc", "no_instruction", "not_selected", "selected",
                 "short_scoreboard", "sleeping", "tex_throttle", "wait")
TIME_MODEL = (INSTRUCTIONS, WARP_CYCLES_PER_ISSUE, ACTIVE_WARPS, SMSP_ACTIVE_CYCLES,
              SMSP_ELAPSED_CYCLES, SMSP_HZ, REGISTER_LIMIT,
              *(STALL_RATIO.format(reason) for reason in STALL_REASONS))

# Every ncu metric a KernelProfile is built from (a full-set report holds ~2200 per kernel).
READ_METRICS = tuple(dict.fromkeys(
    [s.ncu_name for s in SOL_METRICS] + list(_FP32_INPUTS + _FP64_INPUTS + _DRAM_BYTES + _LAUNCH)
    + [_SMSP_HZ, _SM_HZ, _PEAK_FP32, _PEAK_FP64, _DRAM_PEAK_PER_CYCLE, _DRAM_HZ]
    + list(TIME_MODEL)))

# Per-instruction counters of ncu's Source Counters section (one instance per SASS address,
# the address being its correlation id), summed per source line: gpubench's key -> ncu's
# metric. Only what the hints point at: instructions, global sectors actual/ideal/excess (the
# "L2 Theoretical Sectors Global" columns of ncu's source page), shared wavefronts, and warp
# stall samples (all samples; reasons are found by prefix, see STALL_PREFIX).
SOURCE_COUNTERS = {
    "inst_executed": "inst_executed",
    "samples": "smsp__pcsamp_sample_count",
    "l1_global_requests": "memory_l1_tag_requests_global",
    "global_sectors": "memory_l2_theoretical_sectors_global",
    "global_sectors_ideal": "memory_l2_theoretical_sectors_global_ideal",
    "global_excess_sectors": "derived__memory_l2_theoretical_sectors_global_excessive",
    "shared_wavefronts": "memory_l1_wavefronts_shared",
    "shared_wavefronts_ideal": "memory_l1_wavefronts_shared_ideal",
    "shared_excess_wavefronts": "derived__memory_l1_wavefronts_shared_excessive",
}
# Warp stall samples of one reason: key 'stall_<reason>'. The reasons are read from the report
# rather than listed, since ncu adds some per architecture (Hopper: warpgroup_arrive); the
# '_not_issued' variants (samples where no warp issued) are left out: ncu's hints and its
# "Warp Stall Sampling (All Samples)" column count all samples.
STALL_PREFIX = "smsp__pcsamp_warps_issue_stalled_"
NOT_ISSUED_SUFFIX = "_not_issued"
# Which global accesses an instruction makes, so that excess sectors split into loads and
# stores (ncu's access-pattern hints are about one or the other). The values are those of the
# recorded H200 report, where ncu's source page prints them as "Load" (LDG) and "Store" (STG);
# other values (atomics, reductions) count only in the total.
ACCESS_TYPE_METRIC = "memory_access_type"
ACCESS_TYPES = {2: "load", 4: "store"}
SPLIT_BY_ACCESS = ("global_excess_sectors", "global_sectors")


def split_by_access(values: Mapping[int, float], access_types: Mapping[int, float],
                    key: str) -> dict[str, dict[int, float]]:
    """`values` per address divided by the address's access type (ACCESS_TYPES):
    {'<key>_load': ..., '<key>_store': ...}. An address of another type is in neither."""
    split: dict[str, dict[int, float]] = {f"{key}_{kind}": {} for kind in ACCESS_TYPES.values()}
    for pc, value in values.items():
        kind = ACCESS_TYPES.get(int(access_types.get(pc, 0)))
        if kind is not None:
            split[f"{key}_{kind}"][pc] = value
    return split


def sum_by_line(per_pc: Mapping[str, Mapping[int, float]],
                where: Mapping[int, tuple[str, int]]) -> list[dict]:
    """Per-address counters summed per (file, line), in file and line order, as plain
    dicts: {'file', 'line', 'counters'}. Addresses with no line are left out of the lines
    (their counts stay in the totals, so shares never overstate a line)."""
    sums: dict[tuple[str, int], dict[str, float]] = {}
    for key, values in per_pc.items():
        for pc, value in values.items():
            if pc in where:
                counters = sums.setdefault(where[pc], {})
                counters[key] = counters.get(key, 0.0) + value
    return [{"file": file, "line": line, "counters": sums[(file, line)]}
            for file, line in sorted(sums)]


def derived_metrics(raw: Mapping[str, Any]) -> dict[str, float]:
    """SOL_METRICS picked out of the raw ncu values, plus the ROOFLINE_METRICS derived from them.

    A key is absent when the report lacks what it needs (a `--section` subset, an older ncu).
    """
    metrics = {s.key: v for s in SOL_METRICS if (v := to_float(raw.get(s.ncu_name))) is not None}
    metrics.update(_roofline(raw))
    return metrics


def _roofline(raw: Mapping[str, Any]) -> dict[str, float]:
    values: dict[str, float | None] = {
        "fp32_flop_per_s": _times(_sum(raw, _FP32_INPUTS), raw, _SMSP_HZ),
        "fp64_flop_per_s": _times(_sum(raw, _FP64_INPUTS), raw, _SMSP_HZ),
        "peak_fp32_flop_per_s": _times(to_float(raw.get(_PEAK_FP32)), raw, _SM_HZ),
        "peak_fp64_flop_per_s": _times(to_float(raw.get(_PEAK_FP64)), raw, _SM_HZ),
        "peak_dram_bytes_per_s": _times(to_float(raw.get(_DRAM_PEAK_PER_CYCLE)), raw, _DRAM_HZ),
        "dram_bytes": _sum(raw, _DRAM_BYTES),
    }
    fp32, fp64 = values["fp32_flop_per_s"], values["fp64_flop_per_s"]
    bandwidth = to_float(raw.get("dram__bytes.sum.per_second"))
    if fp32 is not None and fp64 is not None and bandwidth:
        values["arithmetic_intensity"] = (fp32 + fp64) / bandwidth
    # The ridge of the precision the kernel mostly computes in (FP32 when it computes nothing).
    peak = values["peak_fp64_flop_per_s"] if (fp64 or 0) > (fp32 or 0) \
        else values["peak_fp32_flop_per_s"]
    if peak is not None and values["peak_dram_bytes_per_s"]:
        values["ridge_point"] = peak / values["peak_dram_bytes_per_s"]
    return {k: v for k, v in values.items() if v is not None}


def _sum(raw: Mapping[str, Any], names: tuple[str, ...]) -> float | None:
    """The sum of the named metrics, or None when any is missing."""
    parts = [value for n in names if (value := to_float(raw.get(n))) is not None]
    return sum(parts) if len(parts) == len(names) else None


def _times(value: float | None, raw: Mapping[str, Any], rate_name: str) -> float | None:
    rate = to_float(raw.get(rate_name))
    return None if value is None or rate is None else value * rate


def to_float(value: Any) -> float | None:
    """A metric's value as a number; None for a missing one, a bool or text."""
    if isinstance(value, bool) or value is None:
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def to_int(value: Any) -> int | None:
    """A metric's value as a whole number (ncu gives launch dimensions as floats); or None."""
    number = to_float(value)
    return None if number is None else int(number)
