"""What a profiled program ran on the GPU, from its torch.profiler (Kineto) Chrome trace. Pure.

The course's first step ("which kernels affect performance the most"), without nsys:
- **kernels by name**: calls, total and mean device time, share of the kernels' time, who
  wrote them (cuBLAS, cuDNN, Triton, PyTorch, your CUDA), and the record_function/NVTX
  ranges their launches ran under;
- **how busy the GPU was**: the union of kernel, memcpy and memset intervals over the
  window from the first device event to the last, and the largest idle gaps (launch- or
  host-bound time);
- **a region**: only the kernels whose launch (the CPU-side runtime call, joined to the
  kernel by its correlation id) fell inside a range of that name, optionally after
  skipping its first N instances (warm-up steps, compilation).

Without a GPU the trace holds CPU ops only: those are grouped the same way.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from gpubench.format import compact_name, function_name

DEVICE_CATEGORIES = ("kernel", "gpu_memcpy", "gpu_memset")
RANGE_CATEGORIES = ("user_annotation",)
# The context manager of gpubench's API names its ranges with this prefix (region.py).
REGION_PREFIX = "gpubench.region:"
# Gaps shorter than this are launch latency between back-to-back kernels, not idleness
# worth listing (a launch costs ~2-5 us on an H200).
MIN_GAP_US = 10.0
TOP_GAPS = 5

# Who wrote a kernel, from its (demangled) name: the first pattern that matches wins.
# cuBLAS's and CUTLASS's GEMMs carry these tokens (nvjet: cuBLAS's Hopper kernels); Triton
# kernels, yours or torch.compile's (triton_poi_/triton_red_...), are plain C identifiers
# (no namespace, no parameter list); PyTorch's own live in at::, c10:: and its cub copy.
ORIGINS = (
    ("cuDNN", re.compile(r"cudnn|cudnn::|xmma_fprop|implicit_convolve", re.I)),
    ("cuBLAS", re.compile(r"cublas|gemm|gemv|sm\d+_xmma|cutlass|nvjet", re.I)),
    ("flash-attn", re.compile(r"flash", re.I)),
    ("PyTorch", re.compile(r"\bat::|\bc10::|^void at::|at_cuda_detail", re.I)),
    ("Triton", re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")),
)
OTHER_ORIGIN = "CUDA C++"


def cpu_origin(name: str) -> str:
    """A CPU op's origin: PyTorch's ATen, or the program's own (a record_function, Python)."""
    return "PyTorch" if name.startswith("aten::") else "program"


@dataclass(frozen=True)
class Event:
    """One complete ('X') trace event: what ran, where, when (us), for how long."""

    category: str
    name: str
    start_us: float
    duration_us: float
    tid: object = None
    correlation: int | None = None

    @property
    def end_us(self) -> float:
        return self.start_us + self.duration_us


@dataclass(frozen=True)
class KernelGroup:
    name: str
    origin: str
    calls: int
    total_us: float
    share: float  # of all kernels' time in the window
    ranges: tuple[str, ...] = ()  # the innermost ranges its launches ran under, most common first

    @property
    def mean_us(self) -> float:
        return self.total_us / self.calls if self.calls else 0.0


@dataclass(frozen=True)
class Gap:
    start_us: float  # from the window's start
    duration_us: float
    after: str  # the device event before the gap
    before: str = ""  # and the one after it


@dataclass(frozen=True)
class Profile:
    """The analysis of one trace (or one region of it)."""

    groups: tuple[KernelGroup, ...]
    window_us: float
    busy_us: float
    gaps: tuple[Gap, ...]
    device: bool  # False: no device event at all (a CPU run): groups are CPU ops
    region: str | None = None
    region_instances: int = 0
    skipped_instances: int = 0
    notes: tuple[str, ...] = field(default=())

    @property
    def busy_fraction(self) -> float | None:
        return self.busy_us / self.window_us if self.window_us > 0 else None

    @property
    def kernel_us(self) -> float:
        return sum(g.total_us for g in self.groups)


# ---------------------------------------------------------------- reading


def events_of(trace: dict) -> list[Event]:
    """The trace's complete events (ph 'X'), with their correlation ids."""
    events = []
    for raw in trace.get("traceEvents", ()):
        if raw.get("ph") != "X" or "dur" not in raw:
            continue
        args = raw.get("args") or {}
        events.append(Event(raw.get("cat") or "", raw.get("name") or "", float(raw["ts"]),
                            float(raw["dur"]), raw.get("tid"), args.get("correlation")))
    return events


def origin(name: str) -> str:
    """cuBLAS, cuDNN, flash-attn, PyTorch, Triton, or CUDA (anything else: yours)."""
    short = short_name(name)
    for label, pattern in ORIGINS:
        if pattern.search(short if label == "Triton" else name):
            return label
    return OTHER_ORIGIN


