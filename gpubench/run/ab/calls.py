"""AlternatingCalls: the TimedCalls a timer times for an A/B pair (timers/calls.py).

A timer takes one sample per call and calls `before()` right before it; here `before()`
also chooses whose call it is. Calls go in blocks of four, BASE NEW NEW BASE or NEW BASE
BASE NEW (a coin per block), so every block holds one pair of each order: a call that warms
the next one's caches or clocks helps both sides alike (timing/paired.py). The block's first
two calls share one input set and its last two another, so each side makes one call on a
set just warmed by the other and one on a set no call just used, in every block. Each side
keeps its own Rotation (run/worker/rotation.py: its input sets, poisoned outputs and re-check
copies), so every defence of a `run` holds for both. `order` logs (block, side) for each
call; timing/paired.blocks_of lines the timer's samples up with it.
"""

from __future__ import annotations

import random

from gpubench.run.worker.rotation import Rotation, another_set
from gpubench.timing.paired import BASE, NEW


class AlternatingCalls:
    def __init__(self, base: Rotation, new: Rotation,
                 rng: random.Random | None = None):
        self.sides = (base, new)
        self.rng = rng or random.Random(random.SystemRandom().getrandbits(64))
        self.order: list[tuple[int, int]] = []  # (block index, side) of each call this round
        self.calls = [0, 0]  # calls of each side, every round
        self.block = -1
        self.pending: list[int] = []
        self.side = BASE
        self.last_set = -1  # the set of the previous block's last two calls

    def start_round(self) -> None:
        """Forget the previous round's order (its blocks were taken); a block left part
        done is finished first, as the next round's warm-up."""
        self.order = []

    def before(self) -> None:
        if not self.pending:
            self.block += 1
            sides = [BASE, NEW, NEW, BASE] if self.rng.random() < 0.5 else [NEW, BASE, BASE, NEW]
            first, second = self._two_sets()
            self.pending = list(zip(sides, (first, first, second, second), strict=True))
        self.side, chosen = self.pending.pop(0)
        self.order.append((self.block, self.side))
        self.calls[self.side] += 1
        self.sides[self.side].next_set = chosen
        self.sides[self.side].before()

    def _two_sets(self) -> tuple[int, int]:
        """A block's two input sets: its first two calls take the first, its last two the
        second. So each side makes one call on a set the other side just used (its inputs
        in cache) and one on a set no call of the pair just used, in every block, whatever
        else the rotations draw. Left to each rotation, the two draws drift apart (a call
        on a never-seen set draws none), and one side then makes every call on the set the
        other just warmed: on a CPU whose L2 holds fewer than the rotation's sets, a
        256 KB add runs in half the time there, and an A/A reads -30% (the journal). Neither
        set is the previous block's last, so no side sees one set twice in a row."""
        count = len(self.sides[BASE].sets)
        first = another_set(self.rng, count, self.last_set)
        self.last_set = another_set(self.rng, count, first)
        return first, self.last_set

    def __call__(self) -> object:
        return self.sides[self.side]()

    def after(self) -> None:
        """The side's own after(), then its returned output poisoned and dropped at once. A
        side that kept its output until its own next call (as a `run` does) would make
        every call of an allocating variant in a block of its own, the other side's in
        another: one placement per side for the whole run, a difference between identical
        sides that no interval can see (the suspect behind the A/A that read layernorm's
        torch row at 8192 x 4096 apart, a sign that changed from run to run:
        docs/measurement.md, "A/B in one process"). Dropped now, the block goes to the next
        call, of either side."""
        side = self.sides[self.side]
        side.after()
        side.release_output()

    def sampling(self) -> None:
        """Each side plans its own timed calls on never-seen inputs (rotation.py), in
        lockstep: both rotations draw from one seed and make two calls a block."""
        for side in self.sides:
            side.sampling()

    def side_samples(self, samples_s, side: int) -> list[float]:
        """One side's samples of this round, in its call order (the tail of `order` lines
        up with the timer's samples: timing/paired.blocks_of)."""
        timed = self.order[len(self.order) - len(samples_s):]
        return [s for (_, who), s in zip(timed, samples_s, strict=True) if who == side]

    def keep_outputs(self, capturing: bool) -> None:
        for side in self.sides:
            side.keep_outputs(capturing)

    def capture_fresh(self, on: bool) -> int:
        """None: a pair is timed one sample per call (pair.py), never as a graph."""
        return 0
