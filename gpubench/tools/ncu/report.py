"""Reading .ncu-rep reports with NVIDIA's `ncu_report` module, into plain frozen dataclasses.

The module is optional (a 17 MB wheel: `pip install 'gpubench[ncu]'`) and also ships inside
every ncu installation, so `import_ncu_report` tries both. Only `_read_report` and its helpers
touch the module: they copy what gpubench uses into plain dicts, and `profile_from_raw` turns
those into a `KernelProfile` without it, so views and most tests need no NVIDIA code.
The two copies differ (ncu 2025.3.1's own has no `IAction.sections()`), so what one lacks is
detected by feature, never by version: see `_read_sections` and `_read_source`.
Metric names are the ones ncu 2025.3's own sections use (checked on H100 and H200 reports).
"""

from __future__ import annotations

import importlib
import importlib.util
import re
import shutil
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any, NamedTuple

from gpubench.errors import EnvironmentProblem, UsageError
from gpubench.timing.nvtx_ranges import DOMAIN as GPUBENCH_DOMAIN
from gpubench.tools.ncu import rules as ncu_rules

INSTALL_HINT = "pip install ncu-report (or pip install 'gpubench[ncu]')"
# Where ncu usually lives when it is not on PATH; module-level so tests can point them elsewhere.
DEFAULT_NCU = "/usr/local/cuda/bin/ncu"
NSIGHT_COMPUTE_ROOT = Path("/opt/nvidia/nsight-compute")

# ncu_report's MsgType (NONE, OK, OPTIMIZATION, WARNING, ERR) and SpeedupType (1 local, 2 global).
RULE_TYPES = {0: ncu_rules.INF, 1: ncu_rules.INF, 2: ncu_rules.OPT, 3: ncu_rules.WRN,
              4: ncu_rules.ERROR}
SPEEDUP_TYPES = {1: ncu_rules.LOCAL, 2: ncu_rules.GLOBAL}

# Identifier -> display name of ncu's stock sections, as ncu 2025.3.1's reports list them (the
# 21 of `--set full`, H100 and H200; tests check it against the fixtures). Used only with a
# reader that cannot list a report's sections, for the sections its rule results name.
STOCK_SECTION_NAMES = {
    "ComputeWorkloadAnalysis": "Compute Workload Analysis",
    "InstructionStats": "Instruction Statistics",
    "LaunchStats": "Launch Statistics",
    "MemoryWorkloadAnalysis": "Memory Workload Analysis",
    "MemoryWorkloadAnalysis_Chart": "Memory Workload Analysis Chart",
    "MemoryWorkloadAnalysis_Tables": "Memory Workload Analysis Tables",
    "NumaAffinity": "NUMA Affinity",
    "Nvlink_Tables": "NVLink Tables",
    "Nvlink_Topology": "NVLink Topology",
    "Occupancy": "Occupancy",
    "PmSampling": "PM Sampling",
    "SchedulerStats": "Scheduler Statistics",
    "SourceCounters": "Source Counters",
    "SpeedOfLight": "GPU Speed Of Light Throughput",
    "SpeedOfLight_HierarchicalDoubleRooflineChart":
        "GPU Speed Of Light Hierarchical Roofline Chart (Double Precision)",
    "SpeedOfLight_HierarchicalHalfRooflineChart":
        "GPU Speed Of Light Hierarchical Roofline Chart (Half Precision)",
    "SpeedOfLight_HierarchicalSingleRooflineChart":
        "GPU Speed Of Light Hierarchical Roofline Chart (Single Precision)",
    "SpeedOfLight_HierarchicalTensorRooflineChart":
        "GPU Speed Of Light Hierarchical Roofline Chart (Tensor Core)",
    "SpeedOfLight_RooflineChart": "GPU Speed Of Light Roofline Chart",
    "WarpStateStats": "Warp State Statistics",
    "WorkloadDistribution": "GPU and Memory Workload Distribution",
}


class ReportError(UsageError):
    """A report path that is missing, unreadable, truncated, or holds no profiled kernel."""


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

