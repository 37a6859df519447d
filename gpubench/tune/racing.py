"""The racing schedule, the ties and the choice: which configs `gpubench tune` keeps timing,
which it stops early, which are tied with the fastest, and which one it picks.

Successive halving (Jamieson & Talwalkar 2016) with statistics in place of a bare ranking.
Round r times every config still racing for BUDGET x 2^r; its samples join the config's
earlier ones (same worker process, same inputs: the rounds are comparable). After a round:

1. the leader is the config with the lowest median;
2. a config whose ratio to the leader (analysis/comparison.compare_samples: bootstrap CI
   of the ratio of medians, widened by the samples' own noise) is SLOWER — its whole CI
   beyond the bar — stops: it is clearly behind;
3. of the rest, the faster half by median goes on, and so does every config still tied
   with the leader (below): halving alone could drop a config the data cannot tell apart;
4. the race ends when one config is left, when every one left is SAME as the leader,
   or after MAX_ROUNDS rounds.

Tied with the best: the verdict against the leader is SAME, or its ratio CI holds 1
(the CIs overlap). The choice among the tied is deterministic: the fewest registers per
thread (more occupancy headroom, and the cheaper kernel to run beside others), then the
first declared. A config that failed its check is never timed and never chosen.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from gpubench.analysis.comparison import (
    DEFAULT_THRESHOLD,
    MIN_SAMPLES,
    SAME,
    SLOWER,
    Comparison,
    compare_samples,
)
from gpubench.timing.stats import quantile
from gpubench.tune.space import TuneConfig

# Rounds of halving: 16 configs -> 8 -> 4 -> 2 take four; a fifth would only re-time ties.
MAX_ROUNDS = 4
# Round 0's timing per config, seconds: 20 ms holds ~100 samples of a 100 us matmul (and
# thousands of a 5 us kernel): enough for the ratio CI to call a 10% gap at once.
FIRST_BUDGET_S = 0.02

RACING, DROPPED, FAILED = "racing", "dropped", "failed"
TIE_RULE = ("among the configs tied with the fastest (verdict SAME, or a ratio CI that "
            "holds 1), the fewest registers per thread, then the first declared")


@dataclass
class Contender:
    """A config's state in the race: its samples so far and how it left, if it did."""

    config: TuneConfig
    state: str = RACING
    samples: list[float] = field(default_factory=list)
    rounds: int = 0  # rounds it was timed in
    reason: str = ""  # why it stopped, or why it failed
    status: str = ""  # the worker's status when it failed (FAIL, ERROR, BUILD ERROR, ...)

    @property
    def median(self) -> float:
        return quantile(sorted(self.samples), 0.5) if self.samples else math.inf

    @property
    def timed(self) -> bool:
        return len(self.samples) >= MIN_SAMPLES


def tied(comparison: Comparison) -> bool:
    """SAME, or a CI of the ratio that holds 1: the data cannot order the two."""
    if comparison.verdict == SAME:
        return True
    return comparison.ci_low <= 1.0 <= comparison.ci_high


