"""Which source lines an ncu hint is about: pure attribution over a KernelProfile's per-line
counters (kernel_profile.KernelSource), no NVIDIA module needed.

ncu's rules say *what* costs time (uncoalesced stores, long-scoreboard stalls, ...) and its
source counters say *where* each counter accrues, instruction by instruction; gpubench sums
them per source line when it reads the report. This module joins the two: every hint that
concerns memory access or warp stalls is given the one per-line counter it is about
(RULE_METRICS says which, and why), and the lines holding the largest shares of the kernel's
total of that counter are the hint's source lines. Hints about the launch, occupancy,
pipes or compression have no per-line counter, and get no lines rather than a guess.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import NamedTuple

from gpubench.tools.ncu.kernel_profile import KernelProfile, SourceLine
from gpubench.tools.ncu.rules import RuleResult

# Lines listed under a hint: the first few hold most of a counter in practice (the naive
# transpose: one line holds 100% of the excess sectors), and each costs a line of screen.
TOP_LINES = 3


class SourceMetric(NamedTuple):
    """A per-line counter a hint is about."""

    key: str  # a counter of KernelSource: metrics.SOURCE_COUNTERS' keys or 'stall_<reason>'
    label: str  # what a share is of, in words: 'excess global store sectors'


class SourceHit(NamedTuple):
    """One source line of a hint: where, what it says, and its share of the hint's counter."""

    file: str  # display name: 'naive.cu', 'matmul/spec.py: cuda_sources[0]'
    path: str  # as the report names it
    line: int
    text: str  # the line's source text, stripped; '' when the report does not embed it
    share: float  # of the kernel's total of `metric`, 0..1
    value: float
    metric: SourceMetric


# --- which hint is about which counter -------------------------------------------------------

ALL_STALLS = SourceMetric("samples", "warp stall samples")
GLOBAL_EXCESS = SourceMetric("global_excess_sectors", "excess global sectors")
GLOBAL_EXCESS_BY_OPERATION = {
    "load": SourceMetric("global_excess_sectors_load", "excess global load sectors"),
    "store": SourceMetric("global_excess_sectors_store", "excess global store sectors"),
}
SHARED_EXCESS = SourceMetric("shared_excess_wavefronts", "excess shared wavefronts")
# When a hint's counter is zero on every line, the counter to rank lines by instead. An
# access-pattern hint measures bytes used per L1 sector, which has no per-instruction
# counter; the excess it causes shows at L2 only when sectors are fetched beyond the ideal.
# The H200's naive matmul had none there (its B loads hit L1: 18 of 32 bytes used, L2
# sectors = ideal), so its top hint pointed nowhere; the lines that move the operation's
# sectors are where that pattern lives.
FALLBACKS = {
    "global_excess_sectors_load": SourceMetric("global_sectors_load", "global load sectors"),
    "global_excess_sectors_store": SourceMetric("global_sectors_store",
                                                "global store sectors"),
}

# CPIStall names a stall reason in its focus metric 'smsp_average_<reason>' (and its title
# '<Reason> Stalls'); the sampling metric of one reason is spelled differently.
STALL_FOCUS_PREFIX = "smsp_average_"
STALL_ALIASES = {"no_instruction": "no_instructions"}


def stall_metric(rule: RuleResult) -> SourceMetric:
    """The samples of the stall reason a CPIStall hint names; all samples for the one that
    names none (ncu's INF pointing at the "Warp Stall Sampling (All Samples)" table)."""
    reason = next((f.name.removeprefix(STALL_FOCUS_PREFIX) for f in rule.focus_metrics
                   if f.name.startswith(STALL_FOCUS_PREFIX)), None)
    if reason is None and rule.title.endswith(" Stalls"):
        reason = rule.title.removesuffix(" Stalls").lower().replace(" ", "_")
    if reason is None:
        return ALL_STALLS
    reason = STALL_ALIASES.get(reason, reason)
    return SourceMetric(f"stall_{reason}", f"{reason.replace('_', ' ')} stall samples")


def access_pattern_metric(rule: RuleResult) -> SourceMetric | None:
    """Excess global sectors of the operation a '<cache> Global Load|Store Access Pattern' hint
    is about (its focus metric smsp__sass_average_data_bytes_per_sector_mem_global_op_ld|st,
    else its title); None for local memory, which has no per-instruction sectors."""
    names = " ".join(f.name for f in rule.focus_metrics)
    title = rule.title.lower()
    if "mem_global_op_ld" in names or "global load" in title:
        return GLOBAL_EXCESS_BY_OPERATION["load"]
    if "mem_global_op_st" in names or "global store" in title:
        return GLOBAL_EXCESS_BY_OPERATION["store"]
    return None


