"""An A/B pair task in the worker: BASE's and NEW's variant of one name, checked, then timed
in pairs (calls.py) round after round until the pairs' interval decides or the time is spent.

Both versions are loaded side by side (each family folder its own; CUDA extensions are
named by their content, so a changed kernel builds under a new name and an unchanged one
is the same module). Inputs come from NEW's family for both: the judge's truth is NEW's
(the parent opens the task with NEW's folder), so BASE is checked against the same
reference, with the same seeds. Each side's first call is checked on its own copy of the
inputs (an input it mutates there is its own fault). The timed calls share one set of
input and output buffers: two copies sit at other addresses, and on the CPU machine that
alone moved an unchanged variant by 1-2% between the sides with a tight interval (the
A/A in docs/measurement.md, "A/B in one process"); shared, the code is the only
difference. Every check a `run` makes is made for each side: the first call, the
input-mutation check (after the pairs: of both sides at once), the re-checked timed
calls, the fresh-input probe. A side that fails fails the pair, named.
When both sides hold the same autotuned Triton kernel and their autotuners kept two
configs, both run one (shared_pick.py): the pairs then compare the code, not two draws.

The threshold the pairs' interval must decide at is the task's `target_rel_ci`
(commands/ab.py puts `--threshold` there): SAME within it, FASTER/SLOWER beyond it.
"""

from __future__ import annotations

import random
from dataclasses import replace

from gpubench import errors
from gpubench.analysis.comparison import UNSURE, verdict
from gpubench.families import compiled
from gpubench.records.point import Task
from gpubench.records.result import FAIL, OK
from gpubench.records.worker_result import WorkerResult
from gpubench.run.ab.calls import AlternatingCalls
from gpubench.run.ab.shared_pick import share_pick
from gpubench.run.worker.draws import make_group, twin_group
from gpubench.run.worker.execute import Executor, Prepared
from gpubench.run.worker.rotation import InputSet, Rotation
from gpubench.timing.clocks import measure_watched
from gpubench.timing.hostload import busy_factor
from gpubench.timing.measurement import FreshEvidence, Measurement, in_loop_evidence
from gpubench.timing.paired import (
    BASE,
    DECIDED,
    EXTENDED,
    MAX_TIME,
    NEW,
    PairedTiming,
    blocks_of,
    family_z,
    paired_interval,
    round_budgets,
    time_for_blocks,
)
from gpubench.timing.settings import TimingSettings
from gpubench.timing.timers import make_timer, modes_for_device

# Modes whose timer takes one sample per call, in call order, which pairs need. A graph
# replays K calls of one capture as one sample, and CUPTI yields what its trace holds.
PAIRED_MODES = ("cold", "warm", "wall", "cpu")
# The first round's seconds of pairs: ~1000 pairs of a 20 us kernel, enough to call a 5%
# change at once; each later round doubles (timing/paired.round_budgets).
FIRST_ROUND_S = 0.05
SIDES = ("base", "new")


def run_pair(executor: Executor, task: Task) -> WorkerResult:
    """NEW's result with BASE's inside it and the pairs per mode (WorkerResult.paired)."""
    new_task = replace(task, base_dir="")
    base_task = replace(task, family_dir=task.base_dir, base_dir="")
    cache_before = compiled.cache_events()
    new = executor.prepare(new_task)  # first: the judge's first check is NEW's
    new_checked = executor.checked(new, cache_before)
    key = ("ab-base", task.family_dir, task.shape, task.dtype, task.seed)
    group = twin_group(new.group, key) if new_checked.status == OK else \
        make_group(new.family, new_task, executor.machine.device, key)  # NEW's may be written
    cache_before = compiled.cache_events()
    base = executor.prepare(base_task, group=group)
    base = replace(base, family=new.family)  # its inputs, re-draws and probes: NEW's
    base_checked = executor.checked(base, cache_before)
    unpaired = _unpaired(new_checked, base_checked)
    if unpaired is not None:
        return unpaired
    pick = share_pick(base.tuned, new.tuned)  # one kernel, two autotuner picks: one
    if pick is not None:
        base_checked, new_checked = pick.applied(base_checked), pick.applied(new_checked)
    executor.report_phase("time")
    shared = executor._timing_sets(new, new_task)  # one set of buffers: see the docstring
    sets = (shared, shared)
    prepared = (base, new)
    retired: list[InputSet] = []  # what the shared buffers held before new values (CPU)
    timed = {mode: _time_pair(executor, mode, prepared, sets, task, retired)
             for mode in modes_for_device(task.timing.modes, executor.machine.device)}
    results = [replace(checked, measurements={m: t[side] for m, t in timed.items()})
               for side, checked in enumerate((base_checked, new_checked))]
    paired = {mode: t[2] for mode, t in timed.items() if t[2] is not None}
    culprit = _shared_inputs_written(executor, new, shared + retired)
    if culprit:  # the timed calls share their inputs: which side wrote them is not known
        error = f"while timed: base or new (their timed calls share inputs): {culprit}"
        base_failed, new_failed = (replace(r, status=FAIL, error=error) for r in results)
        return replace(new_failed, base=base_failed, paired=paired)
    results = [_after_timing(executor, ready, result, task, shared)
               for ready, result in zip(prepared, results, strict=True)]
    return _pair_result(results[BASE], results[NEW], paired)