def short_name(name: str) -> str:
    """A kernel's name without its parameter list and return type: 'void f<int>(int*)' ->
    'f<int>'; template arguments kept (they tell instances apart)."""
    text = re.sub(r"^void\s+", "", name.strip()).replace("(anonymous namespace)", "{anon}")
    depth, cut = 0, len(text)
    for i, char in enumerate(text):
        if char == "<":
            depth += 1
        elif char == ">":
            depth -= 1
        elif char == "(" and depth == 0:
            cut = i
            break
    return text[:cut].strip()


# ---------------------------------------------------------------- the analysis


@dataclass(frozen=True)
class Selection:
    """The trace's events, and which device events and ranges belong to the region."""

    events: tuple[Event, ...]
    device: tuple[Event, ...]  # kept device events (all of them without a region)
    ranges: tuple[Event, ...]
    chosen: tuple[Event, ...]  # the region's instances kept; () without a region
    region: str | None
    instances: int
    skipped: int
    notes: tuple[str, ...]


def select(trace: dict, region: str | None = None, skip_first: int = 0) -> Selection:
    """The region's device events: launched inside a range named `region` (or
    'gpubench.region:<region>'), after its first `skip_first` instances. Without `region`,
    the program's gpubench.region() ranges when it has any, else everything."""
    events = events_of(trace)
    device = [e for e in events if e.category in DEVICE_CATEGORIES]
    ranges = [e for e in events if e.category in RANGE_CATEGORIES]
    names = {region, REGION_PREFIX + region} if region is not None else {
        r.name for r in ranges if r.name.startswith(REGION_PREFIX)}
    if not names:
        return Selection(tuple(events), tuple(device), tuple(ranges), (), None, 0, 0, ())
    label = region or ", ".join(sorted(n.removeprefix(REGION_PREFIX) for n in names))
    chosen = sorted((r for r in ranges if r.name in names), key=lambda r: r.start_us)
    instances, skipped = len(chosen), min(skip_first, len(chosen))
    chosen = chosen[skipped:]
    notes = () if chosen else (
        (f"no instance of range '{label}' left after skipping {skip_first}" if instances
         else f"no range named '{label}' in the trace"),)
    kept = in_ranges(device, chosen, launches(events))
    inner = [r for r in ranges if any(_inside(r, c) for c in chosen)]
    return Selection(tuple(events), tuple(kept), tuple(inner), tuple(chosen), label,
                     instances, skipped, notes)


def analyse(trace: dict, region: str | None = None, skip_first: int = 0) -> Profile:
    """Kernels by name, busy fraction and gaps of the trace or its region (see select).
    With no device event: CPU ops by name (the top-level ones, in the region if any)."""
    picked = select(trace, region, skip_first)
    context = (picked.region, picked.instances, picked.skipped, picked.notes)
    if not picked.device:
        cpu = top_level([e for e in picked.events if e.category == "cpu_op"])
        if picked.region is not None:
            cpu = [e for e in cpu if any(_inside(e, r) for r in picked.chosen)]
        return Profile(_groups(cpu, picked.ranges, {}, cpu_origin), _span(cpu), 0.0, (),
                       False, *context)
    kernels = [e for e in picked.device if e.category == "kernel"]
    spells = instance_spells(picked)
    return Profile(_groups(kernels, picked.ranges, launches(picked.events)),
                   sum(_span(s) for s in spells), sum(union_length(s) for s in spells),
                   tuple(sorted((g for s in spells for g in gaps(s)),
                                key=lambda g: -g.duration_us)[:TOP_GAPS]), True, *context)


def instance_spells(picked: Selection) -> list[list[Event]]:
    """The device events of each region instance apart (all of them as one without a
    region): busy time and gaps are judged within an instance, since what the program
    does between two training steps (logging, data loading) is outside the region."""
    if not picked.chosen:
        return [list(picked.device)]
    launched = launches(picked.events)
    spells: list[list[Event]] = [[] for _ in picked.chosen]
    for event in picked.device:
        at = launched[event.correlation].start_us
        index = next(i for i, r in enumerate(picked.chosen) if r.start_us <= at <= r.end_us)
        spells[index].append(event)
    return [s for s in spells if s]


@dataclass(frozen=True)
class Launch:
    """Which launch of a kernel `ncu --launch-skip` must pick: the first in the region."""

    name: str  # the group's short name
    function: str  # ncu's 'function' base: no namespace, template arguments or parameters
    skip: int  # launches of that function before it, in the whole program


