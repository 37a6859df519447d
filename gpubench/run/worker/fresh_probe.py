"""The fresh-input probe: how long a call takes on inputs the variant has never seen.

Every way of skipping work on repeated calls — an answer cached by pointer, by
tensor version, by content (a hash), a C++ table of seen addresses, a kernel
that notices it ran before — makes repeated calls faster than first ones. An
honest kernel takes as long on new inputs as on old ones: the same work, the L2
flushed either way. So after the timing, FRESH_CALLS pairs of calls are made one
by one: one on a new set of inputs drawn from the family's generator (new values,
new buffers), right after one on a set the timing used, each timed as a cold
sample is (poison, flush, a long spin, an event pair, minus the window's fixed
cost; the host clock on a CPU). The seen call goes first: after the pause that
making and checking a set costs, a CPU's first call also wakes the intra-op
threads (27 ms for a 40 us matmul on a loaded 2-core host), and that
must not land on the fresh call. Every fresh call is checked (by the judge, run/judge/):
a pointer-keyed cache may hit on a fresh set that landed where an earlier
one was freed, and its stale answer must fail, not pass as a fast call. Odd calls
get the finite poison, which meets a NaN reference. A round whose floors accuse the
variant is followed by a second (ROUNDS), so that one draw of a shared host's noise
accuses no one. The times travel in each mode's details
(Measurement.fresh); the verdict, a pure comparison, is verdicts/behaviour.py's.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from gpubench.families.check import CheckResult, poison
from gpubench.run.worker.rotation import InputSet, Rotation, output_problem, retire
from gpubench.timing import pristine
from gpubench.timing.hostload import HostLoad, Snapshot, load_between
from gpubench.timing.measurement import FreshEvidence
from gpubench.verdicts.behaviour import paired_beyond

# 9 pairs: medians robust to two stragglers; ~9 x (inputs + 2 x 2 ms of spin) per point.
FRESH_CALLS = 9
# A round whose floors trip verdicts/behaviour.py's paired bar is followed by one more, and the
# verdict reads both: an accusation must survive a second draw of the host's noise (an
# honest round can read 1.3x on a loaded CI host), while a shortcut's fresh calls
# do the work in every round. Honest rounds (nearly all) cost nothing extra.
ROUNDS = 2
# A spin far longer than any call's host side (a new pointer may cost a descriptor or a
# plan lookup on the host): the window must hold the device work only.
PROBE_SPIN_US = 2000.0


@dataclass(frozen=True)
class FreshProbe:
    fresh_s: tuple[float, ...]
    repeat_s: tuple[float, ...]
    failure: str | None = None  # a checked fresh call's output was wrong
    host_load: HostLoad | None = None  # on a CPU: what else ran meanwhile

    def evidence(self) -> FreshEvidence:
        return FreshEvidence(self.fresh_s, self.repeat_s, self.host_load)


def probe_fresh(calls: Rotation, make_set: Callable[[int], InputSet], seen: list[InputSet],
                judge: Callable[[InputSet, object], CheckResult],
                support=None) -> FreshProbe:
    """FRESH_CALLS pairs: a call on a set of `seen` (drawn at random), then one on a set
    made by `make_set(i)`, whose output `judge(set, output)` checks; `support` is the
    worker's CudaSupport on a GPU, None on a CPU. Each call goes through `calls` (a
    Rotation aimed at the set), the frames every timed call passes."""
    draw = random.Random(random.SystemRandom().getrandbits(64))
    fresh_times, repeat_times = [], []
    before = Snapshot.now() if support is None else None
    mode = "cpu" if support is None else "cold"
    for index in range(FRESH_CALLS * ROUNDS):
        if index and index % FRESH_CALLS == 0 and not paired_beyond(fresh_times,
                                                                     repeat_times, mode):
            break  # the rounds so far accuse nothing: no further round is needed
        fresh, known = make_set(index), draw.choice(seen)
        finite = index % 2 == 1
        seconds, produced = _timed_call(calls, known, support, finite)
        retire(produced, known)
        repeat_times.append(seconds)
        seconds, produced = _timed_call(calls, fresh, support, finite)
        fresh_times.append(seconds)
        failure = _check(produced, fresh, index, judge)
        retire(produced, fresh)
        if failure:
            return FreshProbe(tuple(fresh_times), tuple(repeat_times), failure)
    # On a shared CPU an isolated call waits for the intra-op threads to wake (ms on a
    # loaded 2-core host): verdicts/behaviour.py does not judge a busy probe.
    calls = 2 * len(fresh_times)
    load = load_between(before, Snapshot.now(), calls) if before else None
    return FreshProbe(tuple(fresh_times), tuple(repeat_times), host_load=load)


def _timed_call(calls: Rotation, fresh: InputSet, support, finite: bool
                ) -> tuple[float, object]:
    poison(fresh.out, finite=finite)
    call = calls.aim(fresh)
    if support is None:
        _wake_thread_team()
        start = pristine.perf_counter()
        produced = call()
        return pristine.perf_counter() - start, produced
    support.flush()
    support.spin_for_us(PROBE_SPIN_US)
    begin, end = support.event(), support.event()
    support.record(begin)
    produced = call()
    support.record(end)
    support.synchronize()
    cost = support.window_cost().fixed_s
    return max(support.elapsed_s(begin, end) - cost, 0.0), produced


# Elements of the fill that wakes the CPU's thread team: above ATen's grain size (32768), so
# the fill runs as a parallel region on every thread; 512 KB, ~10-20 us, outside the window.
_WAKE_ELEMENTS = 1 << 17
_wake_buffer: list = []


def _wake_thread_team() -> None:
    """Wake the OpenMP thread team right before an isolated CPU call, as a timing loop's
    call finds it: a kernel that runs as a parallel region (Inductor's C++ does even at
    1024 elements; ATen's ops above their grain size) otherwise pays for waking the
    sleeping threads on every isolated call, tens of us to a time slice on a loaded host,
    which no call of a loop pays. That makes an honest `compiled` row SUSPECT ("skips work
    on inputs it has seen": its fresh calls several times its loop's median).
    On the GPU the spin before the window does this job. One process-wide team: Inductor's
    kernels load libgomp by the soname torch's own libgomp has, so they share it."""
    import torch

    if torch.get_num_threads() < 2:
        return
    if not _wake_buffer:
        _wake_buffer.append(torch.empty(_WAKE_ELEMENTS))
    _wake_buffer[0].fill_(0.0)


def _check(produced, fresh: InputSet, index: int, judge) -> str | None:
    problem = output_problem(produced, fresh.inputs)
    if problem:
        return f"on fresh call {index + 1}: {problem}"
    result = judge(fresh, produced)
    if result.passed:
        return None
    return (f"on inputs it had not seen before (fresh call {index + 1}), the output differs "
            f"from the reference: {result.summary()} (answers of earlier calls, or an "
            "error that shows on some inputs only)")
