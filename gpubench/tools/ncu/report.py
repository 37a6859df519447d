"""Reading .ncu-rep reports with NVIDIA's `ncu_report` module, into plain frozen dataclasses.

Only `_read_report` and its helpers touch the module (report_module.py finds and imports
it): they copy what gpubench uses into plain dicts, and `profile_from_raw`
(kernel_profile.py) turns those into a `KernelProfile` without it, so views and most tests
need no NVIDIA code. The two copies of the module (PyPI's ncu-report, and the one inside
ncu) differ (ncu 2025.3.1's own has no `IAction.sections()`), so what one lacks is detected
by feature, never by version: see `_read_sections` and `_read_source`.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

from gpubench.errors import UsageError
from gpubench.tools.ncu.kernel_profile import KernelProfile, profile_from_raw
from gpubench.tools.ncu.metrics import (
    ACCESS_TYPE_METRIC,
    NOT_ISSUED_SUFFIX,
    READ_METRICS,
    SOURCE_COUNTERS,
    SPLIT_BY_ACCESS,
    STALL_PREFIX,
    split_by_access,
    sum_by_line,
)
from gpubench.tools.ncu.report_module import import_ncu_report

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
