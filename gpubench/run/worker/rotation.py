"""Rotation: timed calls a variant cannot tell from the checked one.

A variant that caches its answer by pointer, by version or by content, that
works on its first calls only, or that leaves part of the output for later, is
correct on the checked call and fast on the timed ones. So every timed call
(warm-up included) gets what the checked call got (timers/calls.py hooks,
outside the timed window):

- the next of several input sets with their own random values, never the same
  set twice in a row (a cached answer, or an output found in a freed buffer, is
  the previous set's and wrong for this one);
- its output buffer poisoned, with NaN or with a finite sentinel chosen at
  random (an element left unwritten fails; on a NaN reference the finite poison
  fails it);
- the previous call's returned output poisoned before it is dropped (a variant
  that allocates with empty_like finds no answer in the freed block);
- a copy of the output for a re-check, on calls drawn at random by reservoir
  sampling over the whole measurement: late calls are as likely to be checked
  as early ones, and the variant cannot know which ones are.

`verdict()` hands the copies to the judge (run/judge/) in one request, which compares
each with the float64 reference of its set's inputs, drawn again from the set's seed in a
process the variant cannot reach.

A variant may still tell a timed call from every other call by how it is reached (its
callers' frames, their locals, the harness's objects found through gc) and skip work on
the timed ones only, doing the full work whenever it is checked or probed. So some timed
calls are made on inputs it has never seen, inside the timing loop itself (`fresh`: sets
drawn before the loop, each used once, at random sample positions): the same frames,
the same loop, the same poisoning as every other timed call. Their outputs are checked
like the re-checked ones, and their times travel with the mode (`fresh_samples`): a
variant that serves what it saw before on timed calls is wrong on these (FAIL) or does the
work on them and is slower there than on its other timed calls (verdicts/behaviour.py:
SUSPECT), however it told the calls apart.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field

from gpubench.families.check import CheckResult, poison
from gpubench.timing.measurement import FreshEvidence

# Outputs re-checked per mode: 8 copies, each drawn with probability 8/n at call n
# (reservoir sampling), so ~8 ln(n/8) copies are made over n calls: ~60 for 10^4 calls.
RECHECKS = 8
# Input sets per variant: up to 4 while they fit in ROTATION_SHARE of the free memory;
# 2 at least (the group's timing set and one more), whatever the size.
MAX_SETS = 4
ROTATION_SHARE = 0.2
CPU_BUDGET_BYTES = 1 << 30
# Timed calls on never-seen inputs per measurement, the k-th at a random sample position in
# [2^k, 2^(k+1)) for k = 1..FRESH_IN_LOOP: 3 by the 16th sample (a slow kernel's whole
# measurement), all 4 by the 32nd; the first two samples, where a measurement settles, never.
# Each costs a set drawn before the loop (memory as a rotation set) and one judged output.
FRESH_IN_LOOP = 4


@dataclass
class InputSet:
    """One set of inputs, its output buffer, and the seed that drew the inputs: the
    re-check's reference is made from the inputs drawn again from it, after the calls."""

    inputs: tuple
    out: object
    seed: int | None = None


@dataclass
class Drawn:
    """A timed call drawn for the re-check: which call, which set, its output's copy
    (`fresh`: the never-seen set a loop call ran on, whose index is not a rotation's)."""

    call: int
    set_index: int
    output: object
    finite_poison: bool
    problem: str | None = None
    fresh: InputSet | None = None
    ran_on: InputSet | None = None  # the set as it was then (a CPU's buffers take new values)