def representative_launches(trace: dict, groups: Sequence[KernelGroup], region: str | None,
                            skip_first: int) -> list[Launch]:
    """For each group, its first launch inside the region, counted among all launches of
    kernels with the same function name (ncu counts launches that match its filter). A
    program that runs the same way twice launches them in the same order."""
    picked = select(trace, region, skip_first)
    kernels = sorted((e for e in picked.events if e.category == "kernel"),
                     key=lambda e: e.start_us)
    kept = {id(e) for e in picked.device}
    found = []
    for group in groups:
        function = function_name(group.name)
        same = [e for e in kernels if function_name(short_name(e.name)) == function]
        first = next((i for i, e in enumerate(same)
                      if id(e) in kept and short_name(e.name) == group.name), None)
        if first is not None:
            found.append(Launch(group.name, function, first))
    return found


def launches(events: Iterable[Event]) -> dict[int, Event]:
    """The CPU-side runtime call (cudaLaunchKernel, cuLaunchKernel, cudaMemcpyAsync, ...)
    of each correlation id: when the program asked for the device work."""
    return {e.correlation: e for e in events
            if e.category == "cuda_runtime" and e.correlation is not None}


def in_ranges(device: Sequence[Event], chosen: Sequence[Event],
              launched: dict[int, Event]) -> list[Event]:
    """The device events whose launch happened inside one of the `chosen` ranges."""
    kept = []
    for event in device:
        launch = launched.get(event.correlation)
        if launch is not None and any(r.start_us <= launch.start_us <= r.end_us
                                      for r in chosen):
            kept.append(event)
    return kept


def union_length(events: Sequence[Event]) -> float:
    """Microseconds during which at least one device event ran (streams overlap)."""
    total, end = 0.0, None
    for event in sorted(events, key=lambda e: e.start_us):
        if end is None or event.start_us > end:
            total += event.duration_us
            end = event.end_us
        elif event.end_us > end:
            total += event.end_us - end
            end = event.end_us
    return total


def gaps(events: Sequence[Event], minimum_us: float = MIN_GAP_US,
         top: int = TOP_GAPS) -> list[Gap]:
    """The largest idle stretches between device events, longest first."""
    ordered = sorted(events, key=lambda e: e.start_us)
    if not ordered:
        return []
    origin_us = ordered[0].start_us
    found, end, last = [], ordered[0].end_us, ordered[0]
    for event in ordered[1:]:
        if event.start_us - end >= minimum_us:
            found.append(Gap(end - origin_us, event.start_us - end,
                             compact_name(short_name(last.name)),
                             compact_name(short_name(event.name))))
        if event.end_us > end:
            end, last = event.end_us, event
    return sorted(found, key=lambda g: -g.duration_us)[:top]


def _span(events: Sequence[Event]) -> float:
    if not events:
        return 0.0
    return max(e.end_us for e in events) - min(e.start_us for e in events)


def _inside(inner: Event, outer: Event) -> bool:
    return outer.start_us <= inner.start_us and inner.end_us <= outer.end_us


def top_level(ops: Sequence[Event]) -> list[Event]:
    """The CPU ops no other op of the same thread contains: aten::matmul, not also the
    aten::mm inside it, so that shares add up to the ops' time once."""
    kept: list[Event] = []
    open_until: dict[object, float] = {}
    for op in sorted(ops, key=lambda e: (e.start_us, -e.duration_us)):
        if op.start_us < open_until.get(op.tid, float("-inf")):
            continue
        kept.append(op)
        open_until[op.tid] = op.end_us
    return kept


def _groups(events: Sequence[Event], ranges: Sequence[Event],
            launched: dict[int, Event], origin_of=None) -> tuple[KernelGroup, ...]:
    """Events by short name, largest total first, each with the ranges it ran under."""
    origin_of = origin_of or origin
    by_name: dict[str, list[Event]] = {}
    for event in events:
        by_name.setdefault(short_name(event.name), []).append(event)
    total = sum(e.duration_us for e in events) or 1.0
    groups = []
    for name, members in by_name.items():
        spent = sum(e.duration_us for e in members)
        groups.append(KernelGroup(name, origin_of(members[0].name), len(members), spent,
                                  spent / total, _ranges_of(members, ranges, launched)))
    return tuple(sorted(groups, key=lambda g: (-g.total_us, g.name)))


def _ranges_of(members: Sequence[Event], ranges: Sequence[Event],
               launched: dict[int, Event]) -> tuple[str, ...]:
    """The innermost range around each member's launch (or the member itself, for CPU
    ops), most common first, at most three."""
    counts: dict[str, int] = {}
    for member in members:
        anchor = launched.get(member.correlation, member) if launched else member
        around = [r for r in ranges if r.start_us <= anchor.start_us <= r.end_us
                  and r is not member]
        if around:
            inner = min(around, key=lambda r: r.duration_us)
            counts[inner.name] = counts.get(inner.name, 0) + 1
    return tuple(sorted(counts, key=lambda n: -counts[n])[:3])