# Every ncu metric a KernelProfile is built from (a full-set report holds ~2200 per kernel).
READ_METRICS = tuple(dict.fromkeys(
    [s.ncu_name for s in SOL_METRICS] + list(_FP32_INPUTS + _FP64_INPUTS + _DRAM_BYTES + _LAUNCH)
    + [_SMSP_HZ, _SM_HZ, _PEAK_FP32, _PEAK_FP64, _DRAM_PEAK_PER_CYCLE, _DRAM_HZ]))

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


class FocusMetric(NamedTuple):
    """A metric a rule points at, with ncu's advice about it."""

    name: str
    value: float | str | None
    info: str = ""


@dataclass(frozen=True)
class RuleResult:
    """One ncu rule result (a 'hint'), from a report or parsed from ncu's console text."""

    rule_id: str  # 'LaunchConfiguration'; '' when parsed from console text
    section_id: str  # 'LaunchStats'; '' when parsed from console text
    name: str  # the rule's name: 'Launch Configuration'
    title: str  # the message's title: 'Small Grid'; '' for many rules
    type: str  # 'OPT', 'WRN', 'INF' or 'ERROR'
    message: str  # markup rendered, whitespace collapsed
    raw_message: str  # as stored, with ncu's @section:..@ / @url:..@ markup
    speedup_type: str | None = None  # 'global', 'local', or None without an estimate
    estimated_speedup_pct: float | None = None
    focus_metrics: tuple[FocusMetric, ...] = ()
    section_name: str = ""  # 'Launch Statistics', as ncu's console prints it

    @property
    def heading(self) -> str:
        """What to call the hint in one line: its title, else the rule's name, else its section."""
        return self.title or self.name or self.section_name or self.rule_id


@dataclass(frozen=True)
class SourceLine:
    """One line of the kernel's high-level source (CUDA, or Python for Triton) and the sum of
    the SOURCE_COUNTERS of the SASS instructions compiled from it."""

    file: str  # as the line info names it: a path, or the label of a `#line` directive
    line: int
    counters: dict[str, float] = field(default_factory=dict, hash=False)  # zeros left out


@dataclass(frozen=True)
class KernelSource:
    """The per-line counters of one launch, the kernel-wide totals they are shares of, and
    the files' text as the report embeds it (`--import-source yes`; '' when it does not)."""

    lines: tuple[SourceLine, ...] = ()
    totals: dict[str, float] = field(default_factory=dict, hash=False)
    texts: dict[str, str] = field(default_factory=dict, hash=False)

    def text(self, file: str, line: int) -> str:
        """The line's text, stripped; '' when the report does not hold the file."""
        lines = self.texts.get(file, "").splitlines()
        return lines[line - 1].strip() if 0 < line <= len(lines) else ""


@dataclass(frozen=True)
class KernelProfile:
    """One profiled kernel launch of a report: identity, speed-of-light numbers and hints."""

    name: str  # demangled: 'square_kernel(const float *, float *, int)'
    base_name: str  # before '(': 'square_kernel', to match kernels across tools
    launch_index: int  # order in the report, across ranges: the "ID" of ncu's CSV pages
    grid: tuple[int, int, int] | None
    block: tuple[int, int, int] | None
    registers_per_thread: int | None
    duration_ns: float | None  # gpu__time_duration.sum
    device: str = ""
    function_name: str = ""  # ncu's function name base: what a Triton kernel is called
    metrics: dict[str, float] = field(default_factory=dict, hash=False)  # keys: ALL_METRICS
    raw_metrics: dict[str, Any] = field(default_factory=dict, hash=False, repr=False)
    sections: dict[str, str] = field(default_factory=dict, hash=False)  # id -> display name
    # False: the reader could not list the report's sections (ncu 2025.3.1's bundled
    # ncu_report), so `sections` holds only those its rule results name; others may be there.
    sections_complete: bool = True
    nvtx_range: str | None = None  # innermost push/pop range of the gpubench domain
    nvtx: dict[str, tuple[str, ...]] = field(default_factory=dict, hash=False)
    rules: tuple[RuleResult, ...] = ()
    # None: the report has no source-correlated counters (no SourceCounters section, or a
    # build without line info).
    source: KernelSource | None = field(default=None, hash=False, repr=False)

    def hints(self, include_info: bool = False) -> list[RuleResult]:
        """The rules as gpubench shows them: ranked, INF only on request."""
        return ncu_rules.rank(self.rules, include_info)

    @property
    def roofline_bound(self) -> str | None:
        """'memory' or 'compute': which side of the DRAM roofline's ridge the kernel sits on."""
        intensity = self.metrics.get("arithmetic_intensity")
        ridge = self.metrics.get("ridge_point")
        if intensity is None or ridge is None:
            return None
        return "memory" if intensity < ridge else "compute"


