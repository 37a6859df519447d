"""Whether a correct row's time can be trusted: behavioural evidence, read purely.

The worker measures the evidence and the verdict is drawn here, where it is a
comparison anyone can rerun on a saved results.json:

- repeated calls faster than fresh ones: each mode's details carry the times of
  calls on inputs the variant had never seen (run/worker/fresh_probe.py). An honest kernel
  does the same work on them (the L2 is flushed either way); a variant that skips
  work it has seen does not;
- work outside the timed window: CUPTI saw the device work a call launched on
  every stream (timing/device_work.py); an event window much shorter than that
  span means work ran after the window closed (another stream, a deferred launch).

Physics (far above the roof, faster than a launch) is physics.suspect. Each
check returns a TimingWarning whose message is the SUSPECT row's reason.
"""

from __future__ import annotations

import math
import statistics

from gpubench.records.result import Result
from gpubench.records.warning import TimingWarning
from gpubench.timing.hostload import MEDIAN_PREEMPTED, busy_reason
from gpubench.timing.measurement import FreshEvidence

# Fresh calls against repeated ones timed in the same conditions, pair by pair (run/
# fresh_probe.py): an honest kernel does the same work on both, so their medians agree
# within single-call noise; 1.25x is far outside it. Plus an absolute margin: the event
# window's fixed cost varies +-0.3 us between calls (verdicts/noise.py: FIXED_COST_SPREAD_US), and a
# shared CPU's host clock jitters by a few us.
PAIRED_RATIO = 1.25
# Fresh calls against the mode's own median, for a variant that behaves in the probe
# (it could tell an isolated call from a timing loop): a mode's loop is a different
# condition, so the bar is wider. Cold, graph and wall flush the L2 as the probe does:
# 1.3. cupti sums kernel durations only, shorter than an event window by the gaps: 1.5.
# Warm may serve its inputs from L2, 2-3x HBM's bandwidth on Hopper: 4 (physics.py's warm
# roof). A CPU's isolated call runs with cold caches and predictors, 1.4-2.4x a loop's
# call for honest µs-scale ops on the 2-core CI machine: 2.5, and 10 us.
FRESH_RATIO = {"cold": 1.3, "graph": 1.3, "wall": 1.3, "cupti": 1.5, "warm": 4.0, "cpu": 2.5}
FRESH_SLACK_S = {"cpu": 10e-6}
PAIRED_SLACK_S = {"cpu": 5e-6}
FRESH_SLACK_GPU_S = 1e-6
# An event window shorter than the span CUPTI saw over all streams by more than this:
# the profiler's own slowdown of a call's launches is covered by the spin it sits
# behind (device_work_probe), so an honest multi-kernel call's span stays within a few
# percent of its event window; 1.5x and 2 us is far beyond that.
WINDOW_RATIO = 1.5
WINDOW_SLACK_S = 2e-6
# A call whose device work (CUPTI's busy time) fills less than this share of its event
# window waits on the host inside it (a pageable copy, a .item()): its time is the host's
# latency, as noisy as a CPU timing, so its fresh calls get the CPU's bar (2.5x). pmpp_v2
# grayscale's reference at 512^2 (a torch.tensor built on the GPU each call): fresh calls
# 1.5-1.7x its loop, whose median reads 58.6 or 119.3 us from run to run on an H200. A cache
# that skips real work stays far beyond 2.5x: its fresh calls do the work.
HOST_BOUND_SHARE = 0.25
# Fresh calls timed inside the loop (timed_shortcut): at least 2 to accuse (one is one
# draw of the noise).
IN_LOOP_MIN_CALLS = 2
# On a CPU the fastest fresh call meets the fastest seen call of its stretch: other
# processes share the variant's cores, so a loaded host slows any share of the seen calls
# (a half-work 320^2 matmul's fresh floor read 1.6-2.0x their median under two hogs) and
# only ever adds time, so each floor is the work alone. Honest floors agree within
# 1.0-1.35x on the 2-core CI machine, idle or beside two hogs: 1.5x (and
# IN_LOOP_SLACK_CPU_S), where a skipped half of the work reads 1.8-2.0x. Beside more load
# than the cores (a load average of 6 on 2), every fresh call of an honest row can be
# slowed while one seen call of dozens is not: the fresh floor must also clear
# IN_LOOP_MEDIAN_RATIO_CPU of the seen median, which a host's load raises with it. Honest
# rows read 0.69-1.18x of it, idle or beside two hogs; the half-work cache 1.59-1.88x: 1.35
# parts them. On a GPU the device is the variant's own, and warm mode's fastest seen call
# is its luckiest L2 state: the median alone, PAIRED_RATIO.
IN_LOOP_RATIO_CPU = 1.5
IN_LOOP_MEDIAN_RATIO_CPU = 1.35
# A fresh set's first use on a CPU also costs what the seen sets have and it has not yet
# (TLB entries, warm cache lines; its inputs are read once right before, in
# rotation.before): an honest 15 us torch.add over 3 x 256 KB read 34 us at
# best on its fresh calls beside another test worker (+20 us), where a 320^2 matmul's
# half-work cache gains ~300 us. 25 us of slack holds the one and still catches the other.
IN_LOOP_SLACK_CPU_S = 25e-6
# On a CPU each fresh call is read beside its own neighbours where their order is known:
# a loop's first calls run slower than its later ones (caches and the allocator settling:
# ~35-45 us against ~20 us for a 256 KB torch op, more beside memory-bound hogs), and the
# stretch's median is mostly later calls, so an honest row's early fresh calls read up to
# 1.6x it (4 false accusations in 60 rows beside two memory-copy hogs); beside their 8
# nearest seen calls the same rows read at most 1.25x. 8: the first fresh call (sample 2
# or 3) has few calls before it, and a median of 8 shrugs off one or two preempted calls.
# The call right after a fresh one is left out: it follows the harness's copy of the
# fresh output (rotation.after), which on a CPU costs it new pages (2-5x its neighbours).
NEIGHBOURS = 8
EVENT_WINDOW_MODES = ("cold", "warm", "graph")