@dataclass
class Race:
    """The schedule, fed with each round's samples; pure (the command drives the worker)."""

    configs: Sequence[TuneConfig]
    threshold: float = DEFAULT_THRESHOLD
    max_rounds: int = MAX_ROUNDS
    exhaustive: bool = False  # every checked config timed once, for the whole budget
    round: int = 0
    contenders: dict[int, Contender] = field(default_factory=dict)
    compared: dict[tuple, Comparison] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self.contenders = {c.index: Contender(c) for c in self.configs}

    def fail(self, index: int, status: str, reason: str) -> None:
        """The config failed its check (or could not run): out, never timed or chosen."""
        entry = self.contenders[index]
        entry.state, entry.status, entry.reason = FAILED, status, reason

    def add(self, index: int, samples: Iterable[float]) -> None:
        entry = self.contenders[index]
        entry.samples.extend(samples)
        entry.rounds += 1

    def racing(self) -> list[int]:
        """The configs to time in the current round, in declaration order."""
        return [i for i, c in self.contenders.items() if c.state == RACING]

    def budget_s(self, first_s: float = FIRST_BUDGET_S) -> float:
        return first_s * 2 ** self.round

    @property
    def done(self) -> bool:
        left = self.racing()
        return not left or (self.round > 0 and (self.exhaustive or len(left) == 1
                                                or self.round >= self.max_rounds
                                                or self._all_same(left)))

    def end_round(self) -> list[int]:
        """Apply the rules above to the round just timed; the configs stopped now."""
        self.round += 1
        left = [i for i in self.racing() if self.contenders[i].timed]
        for i in self.racing():
            if not self.contenders[i].timed:  # no samples at all: nothing to race with
                self._stop(i, "no samples")
        if self.exhaustive or len(left) < 2:
            return [i for i in self.racing() if i not in left]
        leader = min(left, key=lambda i: (self.contenders[i].median, i))
        versus = {i: self.versus(leader, i) for i in left if i != leader}
        stopped = [i for i, c in versus.items() if c.verdict == SLOWER]
        for i in stopped:
            self._stop(i, f"clearly behind the leader after round {self.round} "
                          f"(x{versus[i].ratio:.3f}, CI {versus[i].ci_low:.3f}-"
                          f"{versus[i].ci_high:.3f})")
        rest = sorted((i for i in left if i not in stopped),
                      key=lambda i: (self.contenders[i].median, i))
        keep = set(rest[:math.ceil(len(rest) / 2)]) | {i for i in rest if i != leader
                                                       and tied(versus[i])}
        for i in rest:
            if i not in keep:
                self._stop(i, f"slower half after round {self.round} "
                              f"(x{versus[i].ratio:.3f})")
                stopped.append(i)
        return stopped

    def versus(self, leader: int, other: int) -> Comparison:
        """OTHER against LEADER (compare_samples), remembered until either gets samples."""
        first, second = self.contenders[leader], self.contenders[other]
        key = (leader, other, len(first.samples), len(second.samples))
        if key not in self.compared:
            self.compared[key] = compare_samples(first.samples, second.samples,
                                                 self.threshold)
        return self.compared[key]

    def _stop(self, index: int, reason: str) -> None:
        entry = self.contenders[index]
        entry.state, entry.reason = DROPPED, reason

    def _all_same(self, left: list[int]) -> bool:
        timed = [i for i in left if self.contenders[i].timed]
        if len(timed) < 2:
            return False
        leader = min(timed, key=lambda i: (self.contenders[i].median, i))
        return all(self.versus(leader, i).verdict == SAME for i in timed if i != leader)


@dataclass(frozen=True)
class Choice:
    """The race's outcome: the fastest, the tied, the pick and why (None: no pick)."""

    fastest: int | None
    tied: tuple[int, ...]
    best: int | None
    why: str
    versus: Mapping[int, Comparison] = field(default_factory=dict)  # each timed one vs fastest


def choose(race: Race, registers: Mapping[int, int | None]) -> Choice:
    """The pick: TIE_RULE over the configs tied with the fastest; none when none was timed."""
    timed = [i for i, c in race.contenders.items() if c.state != FAILED and c.timed]
    if not timed:
        failed = sum(c.state == FAILED for c in race.contenders.values())
        why = (f"no config passed its check ({failed} failed)" if failed == len(race.contenders)
               else "no config was timed")
        return Choice(None, (), None, why)
    fastest = min(timed, key=lambda i: (race.contenders[i].median, i))
    versus = {i: race.versus(fastest, i) for i in timed if i != fastest}
    ties = (fastest, *sorted(i for i, c in versus.items() if tied(c)))
    best = tie_break(ties, registers)
    why = "the fastest" if len(ties) == 1 else f"{len(ties)} tied; {TIE_RULE}"
    return Choice(fastest, tuple(sorted(ties)), best, why, versus)


def tie_break(ties: Iterable[int], registers: Mapping[int, int | None]) -> int:
    """Fewest registers (unknown counts last), then the first declared."""
    def key(index: int):
        count = registers.get(index)
        return (count if count is not None else math.inf, index)

    return min(ties, key=key)