# --- importing NVIDIA's module ---------------------------------------------------------------


def import_ncu_report(ncu_path: str | None = None) -> ModuleType:
    """The `ncu_report` module: the PyPI package if installed, else the copy inside ncu."""
    module = _import_installed()
    if module is not None:
        return module
    python_dir = find_ncu_python_dir(ncu_path)
    if python_dir is None:
        raise EnvironmentProblem(
            "reading .ncu-rep files needs NVIDIA's ncu_report module, which is not installed "
            f"and no ncu installation with extras/python/ncu_report.py was found: {INSTALL_HINT}")
    return import_from_dir(python_dir)


def _import_installed() -> ModuleType | None:
    try:
        return importlib.import_module("ncu_report")
    except ImportError:
        return None


def find_ncu_python_dir(ncu_path: str | None = None) -> Path | None:
    """The first `extras/python` holding ncu_report.py among ncu's likely install folders."""
    for candidate in ncu_python_dirs(ncu_path):
        if (candidate / "ncu_report.py").is_file():
            return candidate
    return None


def ncu_python_dirs(ncu_path: str | None = None) -> list[Path]:
    """Where `extras/python` may be, most specific first.

    The ncu executable is `<install>/ncu`, or deeper (`<install>/target/<platform>/ncu`), or a
    wrapper in cuda/bin whose real install is `<cuda>/nsight-compute-<ver>/` or
    `/opt/nvidia/nsight-compute/<ver>/`; symlinks are resolved first.
    """
    executables = [p for p in (ncu_path, shutil.which("ncu"), DEFAULT_NCU) if p]
    candidates: list[Path] = []
    for exe in executables:
        given = Path(exe).expanduser()
        real = given.resolve()
        candidates += [parent / "extras" / "python" for parent in list(real.parents)[:4]]
        for cuda_root in dict.fromkeys((real.parent.parent, given.parent.parent)):
            candidates += _versioned(cuda_root.glob("nsight-compute-*"))
    candidates += _versioned(NSIGHT_COMPUTE_ROOT.glob("*"))
    return list(dict.fromkeys(candidates))


def _versioned(installs: Iterator[Path]) -> list[Path]:
    """extras/python of each install folder, the newest version first."""
    def version(path: Path) -> tuple[int, ...]:
        return tuple(int(n) for n in re.findall(r"\d+", path.name))

    return [p / "extras" / "python" for p in sorted(installs, key=version, reverse=True)]


def import_from_dir(python_dir: Path) -> ModuleType:
    """Load `python_dir/ncu_report.py` as `ncu_report`.

    ncu's copy is a SWIG wrapper that does a top-level `import _ncu_report` (the native library
    beside it), so its folder must be on sys.path while it loads.
    """
    path = Path(python_dir) / "ncu_report.py"
    spec = importlib.util.spec_from_file_location("ncu_report", path)
    if spec is None or spec.loader is None:
        raise EnvironmentProblem(f"cannot load {path}: {INSTALL_HINT}")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(python_dir))
    sys.modules["ncu_report"] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        sys.modules.pop("ncu_report", None)
        raise EnvironmentProblem(f"cannot load {path} ({exc}): {INSTALL_HINT}") from exc
    finally:
        sys.path.remove(str(python_dir))
    return module


# --- reading a report (the part that touches ncu_report) -------------------------------------


def load_profiles(path: str | Path, ncu_report_module: ModuleType | None = None
                  ) -> list[KernelProfile]:
    """Every profiled kernel launch in the .ncu-rep at `path`, in report order."""
    path = Path(path)
    if not path.is_file():
        raise ReportError(f"no ncu report at {path}")
    module = ncu_report_module or import_ncu_report()
    raws = _read_report(path, module)
    return [profile_from_raw(raw, index) for index, raw in enumerate(raws)]