def repeat_shortcut(result: Result) -> TimingWarning | None:
    """Calls on never-seen inputs much slower than repeated ones: work skipped on repeat.
    Checked pair by pair (same conditions) and against the mode's median."""
    evidence = result.measurement.fresh if result.measurement else None
    if evidence is None or not evidence.fresh_s:
        return None
    fresh, repeat = evidence.fresh_s, evidence.repeat_s
    if busy_reason(evidence.host_load):
        return None  # a busy host's isolated calls wait for CPUs, not for work
    # Minima, not medians: other work on the machine only ever adds time to a single
    # call (a loaded 2-core CI host turns 1.2 ms calls into 20-800 ms ones),
    # while a shortcut makes every repeated call fast; the fastest of 9 is the call alone.
    # Where a first round of 9 tripped the paired bar, the probe made a second (18 times):
    # an honest interpreted Triton square reads up to 1.3x in one round on a loaded CI host
    # and 0.95-1.03x in 12 runs, idle and beside a CPU hog (docs/journal/perf-notes.md).
    fresh_floor = min(fresh)
    gpu_slack = FRESH_SLACK_GPU_S
    host_bound = waits_on_host(result)
    if repeat and paired_beyond(fresh, repeat, result.mode, host_bound):
        return _shortcut(fresh_floor, min(repeat), "the same calls on inputs it had seen")
    median = result.median_s
    if median is None:
        return None
    ratio = FRESH_RATIO["cpu"] if host_bound else FRESH_RATIO.get(result.mode,
                                                                  FRESH_RATIO["cold"])
    # Against the loop's median, the loop's own fresh calls where the mode has them: the
    # same condition as the median's calls (an isolated probe call of a multi-kernel op
    # ran 1.5x its loop on an H100, honest: pmpp_v2 histogram's reference), and still a
    # full-work call a loop that skips work after its fresh calls cannot match.
    looped = _loop_evidence(result)
    floor, how = (min(looped.fresh_s), ", timed inside the loop,") if looped else \
        (fresh_floor, "")
    if floor > median * ratio + FRESH_SLACK_S.get(result.mode, gpu_slack):
        return _shortcut(floor, median, "the timed calls", how)
    return None


