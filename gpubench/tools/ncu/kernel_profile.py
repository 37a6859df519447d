"""What gpubench knows of one profiled kernel launch (`KernelProfile`, its hints and its
per-line counters), and how it is made from the plain dict the report reader copies out of
ncu_report, so that views and most tests need no NVIDIA code."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gpubench.timing.nvtx_ranges import DOMAIN as GPUBENCH_DOMAIN
from gpubench.tools.ncu import rules as ncu_rules
from gpubench.tools.ncu.metrics import derived_metrics, to_float, to_int
from gpubench.tools.ncu.rules import FocusMetric, RuleResult

# ncu_report's MsgType (NONE, OK, OPTIMIZATION, WARNING, ERR) and SpeedupType (1 local, 2 global).
RULE_TYPES = {0: ncu_rules.INF, 1: ncu_rules.INF, 2: ncu_rules.OPT, 3: ncu_rules.WRN,
              4: ncu_rules.ERROR}
SPEEDUP_TYPES = {1: ncu_rules.LOCAL, 2: ncu_rules.GLOBAL}


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


def profile_from_raw(raw: Mapping[str, Any], launch_index: int) -> KernelProfile:
    """A KernelProfile from the plain dict of report.py's `_read_action`."""
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
        registers_per_thread=to_int(metrics.get("launch__registers_per_thread")),
        duration_ns=to_float(metrics.get("gpu__time_duration.sum")),
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


def source_from_raw(raw: Mapping[str, Any] | None) -> KernelSource | None:
    """A KernelSource from the dict of report.py's `_read_source`; None when it is empty."""
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
        estimated_speedup_pct=to_float(estimate.get("speedup")),
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


def _dims(metrics: Mapping[str, Any], prefix: str) -> tuple[int, int, int] | None:
    x, y, z = (to_int(metrics.get(f"{prefix}_{axis}")) for axis in "xyz")
    return None if x is None or y is None or z is None else (x, y, z)
