"""DeviceWork: what one call puts on the GPU — how many kernels, their sum, their span.

An op that launches several kernels has two honest times. The *span*, from its first
kernel's start to its last kernel's end, is what a caller waits for on the GPU, and
what an event window (cold, warm, graph) measures; it includes the gaps between
launches and any memsets or copies in between. The *kernel sum* is what the GPU
spends inside kernels, and what ncu's per-kernel durations add up to. On an H200 a
7-kernel sort's span was 12% above the sum of its kernels (docs/measurement.md "Multi-kernel").

A worker finds the DeviceWork of a point once, after timing it (timers/device_work.py):
from a CUDA graph capture of one call (counts only, a few ms), or from CUPTI through
torch.profiler when the call does more than one thing or cannot be captured (counts
and timestamps). This module is the pure part: from per-call timelines to medians, and
from a span to a kernel sum.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from gpubench.codec import Record

KERNEL = "kernel"


@dataclass(frozen=True)
class DeviceOp:
    """One thing a call ran on the device, as CUPTI saw it."""

    kind: str  # "kernel", "memset" or "memcpy"
    name: str
    start_us: float
    duration_us: float

    @property
    def end_us(self) -> float:
        return self.start_us + self.duration_us


@dataclass(frozen=True)
class DeviceWork(Record):
    kernels: int  # kernels per call
    other_ops: int = 0  # memsets and memcpys per call (ncu profiles kernels only)
    kernel_us: float | None = None  # median per call: summed kernel durations (CUPTI)
    span_us: float | None = None  # median per call: first op's start to last op's end
    source: str = "graph"  # "graph" (counts from a capture) or "cupti" (timestamps too)
    names: tuple[str, ...] = ()  # the kernels of one call, in launch order
    # median per call: the memsets' and copies' time and the gaps before them (see below)
    outside_us: float | None = None
    # median per call: the time some op ran on some stream (the union of the ops' spans),
    # idle gaps left out. A call that waits on the host in the middle (a pageable copy,
    # a .item()) has its later launches made by the profiled, slower host: its span grows
    # by that host time, its busy time does not (pmpp_v2 grayscale's reference: span
    # 121.9 us against a 58.6 us window on an H200, busy a fraction of both).
    busy_us: float | None = None

    @property
    def ops(self) -> int:
        return self.kernels + self.other_ops

    @property
    def single(self) -> bool:
        """One kernel and nothing else: its span is its kernel sum."""
        return self.ops == 1

    @property
    def outside_kernels_us(self) -> float:
        """Per call, the span's time that is no kernel's: the memsets and copies, and the
        gap before each (the front end waiting on them). Zero for a single kernel, and
        when nothing was timed. A gap before a *kernel* is that kernel's launch, which
        ncu counts in the kernel's own duration, so it stays in the kernel sum."""
        if self.single or self.outside_us is None:
            return 0.0
        return self.outside_us

    def kernel_sum_s(self, span_s: float | None) -> float | None:
        """The kernel sum of a call whose span was measured as `span_s` (an event-timed
        median): the span less what CUPTI saw outside kernels. CUPTI's durations read
        ~1 us shorter than ncu's per kernel, but its gaps and memset times are differences
        of timestamps on one clock, so they carry over to an event-timed span. Kernels
        in one stream overlap one's launch with the previous one's tail, so this sum
        still reads up to ~1 us per kernel below the sum of ncu's isolated kernels."""
        if span_s is None:
            return None
        return max(span_s - self.outside_kernels_us * 1e-6, 0.0)

    def span_s(self, kernel_sum_s: float | None) -> float | None:
        """The converse, for modes that time the kernel sum (cupti)."""
        if kernel_sum_s is None:
            return None
        return kernel_sum_s + self.outside_kernels_us * 1e-6

    def label(self) -> str:
        """'7', or '4+1m' for 4 kernels and 1 memset/memcpy, for the results table."""
        return f"{self.kernels}" + (f"+{self.other_ops}m" if self.other_ops else "")


def from_timelines(calls: Sequence[Sequence[DeviceOp]]) -> DeviceWork | None:
    """Medians over calls (each a list of its device ops) of counts, kernel sum and span.
    Calls with no device work (a profiler that lost them) are left out."""
    calls = [sorted(ops, key=lambda op: op.start_us) for ops in calls if ops]
    if not calls:
        return None
    kernels = [[op for op in ops if op.kind == KERNEL] for ops in calls]
    return DeviceWork(
        kernels=round(statistics.median(len(k) for k in kernels)),
        other_ops=round(statistics.median(len(c) - len(k) for c, k in zip(calls, kernels,
                                                                           strict=True))),
        kernel_us=statistics.median(sum(op.duration_us for op in k) for k in kernels),
        span_us=statistics.median(max(op.end_us for op in ops) - ops[0].start_us
                                  for ops in calls),
        source="cupti",
        names=tuple(short_name(op.name) for op in kernels[0]),
        outside_us=statistics.median(_outside_kernels(ops) for ops in calls),
        busy_us=statistics.median(_busy(ops) for ops in calls),
    )


def _busy(ops: Sequence[DeviceOp]) -> float:
    """The length of the union of the ops' [start, end] intervals (ops in start order):
    concurrent streams counted once, idle time not at all."""
    busy, covered_to = 0.0, float("-inf")
    for op in ops:
        start = max(op.start_us, covered_to)
        if op.end_us > start:
            busy += op.end_us - start
        covered_to = max(covered_to, op.end_us)
    return busy


def short_name(demangled: str) -> str:
    """'DeviceRadixSortOnesweepKernel' from 'void at_cuda_detail::...::DeviceRadixSortOnes
    weepKernel<...>(int*, ...)': the name without return type, templates, arguments."""
    name = demangled.removeprefix("void ")
    for stop in ("<", "("):
        name = name.split(stop, 1)[0]
    return name.rsplit("::", 1)[-1] or demangled[:60]


def _outside_kernels(ops: Sequence[DeviceOp]) -> float:
    """Durations of the non-kernel ops of one call (in start order) and the gap before each."""
    outside, previous_end = 0.0, None
    for op in ops:
        if op.kind != KERNEL:
            gap = 0.0 if previous_end is None else max(op.start_us - previous_end, 0.0)
            outside += op.duration_us + gap
        previous_end = op.end_us if previous_end is None else max(previous_end, op.end_us)
    return outside


def from_graph_nodes(kinds: Sequence[str]) -> DeviceWork:
    """Counts from the node kinds of one captured call ("kernel", "memset", "memcpy";
    other nodes — events, empty nodes — do no work and are not counted)."""
    return DeviceWork(kernels=sum(k == KERNEL for k in kinds),
                      other_ops=sum(k in ("memset", "memcpy") for k in kinds), source="graph")