def _read_report(path: Path, module: ModuleType) -> list[dict]:
    """Each launch of the report as `_read_action`'s dict, or a ReportError naming the file.

    ncu_report hardly ever refuses a bad file: garbage loads as 0 ranges, and a truncated
    report as 0 ranges or as launches with no name and no metrics (seen cutting the fixtures
    at 1% to 99.9%), which would otherwise show as a kernel called 'None' with grid '(?)'.
    """
    try:
        context = module.load_report(str(path))
    except Exception as exc:  # the SWIG layer raises plain exceptions with useful text
        raise ReportError(f"{path}: ncu_report could not read it ({exc})") from exc
    raws = list(_read_actions(context, module))
    if not raws:
        raise ReportError(f"{path}: no profiled kernel in it: not an ncu report, or truncated "
                          "or corrupt, or ncu profiled nothing")
    broken = [index for index, raw in enumerate(raws) if raw is None]
    if broken:
        raise ReportError(f"{path}: truncated or corrupt ncu report: launch {broken[0]} (of "
                          f"{len(raws)}) has no kernel name and no metrics")
    return raws


def _read_actions(context: Any, module: ModuleType) -> Iterator[dict | None]:
    """`_read_action` of every action in every range; None for one that is not intact."""
    for range_index in range(context.num_ranges()):
        report_range = context.range_by_idx(range_index)
        for action_index in range(report_range.num_actions()):
            action = report_range.action_by_idx(action_index)
            yield _read_action(action, module) if _intact(action, module) else None


def _intact(action: Any, module: ModuleType) -> bool:
    """False for the empty launches a truncated report yields: no name, no metric at all."""
    return (action.name(module.IAction.NameBase_DEMANGLED) is not None
            and len(action.metric_names()) > 0)


def _read_action(action: Any, module: ModuleType) -> dict:
    """What gpubench uses of one action (kernel launch), as plain Python values."""
    metrics = {}
    for name in READ_METRICS:
        metric = action.metric_by_name(name)
        value = None if metric is None else metric.value()
        if value is not None:
            metrics[name] = value
    rules = list(action.rule_results_as_dicts())
    sections, complete = _read_sections(action, rules)
    return {
        "name": action.name(module.IAction.NameBase_DEMANGLED),
        "function_name": action.name(module.IAction.NameBase_FUNCTION),
        "metrics": metrics,
        "sections": sections,
        "sections_complete": complete,
        "rules": rules,
        "nvtx": _nvtx_ranges(action.nvtx_state()),
        "source": _read_source(action),
    }


def _read_sections(action: Any, rules: list[dict]) -> tuple[dict[str, str], bool]:
    """The report's sections (id -> display name), and whether that is all of them.

    The PyPI ncu-report lists them (`IAction.sections()`). ncu 2025.3.1's bundled copy has no
    such method; then the only sections known to be in the report are those its rule results
    name (a section with no rule, or whose rules did not run, is not seen), with their names
    from STOCK_SECTION_NAMES. Metrics cannot settle the rest: some sections hold none, and
    roofline charts reuse the speed-of-light ones.
    """
    if hasattr(action, "sections"):
        return {str(s.identifier()): str(s.name()) for s in action.sections()}, True
    named = dict.fromkeys(str(rule.get("section_identifier") or "") for rule in rules)
    return {sid: STOCK_SECTION_NAMES.get(sid, "") for sid in named if sid}, False


def _nvtx_ranges(state: Any) -> dict[str, tuple[str, ...]]:
    """Push/pop ranges open at launch, per domain name, outermost first ({} without --nvtx)."""
    if state is None:
        return {}
    ranges = {}
    for domain_id in state.domains():
        domain = state.domain_by_id(domain_id)
        if domain is None:
            continue
        count = len(domain.push_pop_ranges())
        stack = (domain.push_pop_range(i) for i in range(count))
        ranges[str(domain.name())] = tuple(str(r.name()) for r in stack if r is not None)
    return ranges