def _failed_side(base: WorkerResult, new: WorkerResult) -> WorkerResult | None:
    """NEW's result failed as the first side that failed (its status, its error, the side
    named), carrying BASE's; None when neither failed. A re-check that failed in a timed
    mode fails its side too."""
    for side, result in (("base", base), ("new", new)):
        if result.status != OK:
            return replace(new, status=result.status, error=f"{side}: {result.error}",
                           base=base)
        failed = [m for m in result.measurements.values() if m.recheck_failed]
        if failed:
            return replace(new, status=FAIL, error=f"{side}: {failed[0].error}", base=base)
    return None


def _unpaired(new: WorkerResult, base: WorkerResult) -> WorkerResult | None:
    """The pair's result when it cannot be timed: a side failed (the pair fails, the side
    named), or a side is not timed here (a Triton kernel in the interpreter)."""
    failed = _failed_side(base, new)
    if failed is not None:
        return failed
    if new.untimed or base.untimed:
        return replace(new, untimed=new.untimed or base.untimed, base=base)
    return None


def _time_pair(executor: Executor, mode: str, prepared: tuple, sets: tuple, task: Task,
               retired: list[InputSet]):
    """(BASE's Measurement, NEW's, their PairedTiming or None) for one mode; `retired`
    gathers what the shared buffers held before they took never-seen values."""
    if mode not in PAIRED_MODES:
        error = (f"{mode} is not timed in pairs (its samples are not one call each); "
                 f"ab times {', '.join(PAIRED_MODES)}")
        return Measurement(mode, error=error), Measurement(mode, error=error), None
    seed = random.SystemRandom().getrandbits(64)  # both rotations draw alike: same sets
    rotations = [Rotation(ready.fn, side_sets, executor._judge_all, warm=mode == "warm",
                          rng=random.Random(seed),
                          fresh=executor._fresh_sets(ready, task, side_sets),
                          on_cpu=not executor.machine.has_cuda, retired=retired)
                 for ready, side_sets in zip(prepared, sets, strict=True)]
    parts = [rotation.parts() for rotation in rotations]  # held here, out of reach
    calls = AlternatingCalls(*rotations)
    try:
        rounds = _rounds(executor, mode, calls, task)
        checks = [rotation.tampered(held, calls.calls[side]) or rotation.verdict()
                  for side, (rotation, held) in enumerate(zip(rotations, parts, strict=True))]
    finally:
        for rotation in rotations:
            rotation.close()
    return (*(_measurement(rounds, side, check) for side, check in enumerate(checks)),
            rounds.paired)


class _Rounds:
    """What the rounds of one mode gathered: the pairs, the first and last timer's
    Measurements (warm-up, method, details), the clocks, the time spent sampling."""

    def __init__(self, mode: str):
        self.mode, self.base, self.new, self.new_first = mode, [], [], 0
        self.first: Measurement | None = None
        self.last: Measurement | None = None
        self.clocks, self.sampling_s, self.count, self.stop = None, 0.0, 0, MAX_TIME
        self.error: str | None = None
        self.host_load = None  # on a CPU: the busiest round's (a verdict reads it)
        # per side: the fresh calls of every round's loop, one stretch after another
        # (rotation.fresh_samples)
        self.fresh: list[FreshEvidence] = [FreshEvidence(), FreshEvidence()]

    def add(self, timing: Measurement, clocks, calls: AlternatingCalls) -> None:
        order = calls.order
        for side, rotation in enumerate(calls.sides):
            found = rotation.fresh_samples(calls.side_samples(timing.samples_s, side))
            if found is not None:
                self.fresh[side] = self.fresh[side].then(found)
        base, new, new_first = blocks_of(order, timing.samples_s)
        self.base += base
        self.new += new
        self.new_first += new_first
        self.first, self.last, self.count = self.first or timing, timing, self.count + 1
        self.clocks = clocks or self.clocks
        self.sampling_s += timing.sampling_s or 0.0
        self.error = self.error or timing.below_the_window()
        if busy_factor(timing.host_load) >= busy_factor(self.host_load):
            self.host_load = timing.host_load or self.host_load

    @property
    def paired(self) -> PairedTiming:
        return PairedTiming(self.mode, tuple(self.base), tuple(self.new), self.new_first,
                            self.count, self.stop)


def _rounds(executor: Executor, mode: str, calls: AlternatingCalls, task: Task) -> _Rounds:
    """Rounds of pairs until the interval decides (at the task's threshold) or the task's
    max time is spent; then, if the blocks a verdict needs are still missing, one more
    round long enough to reach them at the pace timed so far, within the point's share of
    the suite's budget (timing/paired.time_for_blocks). The first round warms up as a
    `run` does; later ones need not."""
    gathered, settings = _Rounds(mode), task.timing
    for index, budget in enumerate(round_budgets(settings.max_time_s, FIRST_ROUND_S)):
        if _round(executor, calls, gathered, settings, budget, warm=index == 0):
            gathered.stop = DECIDED
            return gathered
    paired = gathered.paired
    extra = time_for_blocks(paired.blocks, sum(paired.base_s) + sum(paired.new_s),
                            settings.blocks_time_s)
    if extra > 0 and gathered.error is None:
        _round(executor, calls, gathered, settings, extra, warm=False)
        gathered.stop = EXTENDED  # decided or not: the verdict says which
    return gathered


