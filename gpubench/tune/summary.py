"""A tune run as data: one row per config for the table, the run record's `tune` block,
and what `compare` says of two tune records (did the best config change, and is the
change real). Pure: the command times, the report shows, this module only decides.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from gpubench.analysis.comparison import SLOWER, compare_samples
from gpubench.records.run import RunDocument
from gpubench.tune.racing import DROPPED, FAILED, Choice, Race, tied
from gpubench.tune.space import split_name


@dataclass(frozen=True)
class TuneRow:
    index: int
    label: str
    status: str  # "PASS", "FAIL", "ERROR", ... (the check's), "NOT RUN"
    mark: str  # "best", "tied", "" ; "dropped" (stopped early), "failed"
    median_s: float | None
    ci_low_s: float | None
    ci_high_s: float | None
    ratio: float | None  # median / the fastest's
    samples: int
    rounds: int
    registers: int | None
    shared_bytes: int | None
    occupancy: float | None
    note: str  # why it failed or stopped


def rows(race: Race, choice: Choice, statuses: Mapping[int, str],
         facts: Mapping[int, Mapping], summaries: Mapping[int, object]) -> list[TuneRow]:
    """One row per config in declaration order. `statuses`: the check's label per config;
    `facts`: its resources; `summaries`: timing/stats Summary of its samples."""
    out = []
    fastest = race.contenders[choice.fastest].median if choice.fastest is not None else None
    for index, entry in race.contenders.items():
        summary, fact = summaries.get(index), facts.get(index) or {}
        out.append(TuneRow(
            index, entry.config.label, statuses.get(index, "NOT RUN"), _mark(index, choice,
                                                                             entry.state),
            summary.median if summary else None, summary.ci_low if summary else None,
            summary.ci_high if summary else None,
            summary.median / fastest if summary and fastest else None,
            len(entry.samples), entry.rounds, fact.get("registers"),
            fact.get("shared_bytes"), fact.get("occupancy"), entry.reason))
    return out


def _mark(index: int, choice: Choice, state: str) -> str:
    if index == choice.best:
        return "best"
    if index in choice.tied:
        return "tied"
    return {DROPPED: "dropped", FAILED: "failed"}.get(state, "")


def tune_meta(variant: str, race: Race, choice: Choice, timing_s: float, skipped: str) -> dict:
    """The run record's `tune` block: the space, the pick, the tied and how it was run."""
    labels = {c.index: c.label for c in race.configs}
    return {"variant": variant, "configs": [c.to_dict() for c in race.configs],
            "best": choice.best, "best_label": labels.get(choice.best),
            "fastest": choice.fastest, "tied": list(choice.tied),
            "tied_labels": [labels[i] for i in choice.tied], "why": choice.why,
            "exhaustive": race.exhaustive, "rounds": race.round, "timing_s": timing_s,
            "timing_skipped": skipped or None}


def samples_by_label(document: RunDocument) -> dict[str, tuple[float, ...]]:
    """Each config's samples in a tune record, by config label."""
    tune = document.meta.get("tune") or {}
    labels = {c["index"]: c["label"] for c in tune.get("configs", [])}
    out = {}
    for result in document.results:
        _, index = split_name(result.variant)
        if index in labels and result.samples_s:
            out[labels[index]] = tuple(result.samples_s)
    return out


def best_change(base: RunDocument, new: RunDocument, threshold: float) -> str | None:
    """One line on the two tune records' picks; None unless both are tune records."""
    was, now = base.meta.get("tune"), new.meta.get("tune")
    if not was or not now:
        return None
    old, chosen = was.get("best_label"), now.get("best_label")
    if old is None or chosen is None:
        return f"tune: no pick in {'BASE' if old is None else 'NEW'}: nothing to compare"
    if old == chosen:
        return f"tune: the same config was chosen in both: {chosen}"
    head = f"tune: the best config changed: {old} -> {chosen}"
    ours = samples_by_label(new)
    if old not in ours or chosen not in ours:
        return f"{head}; NEW has no timing of {old}: whether the change is real is unknown"
    verdict = compare_samples(ours[chosen], ours[old], threshold)
    if old in now.get("tied_labels", ()) or tied(verdict):
        return (f"{head}; not a real change: in NEW the two are tied (x{verdict.ratio:.3f}, "
                f"CI {verdict.ci_low:.3f}-{verdict.ci_high:.3f}); the tie-break picked")
    if verdict.verdict == SLOWER:
        also = " and was tied with it in BASE" if chosen in was.get("tied_labels", ()) else ""
        return (f"{head}; real: in NEW the old pick is x{verdict.ratio:.3f} "
                f"(CI {verdict.ci_low:.3f}-{verdict.ci_high:.3f}) of the new one{also}")
    return (f"{head}; unsure: in NEW the old pick is x{verdict.ratio:.3f} of the new one "
            f"({verdict.verdict}: {verdict.reason or 'see the table'})")