@dataclass
class Rotation:
    """TimedCalls over `sets` for one mode (see the module docstring). `invoke(inputs, out)`
    is the variant's Invocation; `judge([(input_set, output), ...])` the judge's
    CheckResults of outputs of those sets, asked once after the calls; `warm` reads the
    set's inputs before each call, so they sit in L2 as in warm mode they should."""

    invoke: Callable
    sets: list[InputSet]
    judge: Callable[[list[tuple[InputSet, object]]], list[CheckResult]]
    warm: bool = False
    rng: random.Random = field(default_factory=lambda: random.Random(random.SystemRandom()
                                                                     .getrandbits(64)))
    drawn: list[Drawn] = field(default_factory=list)
    kept: list[Drawn] = field(default_factory=list)
    calls: int = 0
    current: int = -1
    produced: object = None
    finite: bool = False
    capturing: bool = False
    # Never-seen sets for timed calls inside the loop (module docstring), each used once.
    fresh: list[InputSet] = field(default_factory=list)
    fresh_drawn: list[Drawn] = field(default_factory=list)  # their outputs' copies
    # On a CPU, the sets whose values went into a rotation buffer, held until close():
    # freed just before the call, their pages would go back to the system and a call
    # that allocates would fault its output's pages in inside its window (2-5x an honest
    # 256 KB torch op's neighbours beside memory-bound hogs, read as a shortcut).
    spent: list[InputSet] = field(default_factory=list)
    on_cpu: bool = False  # never-seen values go into a rotation's buffer (_fresh_set)
    # Where given, the values a buffer held before it took never-seen ones, with their seed:
    # an input a call wrote is still found by the check of the inputs after the timing (ab's
    # pairs check every shared set; a run checks the group's first, which keeps its values).
    retired: list[InputSet] | None = None
    seen_calls: int = 0  # calls on the rotation's own sets: the reservoir's count
    positions: frozenset = frozenset()  # sample positions that take a fresh set
    tags: list[bool] = field(default_factory=list)  # per sample since sampling(): fresh?
    chosen: InputSet | None = None
    on_fresh: bool = False
    fresh_captured: bool = False  # calls go to never-seen sets: a graph captured on them
    next_set: int | None = None  # the set of the next call, where the caller chose it

    def before(self) -> None:
        self.release_output()
        self.on_fresh = self._fresh_turn() or (self.fresh_captured and bool(self.fresh))
        if self.on_fresh:
            self.chosen = self._fresh_set()
        else:
            self.current = self.next_set if self.next_set is not None else \
                another_set(self.rng, len(self.sets), self.current)
            self.chosen = self.sets[self.current]
        self.next_set = None
        self.finite = self.rng.random() < 0.5
        if self.on_fresh and self.on_cpu:  # read before the poison: see _touch
            _touch(self.chosen.inputs)
        poison(self.chosen.out, finite=self.finite)
        if self.warm:
            _touch(self.chosen.inputs)

    def _fresh_set(self) -> InputSet:
        """The next never-seen set. On a CPU its values are written into one of the
        rotation's own buffers, which holds them from then on (its seed becomes theirs):
        memory a loop has not yet used costs a CPU its first calls there, whatever the
        harness reads or writes first (a 4 MB sin: 1.3-1.5x on a never-used set, 1.03-1.07x
        with new values in a used one; journal), which would read as a skipped-work
        shortcut. New values defeat a cache by content or version, and one by pointer then
        serves the old answer, which the check fails. Not the group's first set (the input
        check reads it against its own seed) nor the set just used."""
        drawn = self.fresh.pop()
        spare = [i for i in range(1, len(self.sets)) if i != self.current]
        if not self.on_cpu or not spare:
            return drawn
        index = self.rng.choice(spare)
        used = self.sets[index]
        if not _same_layout(drawn, used):
            return drawn
        if self.retired is not None:
            self.retired.append(InputSet(tuple(x.clone() if hasattr(x, "clone") else x
                                               for x in used.inputs), used.out, used.seed))
        for mine, theirs in zip(used.inputs, drawn.inputs, strict=True):
            if hasattr(mine, "copy_"):
                mine.copy_(theirs)
        self.spent.append(drawn)
        self.sets[index] = InputSet(used.inputs, used.out, drawn.seed)
        self.current = index
        return self.sets[index]

    def aim(self, chosen: InputSet) -> Rotation:
        """The next call goes to `chosen`, set up by the caller: the checked call and the
        probe's calls reach the variant through this same `__call__` as every timed call,
        so the frames right above it say nothing about which call it is."""
        self.chosen = chosen
        return self

    def __call__(self) -> object:
        chosen = self.chosen
        self.produced = self.invoke(chosen.inputs, chosen.out)
        return self.produced

    def after(self) -> None:
        self.calls += 1
        if self.positions:
            self.tags.append(self.on_fresh)
        if self.capturing:  # copies would be captured too: keep the outputs themselves
            if self.fresh_captured or _stream_capturing():  # not the eager run before a
                # capture: its sets may be left out of the graph, and the flush graph may
                # poison them after
                self.kept.append(Drawn(self.calls, self.current, self.produced, self.finite,
                                       fresh=self.chosen if self.on_fresh else None))
            return
        if self.on_fresh:  # every call on a never-seen set is checked
            self.fresh_drawn.append(self._copy(self.chosen, fresh=True))
            return
        self.seen_calls += 1
        slot = self._slot()
        if slot is None:
            return
        drawn = self._copy(self.chosen)
        if slot < len(self.drawn):
            self.drawn[slot] = drawn
        else:
            self.drawn.append(drawn)

    def _copy(self, chosen: InputSet, fresh: bool = False) -> Drawn:
        """This call's output, copied for the judge (or why it cannot be trusted)."""
        drawn = Drawn(self.calls, self.current, None, self.finite,
                      output_problem(self.produced, chosen.inputs), chosen if fresh else None,
                      chosen)
        if drawn.problem is None:
            drawn.output = self.produced.detach().clone()
        return drawn

    def sampling(self) -> None:
        """The timer's samples begin, one per call: plan which of them run on the fresh
        sets (FRESH_IN_LOOP's doubling windows, at random within each). Not while a
        graph is captured: a captured call is replayed, never seen once."""
        self.tags = []
        if self.capturing or not self.fresh:
            self.positions = frozenset()
            return
        self.positions = frozenset(self.rng.randrange(1 << k, 1 << (k + 1))
                                   for k in range(1, len(self.fresh) + 1))

    def _fresh_turn(self) -> bool:
        """Whether the call about to be made is one of the planned fresh ones."""
        return bool(self.fresh) and not self.capturing and len(self.tags) in self.positions

    def fresh_samples(self, samples_s) -> FreshEvidence | None:
        """The calls made on fresh sets and the calls on seen sets in the same stretch of
        the loop, out of the timer's samples (one per call since sampling(), in call order),
        with each fresh call's place among them; None where they do not line up one to one
        (a timer that drops calls, as CUPTI does a call that launched nothing). The stretch
        ends at twice the last fresh call's position: the fresh calls are early ones, and a
        loop's early samples may run slower than its later thousands (clocks, caches
        settling), which must not read as a shortcut; the places let a verdict read each
        fresh call beside its neighbours rather than beside the whole stretch."""
        if not self.positions or len(self.tags) != len(samples_s):
            return None
        stretch = 2 * max(i for i, fresh in enumerate(self.tags) if fresh) + 2 \
            if any(self.tags) else 0
        tags = self.tags[:stretch]
        fresh = [s for s, tag in zip(samples_s, self.tags, strict=True) if tag]
        seen = [s for s, tag in zip(samples_s[:stretch], tags, strict=True) if not tag]
        return FreshEvidence(tuple(fresh), tuple(seen),
                             fresh_at=tuple(i for i, tag in enumerate(tags) if tag))

    def parts(self) -> tuple:
        """What decides this rotation's verdict, by identity: taken before the variant runs
        and held outside the rotation (a local of the caller's frame, which Python code
        cannot rebind), so `tampered()` can tell whether variant code swapped any of it."""
        return (self.rng, self.drawn, self.kept, self.sets, self.judge, self.invoke,
                self.fresh_drawn)

    def tampered(self, parts: tuple, timed_calls: int) -> str | None:
        """Why the re-check bookkeeping cannot be trusted after the measurement, or None:
        a part replaced (the list of drawn copies swapped for one that keeps nothing, the
        random source or the judge's link), or fewer copies or calls than the
        measurement made (a reservoir holds min(RECHECKS, calls) copies; every timed call
        passes through `after`)."""
        names = ("random source", "drawn copies", "kept outputs", "input sets", "judge",
                 "variant", "fresh calls' copies")
        swapped = [name for name, now, before in zip(names, self.parts(), parts, strict=True)
                   if now is not before]
        if type(self.rng) is not random.Random or type(self.drawn) is not list:
            swapped.append("bookkeeping types")
        if swapped:
            return "variant code replaced the re-check's " + ", ".join(swapped)
        if self.capturing:  # a graph's replays pass no hook: its kept outputs are checked
            return None
        if self.calls < timed_calls:
            return f"the re-check counted {self.calls} calls of {timed_calls} timed"
        if len(self.drawn) < min(RECHECKS, self.seen_calls):
            return (f"the re-check holds {len(self.drawn)} copies where the calls made "
                    f"{min(RECHECKS, self.seen_calls)}")
        if len(self.fresh_drawn) < sum(self.tags):
            return (f"the re-check holds {len(self.fresh_drawn)} copies of {sum(self.tags)} "
                    "calls on never-seen inputs")
        return None

    def keep_outputs(self, capturing: bool) -> None:
        self.capturing = capturing

    def capture_fresh(self, on: bool) -> int:
        """While on, each call goes to a never-seen set, until none is left: the calls a
        graph timer captures to time a variant on inputs it has never seen (a graph's
        replays pass no hook, so its calls cannot be mixed into the timed graph's).
        Returns how many never-seen sets are left."""
        self.fresh_captured = on
        return len(self.fresh)

    def _slot(self) -> int | None:
        """Reservoir sampling: where call n's copy goes (None: not drawn)."""
        if len(self.drawn) < RECHECKS:
            return len(self.drawn)
        slot = self.rng.randrange(self.seen_calls)
        return slot if slot < RECHECKS else None

    def release_output(self) -> None:
        """Poison the previous call's returned output before it is dropped: the block it
        frees must not hand the answer to a variant that allocates with empty_like. A run
        calls it at its next call; ab (run/ab/calls.py) as each call ends, so that its two
        sides allocate from the block the call before freed, whichever side made it."""
        produced, self.produced = self.produced, None
        if produced is not None and self.chosen is not None and not self.capturing:
            retire(produced, self.chosen)

    def close(self) -> None:
        """After the last call: retire its output too, and let go of the kept ones and of
        the fresh sets (theirs is memory as large as the rotation's own)."""
        self.release_output()
        self.kept = []
        self.fresh = []
        self.spent = []

    def verdict(self) -> tuple[CheckResult | None, str | None]:
        """(the worst re-check, why it failed or None), over the drawn calls' copies, or
        over the kept outputs (a graph's last replay). (None, None) when nothing was drawn."""
        checks = self.fresh_drawn + self.drawn + _last_per_output(self.kept)
        for drawn in checks:
            if drawn.problem:
                return None, f"timed call {drawn.call} {drawn.problem}"
        worst = None
        results = self.judge([(d.fresh or d.ran_on or self.sets[d.set_index], d.output)
                              for d in checks]) if checks else []
        for drawn, result in zip(checks, results, strict=True):
            if not result.passed:
                return result, f"{_which(drawn)} differs from the reference: {result.summary()}"
            if worst is None or result.worst_ratio > worst.worst_ratio:
                worst = result
        return worst, None