def timed_shortcut(result: Result) -> TimingWarning | None:
    """Timed calls on never-seen inputs, made inside the timing loop (run/worker/
    rotation.py), much slower than the loop's median: the variant does less work on the
    timed calls of inputs it has seen, however it tells timed calls from checked ones.
    The fastest of them against the median of the calls on seen inputs in the same
    stretch of the loop (on a CPU, the fastest: IN_LOOP_RATIO_CPU): a host's noise slows
    single calls, and here it would have to slow every fresh call (2 to 4 of them, at
    random places) while sparing their neighbours; a shortcut slows them all. The loop is
    one condition for both, so the paired bar holds (a CPU's where the call waits on the
    host). On a CPU, whose loops settle for dozens of calls, the median is each fresh
    call's neighbours' (beside_neighbours)."""
    evidence = _loop_evidence(result)
    if evidence is None or len(evidence.repeat_s) < IN_LOOP_MIN_CALLS:
        return None
    fresh, median = min(evidence.fresh_s), statistics.median(evidence.repeat_s)
    if result.mode == "cpu" and _mostly_preempted(result):
        return None  # 2-4 fresh calls cannot be read where most calls waited for a core
    if result.mode == "cpu":
        floor = min(evidence.repeat_s)
        if fresh <= floor * IN_LOOP_RATIO_CPU + IN_LOOP_SLACK_CPU_S or \
                beside_neighbours(evidence) <= IN_LOOP_MEDIAN_RATIO_CPU:
            return None
        return _shortcut(fresh, floor, "the fastest of its timed calls beside them",
                         ", timed inside the loop,")
    host_bound = waits_on_host(result)
    ratio = IN_LOOP_RATIO_CPU if host_bound else PAIRED_RATIO
    slack = PAIRED_SLACK_S["cpu"] if host_bound else FRESH_SLACK_GPU_S
    if fresh <= median * ratio + slack:
        return None
    return _shortcut(fresh, median, "its timed calls beside them", ", timed inside the loop,")


def beside_neighbours(evidence: FreshEvidence) -> float:
    """How far the fresh calls sit above the seen calls around them: the smallest, over
    the fresh calls, of each one's time over the median of its NEIGHBOURS nearest seen
    calls (not one right after a fresh call); where the order is unknown, the fastest
    fresh call over the stretch's median. A shortcut is above its neighbours at every
    fresh call; an honest row's slow early calls have slow neighbours too."""
    calls = evidence.calls() or []
    seen = [i for i, (_, fresh) in enumerate(calls)
            if not fresh and not (i and calls[i - 1][1])]
    if not seen:
        return _over(min(evidence.fresh_s), statistics.median(evidence.repeat_s))
    ratios = []
    for at in evidence.fresh_at:
        near = sorted(seen, key=lambda i, at=at: (abs(i - at), i))[:NEIGHBOURS]
        ratios.append(_over(calls[at][0], statistics.median(calls[i][0] for i in near)))
    return min(ratios)


def _over(seconds: float, seen_s: float) -> float:
    """seconds / seen_s; infinite over a seen time of zero (a record read back may hold
    one), which no honest call has."""
    return seconds / seen_s if seen_s > 0 else math.inf