def _read_source(action: Any) -> dict:
    """The launch's source-correlated counters summed per source line, the kernel totals,
    and the embedded file texts; {} without them.

    Both readers have `source_info` (address -> file and line) and `source_files`; a report
    made without `-lineinfo` has per-address counters but no line for any address, and is
    treated as one without source.
    """
    if not hasattr(action, "source_info"):
        return {}
    per_pc = {key: _per_pc(action, name) for key, name in _source_metrics(action).items()}
    access_types = _per_pc(action, ACCESS_TYPE_METRIC)
    for key in SPLIT_BY_ACCESS:
        per_pc.update(split_by_access(per_pc.get(key, {}), access_types, key))
    addresses = set().union(*per_pc.values())
    where = {pc: place for pc in sorted(addresses) if (place := _place(action, pc))}
    if not where:
        return {}
    lines = sum_by_line(per_pc, where)
    files = {line["file"] for line in lines}
    texts = {name: text for name, text in _source_texts(action).items() if name in files}
    totals = {key: sum(values.values()) for key, values in per_pc.items() if values}
    return {"lines": lines, "totals": totals, "texts": texts}


def _source_metrics(action: Any) -> dict[str, str]:
    """SOURCE_COUNTERS plus one 'stall_<reason>' key per stall reason the report holds."""
    stalls = {f"stall_{name.removeprefix(STALL_PREFIX)}": name
              for name in action.metric_names()
              if name.startswith(STALL_PREFIX) and not name.endswith(NOT_ISSUED_SUFFIX)}
    return {**SOURCE_COUNTERS, **stalls}


def _per_pc(action: Any, name: str) -> dict[int, float]:
    """{SASS address: value} of a per-instruction metric, zeros left out; {} when the report
    lacks it or it is not per instruction."""
    metric = action.metric_by_name(name)
    if metric is None or not metric.has_correlation_ids():
        return {}
    addresses = metric.correlation_ids()
    values: dict[int, float] = {}
    for index in range(metric.num_instances()):
        value = metric.as_double(index)
        if value:
            pc = int(addresses.as_uint64(index))
            values[pc] = values.get(pc, 0.0) + value
    return values


def _place(action: Any, pc: int) -> tuple[str, int] | None:
    """(file, line) of the source an address was compiled from; None without line info."""
    info = action.source_info(pc)
    if info is None:
        return None
    file, line = str(info.file_name() or ""), int(info.line())
    return (file, line) if file and line > 0 else None


def _source_texts(action: Any) -> dict[str, str]:
    """File -> embedded text. Both readers are documented to map names to contents (a SWIG
    std::map with items()); a reader returning bare names gives '' for each."""
    files = action.source_files()
    if hasattr(files, "items"):
        return {str(name): str(text or "") for name, text in files.items()}
    return {str(name): "" for name in files}


# --- pure conversion -------------------------------------------------------------------------


def profile_from_raw(raw: Mapping[str, Any], launch_index: int) -> KernelProfile:
    """A KernelProfile from `_read_action`'s plain dict."""
    metrics = raw.get("metrics", {})
    sections = dict(raw.get("sections", {}))
    name = str(raw.get("name", ""))
    nvtx = {k: tuple(v) for k, v in raw.get("nvtx", {}).items()}
    rules = (rule_from_dict(d, sections) for d in raw.get("rules", ()))
    return KernelProfile(
        name=name,
        base_name=base_name(name),
        launch_index=launch_index,
        grid=_dims(metrics, "launch__grid_dim"),
        block=_dims(metrics, "launch__block_dim"),
        registers_per_thread=_int(metrics.get("launch__registers_per_thread")),
        duration_ns=_float(metrics.get("gpu__time_duration.sum")),
        device=str(metrics.get("device__attribute_display_name", "")),
        function_name=str(raw.get("function_name", "")),
        metrics=derived_metrics(metrics),
        raw_metrics=dict(metrics),
        sections=sections,
        sections_complete=bool(raw.get("sections_complete", True)),
        nvtx_range=gpubench_range(nvtx),
        nvtx=nvtx,
        rules=tuple(r for r in rules if r is not None),
        source=source_from_raw(raw.get("source")),
    )


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


def source_from_raw(raw: Mapping[str, Any] | None) -> KernelSource | None:
    """A KernelSource from `_read_source`'s dict; None when it is empty."""
    if not raw or not raw.get("lines"):
        return None
    lines = tuple(SourceLine(str(line["file"]), int(line["line"]), dict(line["counters"]))
                  for line in raw["lines"])
    return KernelSource(lines, dict(raw.get("totals", {})), dict(raw.get("texts", {})))