def _which(drawn: Drawn) -> str:
    """A checked timed call, as a failure names it."""
    poison_kind = "finite" if drawn.finite_poison else "NaN"
    where = ("inputs it had never seen, timed in the loop" if drawn.fresh is not None
             else f"input set {drawn.set_index}")
    return f"timed call {drawn.call} ({where}, {poison_kind} poison)"


def retire(produced, chosen: InputSet) -> None:
    """Poison a returned output before the caller drops it, so the block it frees holds
    no answer; not the set's own buffer, nor anything that is not the variant's own
    plain tensor (an input's memory, a subclass)."""
    if produced is not chosen.out and output_problem(produced, chosen.inputs) is None:
        poison(produced)


def _last_per_output(kept: list[Drawn]) -> list[Drawn]:
    """The last kept call per output tensor: after a replay, each output holds the last
    call that wrote it."""
    last: dict[int, Drawn] = {}
    for drawn in kept:
        last[id(drawn.output)] = drawn
    return [Drawn(d.call, d.set_index, d.output, d.finite_poison,
                  output_problem(d.output, ()), d.fresh) for d in last.values()]


def output_problem(produced, inputs: tuple) -> str | None:
    """Why a call's output cannot be trusted as its own, or None: not a plain tensor (a
    subclass may compute when read, outside the window), or memory shared with an input."""
    import torch

    if type(produced) is not torch.Tensor:
        kind = type(produced).__name__
        return (f"returned a {kind}, not a plain torch.Tensor: a tensor subclass can compute "
                "its values when they are read, outside the timed window")
    shared = aliased_input(produced, inputs)
    if shared is not None:
        return f"returned memory of input {shared}: the output must be its own"
    return None