def _round(executor: Executor, calls: AlternatingCalls, gathered: _Rounds,
           settings: TimingSettings, budget: float, warm: bool) -> bool:
    """One round of `budget` seconds of pairs into `gathered`; whether they now decide."""
    timer = make_timer(gathered.mode, replace(
        settings, warmup_s=settings.warmup_s if warm else 0.0, min_time_s=budget,
        max_time_s=budget, max_samples=2 * settings.max_samples), executor.shared)
    calls.start_round()
    timing, clocks = measure_watched(timer, calls, executor.machine.has_cuda,
                                     executor.gpu_uuid)
    gathered.add(timing.at_least_zero(), clocks, calls)
    _, low, high = paired_interval(gathered.paired.ratios(), family_z(settings.decisions))
    threshold = settings.target_rel_ci
    return gathered.error is None and low == low and \
        verdict(low, high, threshold, threshold) != UNSURE


def _measurement(rounds: _Rounds, side: int, check) -> Measurement:
    """One side's Measurement from the pairs: its samples, the first round's warm-up, the
    last round's method and details, the re-check of its own timed calls."""
    failure, recheck = (check, None) if isinstance(check, str) else (check[1], check[0])
    first, last = rounds.first, rounds.last
    return Measurement(
        rounds.mode, f"{last.method}; paired: calls of BASE and NEW interleaved in random "
        "order", rounds.base if side == BASE else rounds.new, first.warmup_calls,
        first.warmup_s, rounds.stop, rounds.sampling_s, dict(last.details),
        last.target_rel_ci, rounds.clocks, recheck,
        f"while timed: {failure}" if failure else rounds.error, failure is not None,
        host_load=rounds.host_load, fresh_in_loop=in_loop_evidence(rounds.fresh[side]))


def _shared_inputs_written(executor: Executor, new: Prepared, shared: list[InputSet]
                           ) -> str | None:
    """What the pair's timed calls wrote into their shared inputs (each set against its
    fresh draw), or None. Asked before the re-checks are read: an input written by one
    side makes the other side's outputs wrong as well, so a re-check cannot name it."""
    for index, drawn in enumerate(shared):
        culprit = executor._blame(new.group, drawn.inputs, drawn.seed, new.state)
        if culprit:
            return f"input set {index}: {culprit}"
    return None


def _after_timing(executor: Executor, ready: Prepared, result: WorkerResult, task: Task,
                  sets: list[InputSet]) -> WorkerResult:
    """A side after its calls (their shared inputs found as drawn): the fresh-input probe,
    then what one call runs on the GPU, as a `run` ends a point: the parent's verdicts
    (run/ab/rows.py) read both as they read a `run`'s row."""
    if any(m.recheck_failed for m in result.measurements.values()):
        return result
    probe = executor._fresh_probe(ready, task, sets)
    if probe.failure:
        return replace(result, status=FAIL, error=probe.failure)
    return replace(result, measurements={
        mode: m.completed(fresh=probe.evidence())
        for mode, m in result.measurements.items()},
        device_work=executor._device_work(ready.fn, ready.group))


def _pair_result(base: WorkerResult, new: WorkerResult, paired: dict) -> WorkerResult:
    """NEW's result carrying BASE's and the pairs; a side that failed fails the pair."""
    return replace(_failed_side(base, new) or replace(new, base=base), paired=paired)


# The suite's budget beyond --max-time when none is given: ten times each point's
# --max-time, which a 10 ms kernel (30 blocks: 1.2 s) fits and a 100 ms one does not.
BUDGET_PER_POINT = 10.0


def paired_timing(timing: TimingSettings, device: str, threshold: float,
                  points: int = 1, budget_s: float | None = None) -> TimingSettings:
    """run's settings for pairs: the threshold as their target (they stop once their
    interval decides at it, run/ab/pair.py, or after --max-time), `points` times the
    modes as the verdicts decided together (family_z), and each one's share of `budget_s`
    (--budget; default BUDGET_PER_POINT times --max-time each) to reach the blocks a
    verdict needs; a mode whose samples are not one call each is a UsageError."""
    modes = modes_for_device(timing.modes, device)
    unpaired = [m for m in modes if m not in PAIRED_MODES]
    if unpaired:
        raise errors.UsageError(f"ab times in pairs, one call a sample: mode(s) "
                                f"{', '.join(unpaired)} cannot; use "
                                f"{', '.join(m for m in PAIRED_MODES if m != 'cpu')}")
    decisions = max(1, points * len(modes))
    share = BUDGET_PER_POINT * timing.max_time_s if budget_s is None else budget_s / decisions
    return replace(timing, target_rel_ci=threshold, decisions=decisions, blocks_time_s=share)
