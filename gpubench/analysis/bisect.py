"""`gpubench bisect`'s search: the first commit of a range that made a family slower.

The commits are those that changed the family's folder between GOOD (fast) and BAD (slow),
oldest first; BAD, the last, is known slower (the shell checks it first). Each probe pairs
one commit against GOOD (`ab`) and says SLOWER, not slower, or nothing usable (it did not
build, or a side FAILed or was SUSPECT). Binary search needs ceil(log2(n)) probes of n
commits; a commit without a usable probe is skipped, as `git bisect skip` does: the next
probe is its nearest untried neighbour inside the open range, and a culprit next to a
skipped commit is named with that doubt.

Pure: indices and outcomes in, the next index and the culprit out.
"""

from __future__ import annotations

from dataclasses import dataclass, field

SLOWER, NOT_SLOWER, SKIP = "slower", "not slower", "skip"


@dataclass
class Bisection:
    """The search state over `count` commits: [low, high] holds the first slower commit
    (high is known slower: the last commit, BAD, before any probe)."""

    count: int
    outcomes: dict[int, str] = field(default_factory=dict)

    @property
    def low(self) -> int:
        """The oldest commit that may still be the first slower one."""
        cleared = [i for i, said in self.outcomes.items() if said == NOT_SLOWER]
        return max(cleared, default=-1) + 1

    @property
    def high(self) -> int:
        """The oldest commit known slower (BAD, the last, until a probe says otherwise)."""
        slower = [i for i, said in self.outcomes.items() if said == SLOWER]
        return min(slower, default=self.count - 1)

    def next(self) -> int | None:
        """The commit to probe next, or None when the culprit is known (or all skipped)."""
        low, high = self.low, self.high
        open_ = [i for i in range(low, high) if i not in self.outcomes]
        if not open_:
            return None
        middle = (low + high) // 2
        return min(open_, key=lambda i: (abs(i - middle), i))

    def record(self, index: int, outcome: str) -> None:
        if outcome not in (SLOWER, NOT_SLOWER, SKIP):
            raise ValueError(f"unknown probe outcome {outcome!r}")
        self.outcomes[index] = outcome

    def culprit(self) -> int | None:
        """The first slower commit once the search is over; None while it runs."""
        return self.high if self.next() is None else None

    def skipped_before(self) -> list[int]:
        """Skipped commits between the last cleared one and the culprit: any of them may be
        the first slower one instead."""
        return [i for i in range(self.low, self.high) if self.outcomes.get(i) == SKIP]