def aliased_input(produced, inputs: tuple) -> int | None:
    """The index of the first input whose storage overlaps the output's, or None."""
    import torch

    start, end = _byte_range(produced)
    for index, item in enumerate(inputs):
        if isinstance(item, torch.Tensor) and item.device == produced.device:
            other_start, other_end = _byte_range(item)
            if start < other_end and other_start < end:
                return index
    return None


def _byte_range(tensor) -> tuple[int, int]:
    storage = tensor.untyped_storage()
    base = storage.data_ptr()
    return base, base + max(storage.nbytes(), 1)


def _stream_capturing() -> bool:
    """Whether the current CUDA stream is being captured into a graph."""
    import torch

    return torch.cuda.is_available() and torch.cuda.is_current_stream_capturing()


def another_set(rng: random.Random, count: int, last: int) -> int:
    """One of `count` sets drawn at random, never `last` (0 when there is only that one)."""
    return rng.choice([i for i in range(count) if i != last] or [0])


def _same_layout(one: InputSet, other: InputSet) -> bool:
    """Whether `one`'s values fit `other`'s buffers: the same arguments, each tensor of the
    same shape, dtype and strides, anything else equal."""
    if len(one.inputs) != len(other.inputs):
        return False
    for a, b in zip(one.inputs, other.inputs, strict=True):
        if hasattr(a, "copy_") != hasattr(b, "copy_"):
            return False
        if hasattr(a, "copy_"):
            if (a.shape, a.dtype, a.stride(), a.device) != (b.shape, b.dtype, b.stride(),
                                                            b.device):
                return False
        elif a is not b and a != b:
            return False
    return True


