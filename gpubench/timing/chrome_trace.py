"""Reading the Chrome trace torch.profiler exports: which device work belongs to which call.

Pure: takes the trace's JSON document. A call is a `record_function` range (a
`user_annotation` event on a CPU thread); the device work it caused is every
kernel, memcpy or memset whose launch (a `cuda_runtime`/`cuda_driver` event on
that thread, inside the range) shares its `correlation` id. Matching by
correlation rather than by time keeps flush and spin kernels, launched just
outside the ranges, out of the sums even when the GPU runs them inside.
"""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass
from pathlib import Path

from gpubench.timing.device_work import DeviceOp

DEVICE_CATEGORIES = ("kernel", "gpu_memcpy", "gpu_memset")
OP_KIND = {"kernel": "kernel", "gpu_memcpy": "memcpy", "gpu_memset": "memset"}
LAUNCH_CATEGORIES = ("cuda_runtime", "cuda_driver")


@dataclass(frozen=True)
class CallWork:
    """The device work of one annotated call."""

    name: str
    host_start_us: float
    host_duration_us: float
    device_us: float  # summed durations of its kernels/memcpys/memsets
    launches: int
    first_device_start_us: float | None  # for the launch-to-start gap
    work: tuple[tuple[str, float], ...] = ()  # (kernel name, duration us) in start order
    launch_gaps_us: tuple[float, ...] = ()  # per launch: device start - host launch call
    timeline: tuple[DeviceOp, ...] = ()  # its device work in start order, with timestamps

    @property
    def launch_gap_us(self) -> float | None:
        """From the call's start on the host to its first kernel's start on the device."""
        if self.first_device_start_us is None:
            return None
        return self.first_device_start_us - self.host_start_us


def load_trace(path: Path | str) -> dict:
    """A trace file, plain or gzipped (torch writes .json.gz when asked to)."""
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as handle:
        return json.load(handle)


def events(trace: dict) -> list[dict]:
    return [e for e in trace.get("traceEvents", []) if isinstance(e, dict)]


def device_events(trace: dict) -> list[dict]:
    """Kernels, memcpys and memsets, in start order."""
    found = [e for e in events(trace) if e.get("cat") in DEVICE_CATEGORIES and e.get("ph") == "X"]
    return sorted(found, key=lambda e: e["ts"])


def calls_named(trace: dict, prefix: str) -> list[CallWork]:
    """Every annotated call whose name starts with `prefix`, with the device work it caused."""
    all_events = events(trace)
    by_correlation: dict[int, list[dict]] = {}
    for event in all_events:
        if event.get("cat") in DEVICE_CATEGORIES:
            correlation = (event.get("args") or {}).get("correlation")
            by_correlation.setdefault(correlation, []).append(event)
    launches = [e for e in all_events if e.get("cat") in LAUNCH_CATEGORIES]
    spans = sorted((e for e in all_events if e.get("cat") == "user_annotation"
                    and str(e.get("name", "")).startswith(prefix)), key=lambda e: e["ts"])
    return [_call_work(span, launches, by_correlation) for span in spans]


def _call_work(span: dict, launches: list[dict], by_correlation: dict) -> CallWork:
    start, end = span["ts"], span["ts"] + span.get("dur", 0)
    work: list[dict] = []
    gaps: list[float] = []
    count = 0
    for launch in launches:
        if launch.get("tid") != span.get("tid") or not start <= launch["ts"] <= end:
            continue
        correlation = (launch.get("args") or {}).get("correlation")
        if correlation in by_correlation:
            count += 1
            work.extend(by_correlation[correlation])
            gaps.append(min(w["ts"] for w in by_correlation[correlation]) - launch["ts"])
    work.sort(key=lambda w: w["ts"])
    first = work[0]["ts"] if work else None
    return CallWork(span["name"], start, span.get("dur", 0.0),
                    sum(w.get("dur", 0.0) for w in work), count, first,
                    tuple((w.get("name", "?"), w.get("dur", 0.0)) for w in work), tuple(gaps),
                    tuple(DeviceOp(OP_KIND[w["cat"]], w.get("name", "?"), w["ts"],
                                   w.get("dur", 0.0)) for w in work))


@dataclass(frozen=True)
class VariantTrace:
    """What one labelled region (a variant at a size) did in a trace."""

    label: str
    calls: tuple[CallWork, ...]

    @property
    def launches_per_call(self) -> float:
        return _median([c.launches for c in self.calls])

    @property
    def device_us_per_call(self) -> float:
        return _median([c.device_us for c in self.calls])

    @property
    def host_us_per_call(self) -> float:
        return _median([c.host_duration_us for c in self.calls])

    @property
    def launch_gap_us(self) -> float | None:
        """Median over launches of (kernel start on the device - launch call on the host)."""
        gaps = [g for c in self.calls for g in c.launch_gaps_us]
        return _median(gaps) if gaps else None

    def top_kernels(self, limit: int = 3) -> list[tuple[str, float, int]]:
        """(kernel name, device us per call, launches per call), most device time first."""
        totals: dict[str, list[float]] = {}
        for call in self.calls:
            for name, duration in call.work:
                totals.setdefault(name, []).append(duration)
        per_call = [(name, sum(d) / len(self.calls), len(d) / len(self.calls))
                    for name, d in totals.items()]
        return sorted(per_call, key=lambda item: -item[1])[:limit]


def variant_traces(trace: dict, region_prefix: str, call_prefix: str) -> list[VariantTrace]:
    """Group the annotated calls by the labelled region (same thread, inside it) that holds them."""
    regions = sorted((e for e in events(trace) if e.get("cat") == "user_annotation"
                      and str(e.get("name", "")).startswith(region_prefix)),
                     key=lambda e: e["ts"])
    calls = calls_named(trace, call_prefix)
    grouped = []
    for region in regions:
        start, end = region["ts"], region["ts"] + region.get("dur", 0)
        inside = tuple(c for c in calls if start <= c.host_start_us <= end)
        if inside:
            grouped.append(VariantTrace(region["name"].removeprefix(region_prefix), inside))
    return grouped


def event_counts(trace: dict, prefixes: tuple[str, ...] = ("gpubench",)) -> dict[str, int]:
    """How many events of each kind a trace holds (for the printed summary)."""
    all_events = events(trace)
    counts = {"events": len(all_events),
              "kernels": sum(1 for e in all_events if e.get("cat") == "kernel")}
    for prefix in prefixes:
        counts[f"{prefix} spans"] = sum(1 for e in all_events if e.get("cat") in
                                        ("user_annotation", "gpu_user_annotation")
                                        and str(e.get("name", "")).startswith(prefix))
    return counts


def _median(values: list[float]) -> float:
    ordered = sorted(values)
    if not ordered:
        return 0.0
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2