def rule_from_dict(rule: Mapping[str, Any], section_names: Mapping[str, str] | None = None
                   ) -> RuleResult | None:
    """A RuleResult from one of `rule_results_as_dicts()`; None for a rule with no message."""
    message = rule.get("rule_message") or {}
    if not message.get("message") and not message.get("title"):
        return None
    raw_text = str(message.get("message", ""))
    estimate = rule.get("speedup_estimation") or {}
    section_id = str(rule.get("section_identifier", ""))
    return RuleResult(
        rule_id=str(rule.get("rule_identifier", "")),
        section_id=section_id,
        name=str(rule.get("name", "")),
        title=ncu_rules.clean_message(str(message.get("title", ""))),
        type=RULE_TYPES.get(message.get("type"), ncu_rules.INF),
        message=ncu_rules.clean_message(raw_text),
        raw_message=raw_text,
        speedup_type=SPEEDUP_TYPES.get(estimate.get("type")) if estimate else None,
        estimated_speedup_pct=_float(estimate.get("speedup")),
        focus_metrics=tuple(FocusMetric(str(f.get("name", "")), f.get("value"),
                                        str(f.get("info", "")))
                            for f in rule.get("focus_metrics", ())),
        section_name=(section_names or {}).get(section_id, ""),
    )


def base_name(demangled: str) -> str:
    """'square_kernel(const float *, ...)' -> 'square_kernel'; a leading 'void ' is dropped.

    CUPTI (torch.profiler) and ncu spell parameter lists differently, so tools agree only on
    the part before '('.
    """
    text = demangled.replace("(anonymous namespace)", "{anonymous}")
    text = text.split("(", 1)[0].strip().replace("{anonymous}", "(anonymous namespace)")
    return text.removeprefix("void ").strip()


def gpubench_range(nvtx: Mapping[str, tuple[str, ...]]) -> str | None:
    """The innermost push/pop range of gpubench's own NVTX domain, or None."""
    ranges = nvtx.get(GPUBENCH_DOMAIN) or ()
    return ranges[-1] if ranges else None


def derived_metrics(raw: Mapping[str, Any]) -> dict[str, float]:
    """SOL_METRICS picked out of the raw ncu values, plus the ROOFLINE_METRICS derived from them.

    A key is absent when the report lacks what it needs (a `--section` subset, an older ncu).
    """
    metrics = {s.key: v for s in SOL_METRICS if (v := _float(raw.get(s.ncu_name))) is not None}
    metrics.update(_roofline(raw))
    return metrics


def _roofline(raw: Mapping[str, Any]) -> dict[str, float]:
    values: dict[str, float | None] = {
        "fp32_flop_per_s": _times(_sum(raw, _FP32_INPUTS), raw, _SMSP_HZ),
        "fp64_flop_per_s": _times(_sum(raw, _FP64_INPUTS), raw, _SMSP_HZ),
        "peak_fp32_flop_per_s": _times(_float(raw.get(_PEAK_FP32)), raw, _SM_HZ),
        "peak_fp64_flop_per_s": _times(_float(raw.get(_PEAK_FP64)), raw, _SM_HZ),
        "peak_dram_bytes_per_s": _times(_float(raw.get(_DRAM_PEAK_PER_CYCLE)), raw, _DRAM_HZ),
        "dram_bytes": _sum(raw, _DRAM_BYTES),
    }
    fp32, fp64 = values["fp32_flop_per_s"], values["fp64_flop_per_s"]
    bandwidth = _float(raw.get("dram__bytes.sum.per_second"))
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
    parts = [value for n in names if (value := _float(raw.get(n))) is not None]
    return sum(parts) if len(parts) == len(names) else None


def _times(value: float | None, raw: Mapping[str, Any], rate_name: str) -> float | None:
    rate = _float(raw.get(rate_name))
    return None if value is None or rate is None else value * rate


def _dims(metrics: Mapping[str, Any], prefix: str) -> tuple[int, int, int] | None:
    x, y, z = (_int(metrics.get(f"{prefix}_{axis}")) for axis in "xyz")
    return None if x is None or y is None or z is None else (x, y, z)


def _float(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _int(value: Any) -> int | None:
    number = _float(value)
    return None if number is None else int(number)