def _touch(inputs: tuple) -> None:
    """Read every input tensor (a sum), so it sits in L2 for a warm call, and a CPU's
    never-seen set sits as a rotation's does: read twice, then its output poisoned, as
    every call finds its output. In one loop on the 2-core CPU machine that took the first
    call on a never-used 4 MB set from 1.8x a rotation set's call to 1.05-1.2x; the rest was
    the memory's newness, which _fresh_set answers (journal, "A CPU's never-seen 4 MB
    set")."""
    import torch

    for _ in range(2):
        for item in inputs:
            if isinstance(item, torch.Tensor) and item.numel():
                item.sum()


def set_count(set_bytes: int, free_bytes: int | None) -> int:
    """How many input sets to rotate: as many as fit in ROTATION_SHARE of the free memory
    (a fixed CPU_BUDGET_BYTES on a CPU, `free_bytes` None), between 2 and MAX_SETS."""
    budget = CPU_BUDGET_BYTES if free_bytes is None else int(free_bytes * ROTATION_SHARE)
    return max(2, min(MAX_SETS, budget // max(set_bytes, 1)))


def set_bytes(inputs: tuple, out) -> int:
    """Bytes of one set: its tensors and its output buffer."""
    import torch

    tensors = [x for x in (*inputs, out) if isinstance(x, torch.Tensor)]
    return sum(x.numel() * x.element_size() for x in tensors)
