"""Was the host busy while a CPU timing ran? Other processes' CPU time and our preemptions.

A host-clock timing of CPU tensors times the scheduler as much as the code when other
processes want the same cores. Seen on the 2-core CI machine while a compiler ran
beside a run (docs/measurement.md, "Host busy"): torch.square of 2^20 floats
took 8.0 ms per call instead of ~0.1 ms — its two intra-op threads waited a full
scheduler slice for the second core — with a tight spread, so no statistic of the
samples shows it; two such runs differed by 800x. Two figures, over the sampling
window, show it:

- `preempted_per_call`: involuntary context switches of this process (all threads,
  getrusage) per timed call. Above ~0.1, a tenth of the calls lost the CPU mid-way —
  when it also happens more often than a quiet machine's own rate (`preempted_per_s`):
  the quiet 2-core machine preempts torch's intra-op threads ~50 times a second whatever
  the op (0.05 per call at 1.1 ms calls, 0.2-0.27 at 4.4 ms), while beside a compiler it
  was 276 a second (2.21 per call at 8 ms). 150/s lies between, with margin both ways;
  without it a 4 ms op on a quiet machine read as busy.
- `others_cpus`: CPUs that other processes kept busy on average, from /proc/stat's
  machine-wide busy time minus this process's own CPU time. With two hardware threads
  per core, another process using half a CPU shares a core with the timed code about
  half the time.

Linux only (/proc/stat); elsewhere `others_cpus` is None.
"""

from __future__ import annotations

import math
import os
import resource
import time
from dataclasses import dataclass
from pathlib import Path

from gpubench.codec import Record

# Thresholds of HostLoad.busy (see the module docstring for the napkin math).
PREEMPTED_PER_CALL = 0.1
PREEMPTED_PER_S = 150.0
OTHERS_CPUS = 0.5
PROC_STAT = Path("/proc/stat")


def busy_seconds(proc_stat_text: str, ticks_per_second: float) -> float | None:
    """Machine-wide non-idle CPU seconds from /proc/stat's first ('cpu') line: user, nice,
    system, irq, softirq, steal; idle and iowait are not busy."""
    first = proc_stat_text.splitlines()[0].split() if proc_stat_text else []
    if not first or first[0] != "cpu":
        return None
    values = [int(v) for v in first[1:9]] + [0] * (8 - len(first[1:9]))
    user, nice, system, _idle, _iowait, irq, softirq, steal = values
    return (user + nice + system + irq + softirq + steal) / ticks_per_second


@dataclass(frozen=True)
class Snapshot:
    wall: float
    own_cpu: float  # this process, all threads
    involuntary: int
    machine_busy: float | None

    @classmethod
    def now(cls) -> Snapshot:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return cls(time.perf_counter(), usage.ru_utime + usage.ru_stime, usage.ru_nivcsw,
                   _machine_busy())


def _machine_busy() -> float | None:
    try:
        return busy_seconds(PROC_STAT.read_text(), os.sysconf("SC_CLK_TCK"))
    except (OSError, ValueError):
        return None


@dataclass(frozen=True)
class HostLoad(Record):
    """What the host did meanwhile, per the module docstring."""

    preempted_per_call: float = 0.0
    # inf: a record from before the rate was kept, judged by the per-call figure alone
    preempted_per_s: float = math.inf
    others_cpus: float | None = None  # None off Linux
    own_cpus: float | None = None


def load_between(start: Snapshot, end: Snapshot, calls: int) -> HostLoad:
    """What the host did between two snapshots, per the module docstring."""
    wall = max(end.wall - start.wall, 1e-9)
    others = None
    if start.machine_busy is not None and end.machine_busy is not None:
        own = end.own_cpu - start.own_cpu
        others = max(0.0, (end.machine_busy - start.machine_busy - own) / wall)
    preempted = end.involuntary - start.involuntary
    return HostLoad(preempted / max(calls, 1), preempted / wall, others,
                    (end.own_cpu - start.own_cpu) / wall)


# Preemptions per call from which the median call itself may have been preempted: below
# it, most calls (the median among them) ran unpreempted.
MEDIAN_PREEMPTED = 0.5


def busy_factor(load: HostLoad | None) -> float:
    """How many times slower the host's other work can have made a one-thread CPU
    timing's median: 1 on a quiet host; 1 + ceil(X) when other processes kept X CPUs busy
    but few calls were preempted (a fair share of its core among ceil(X) others is the
    most it lost); unbounded when the median call itself may have been preempted."""
    if busy_reason(load) is None:
        return 1.0
    if load.preempted_per_call >= MEDIAN_PREEMPTED:
        return math.inf
    return 1.0 + max(1, math.ceil(load.others_cpus or 0.0))


def busy_reason(load: HostLoad | None) -> str | None:
    """Why a CPU timing measured the host's other work, or None when it did not."""
    if load is None:
        return None
    preempted, rate, others = load.preempted_per_call, load.preempted_per_s, load.others_cpus
    if preempted >= PREEMPTED_PER_CALL and rate >= PREEMPTED_PER_S:
        return f"preempted {preempted:.2f} times per call (other load on the host)"
    if others is not None and others >= OTHERS_CPUS:
        return f"other processes kept {others:.1f} CPUs busy meanwhile"
    return None