def _mostly_preempted(result: Result) -> bool:
    """The OS preempted the worker in half of the timed calls or more (timing/hostload.py:
    MEDIAN_PREEMPTED, the load where even the median is another process's time): beside a
    load average of 4-7 on the 2-core machine, an honest row's fresh floor read 1.8x its
    seen floor and a half-work cache's fresh calls sat at its median; the row already
    says that the host was busy."""
    load = result.measurement.host_load if result.measurement else None
    return load is not None and load.preempted_per_call >= MEDIAN_PREEMPTED


def _loop_evidence(result: Result) -> FreshEvidence | None:
    """The mode's fresh calls timed inside its loop, where there are enough to read
    (IN_LOOP_MIN_CALLS), else None."""
    evidence = result.measurement.fresh_in_loop if result.measurement else None
    if evidence is None or len(evidence.fresh_s) < IN_LOOP_MIN_CALLS:
        return None
    return evidence


def paired_beyond(fresh_s, repeat_s, mode: str, host_bound: bool = False) -> bool:
    """The fastest fresh call beyond PAIRED_RATIO (the CPU's bar where the call waits on the
    host) of the fastest call on seen inputs. The probe (run/worker/fresh_probe.py) asks this too:
    where its first round trips it, it makes a second and keeps both, so an accusation
    stands only if the floors of the two rounds together still trip it."""
    ratio = FRESH_RATIO["cpu"] if host_bound else PAIRED_RATIO
    slack = PAIRED_SLACK_S.get(mode, FRESH_SLACK_GPU_S)
    return min(fresh_s) > min(repeat_s) * ratio + slack


def waits_on_host(result: Result) -> bool:
    """The device was busy for under HOST_BOUND_SHARE of the call's event window (CUPTI's
    busy time, where the device-work probe ran): the window holds host waits."""
    work, median = result.device_work, result.median_s
    if work is None or work.busy_us is None or not median:
        return False
    return work.busy_us * 1e-6 < HOST_BOUND_SHARE * median


def _shortcut(fresh_s: float, seen_s: float, seen_what: str, how: str = "") -> TimingWarning:
    return TimingWarning(
        "repeat_shortcut",
        f"calls on inputs it had never seen{how} take {_us(fresh_s)} at best, "
        f"{_times(fresh_s, seen_s)} the {_us(seen_s)} of {seen_what}: it skips work on "
        "inputs it has seen",
        "a kernel must do its work on every call; its figures are not shown as a speedup")


def work_outside_window(result: Result) -> TimingWarning | None:
    """The device ran far longer per call, over all streams, than the event window saw."""
    work, median = result.device_work, result.median_s
    if result.mode not in EVENT_WINDOW_MODES or work is None or median is None:
        return None
    # Busy time, not span: work that escapes the window is device time the window does
    # not hold, while idle gaps in a profiled call are the profiled host's (device_work).
    ran_us = work.busy_us if work.busy_us is not None else work.span_us
    if work.source != "cupti" or ran_us is None:
        return None
    ran_s = ran_us * 1e-6
    if ran_s <= median * WINDOW_RATIO + WINDOW_SLACK_S:
        return None
    return TimingWarning(
        "outside_window",
        f"the GPU ran {_us(ran_s)} of work per call ({work.kernels} kernels, all "
        f"streams, CUPTI) but the timed window saw {_us(median)}: work escapes the "
        "window (another stream, a deferred launch)",
        "join other streams back before returning; the figures are not shown as a speedup")


BEHAVIOURAL_CHECKS = (timed_shortcut, repeat_shortcut, work_outside_window)


def behavioural_doubt(result: Result) -> TimingWarning | None:
    """The first behavioural reason not to trust a correct row's time, or None."""
    for check in BEHAVIOURAL_CHECKS:
        found = check(result)
        if found is not None:
            return found
    return None


def _times(slow_s: float, fast_s: float) -> str:
    """'2.2x' — or 'against' when the fast side took no measurable time at all."""
    return f"{slow_s / fast_s:.1f}x" if fast_s >= 1e-8 else "against"


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:.1f} us"