class Attribution(NamedTuple):
    metric: Callable[[RuleResult], SourceMetric | None]
    reason: str


# Rule identifier -> the counter its hints are about, and why. Rules not listed (launch
# configuration, occupancy, pipe utilization, FP instruction mix, L2 compression, speed of
# light, roofline, thread divergence) are about no per-line memory or stall counter.
RULE_METRICS: dict[str, Attribution] = {
    "UncoalescedGlobalAccess": Attribution(
        lambda rule: GLOBAL_EXCESS,
        "it counts the excessive sectors of all global accesses and points at ncu's 'L2 "
        "Theoretical Sectors Global Excessive' table: the same per-instruction counter"),
    "MemoryCacheAccessPattern": Attribution(
        access_pattern_metric,
        "few bytes used per sector moved means sectors beyond the ideal for that global load "
        "or store; local memory has no per-instruction sectors in the report"),
    "UncoalescedSharedAccess": Attribution(
        lambda rule: SHARED_EXCESS,
        "shared accesses needing more wavefronts than ideal: the per-instruction 'L1 "
        "Wavefronts Shared Excessive'"),
    "SharedMemoryConflicts": Attribution(
        lambda rule: SHARED_EXCESS,
        "a bank conflict replays a shared access as extra wavefronts, which is what the "
        "per-instruction excess wavefronts count"),
    "CPIStall": Attribution(
        stall_metric,
        "each '<Reason> Stalls' hint is about that stall reason; ncu's own source markers "
        "rank lines by the same warp stall samples"),
    "IssueSlotUtilization": Attribution(
        lambda rule: ALL_STALLS,
        "no eligible warp to issue: the hint sends the reader to where warps stall, all "
        "stall reasons together"),
}


def metric_for(rule: RuleResult) -> SourceMetric | None:
    """The per-line counter a hint is about, or None (see RULE_METRICS)."""
    attribution = RULE_METRICS.get(rule.rule_id)
    return attribution.metric(rule) if attribution else None


# --- the lines -------------------------------------------------------------------------------


def top_lines(profile: KernelProfile, rule: RuleResult, limit: int = TOP_LINES
              ) -> list[SourceHit]:
    """The `limit` lines with the largest shares of the hint's counter, largest first; [] for
    a hint with no counter, or a profile without source counters (or with none of it)."""
    metric = metric_for(rule)
    source = profile.source
    if metric is None or source is None:
        return []
    if source.totals.get(metric.key, 0.0) <= 0 and metric.key in FALLBACKS:
        metric = FALLBACKS[metric.key]
    total = source.totals.get(metric.key, 0.0)
    if total <= 0:
        return []

    def value(line: SourceLine) -> float:
        return line.counters.get(metric.key, 0.0)

    ranked = sorted((line for line in source.lines if value(line) > 0),
                    key=lambda line: (-value(line), line.file, line.line))
    return [SourceHit(display_name(line.file), line.file, line.line,
                      source.text(line.file, line.line), value(line) / total, value(line),
                      metric)
            for line in ranked[:limit]]


# A source gpubench builds from text, not a file, is named by a label in its `#line`
# directive (families/sources.py): 'matmul/spec.py: cuda_sources[0]'. Shown whole, since
# its basename would drop the family; the compiler may have put a folder in front.
_LABEL = re.compile(r"[^/\\]*[/\\]?spec\.py: \w+\[\d+\]$")
# Library code (Triton's tl.max, tl.sum are inlined from triton/language/standard.py) is
# named from its package down, so that it is not taken for a file of the user's.
_INSTALLED = re.compile(r"^.*[/\\](?:site|dist)-packages[/\\]")


def display_name(path: str) -> str:
    """'naive.cu' for '/home/me/kernels/naive.cu'; a `#line` label whole; an installed
    package's file from the package down ('triton/language/standard.py')."""
    label = _LABEL.search(path)
    if label:
        return label.group(0)
    if _INSTALLED.match(path):
        return _INSTALLED.sub("", path).replace("\\", "/")
    return re.split(r"[/\\]", path)[-1]


def share_text(share: float) -> str:
    """'97%'; '<1%' for a share that would round to nothing."""
    return f"{share * 100:.0f}%" if share >= 0.005 else "<1%"


def hit_to_dict(hit: SourceHit) -> dict:
    """A source line for JSON."""
    return {"file": hit.file, "path": hit.path, "line": hit.line, "text": hit.text,
            "share": hit.share, "value": hit.value, "metric": hit.metric.key,
            "metric_label": hit.metric.label}
