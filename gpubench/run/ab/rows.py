"""An A/B run's rows and verdicts in the parent: each side's rows made and judged as `run`
makes and judges its own, then the pairs' verdicts (analysis/ab.py).

A side is trusted only where `run` would trust it. Its rows come from the worker's result
as a `run`'s do (runner.results_from_worker: the status a failed re-check or a missing
timing gives, the kernel count, the error's site), and are derived per (dtype, shape)
group by verdicts/derive.finish_group with the ceilings the worker measured: beyond the
roofline, faster than any launch, skipping work on inputs it has seen, work outside the
timed window, a behaviour seen in one mode doubting the variant in every mode. Such a row is
SUSPECT, and so is its pair, the side and the rule named: a time `run` would not show as a
speedup is not a FASTER here either. BASE's rows are 'NAME@base' (records/ab.py), so a
side's doubts stay its own.
"""

from __future__ import annotations

from dataclasses import replace

from gpubench.analysis.aa import point_label
from gpubench.analysis.ab import FAILED, NOT_RUN, SUSPECT, PairEntry, judge_pairs
from gpubench.analysis.config_change import config_change, shared_pick
from gpubench.records import result as R
from gpubench.records.ab import base_name
from gpubench.run.lanes.lane import Outcome
from gpubench.run.plan import Point
from gpubench.run.runner import results_from_worker
from gpubench.timing.hostload import busy_factor, busy_reason
from gpubench.timing.settings import TimingSettings
from gpubench.timing.timers import modes_for_device
from gpubench.verdicts.derive import finish_group


def pair_verdicts(points: list[Point], outcomes: list, timing: TimingSettings, env: dict,
                  controls: set[str], threshold: float,
                  thresholds: dict[str, float] | None = None) -> tuple[list, list]:
    """(both sides' rows, derived as `run` derives them; the PairVerdicts). `env`: the
    worker's facts, its measured ceilings among them; `thresholds`: a point's own, by its
    label 'VARIANT SHAPE DTYPE MODE' (ab --threshold-from-aa)."""
    modes = modes_for_device(timing.modes, "cuda" if env.get("gpu") else "cpu")
    rows = side_rows(points, outcomes, modes, env)
    entries = [replace(e, threshold=(thresholds or {}).get(
                   point_label(e.variant, e.shape, e.dtype, e.mode)))
               for e in _entries(points, outcomes, modes, rows, controls)]
    return rows, with_config_moves(judge_pairs(entries, threshold, timing.decisions), rows)


def with_config_moves(verdicts: list, rows: list) -> list:
    """Each verdict whose sides' autotuners kept two configs says so in its reason: for a
    changed kernel each side ran its own (the change is the pick's as much as the code's);
    for one kernel both ran one (run/ab/shared_pick.py)."""
    by_key = {(r.key.variant, r.key.dtype, r.key.shape.text(), r.key.mode): r for r in rows}
    out = []
    for v in verdicts:
        new = by_key.get((v.variant, v.dtype, v.shape, v.mode))
        base = by_key.get((base_name(v.variant), v.dtype, v.shape, v.mode))
        said = "" if new is None or base is None else \
            config_change(base, new) or shared_pick(new)
        out.append(replace(v, reason="; ".join(r for r in (v.reason, said) if r))
                   if said else v)
    return out


def side_rows(points: list[Point], outcomes: list, modes: tuple[str, ...],
              env: dict) -> list:
    """Both sides' rows per point and mode, finished per (dtype, shape) group as `run`
    finishes its groups (every mode of a variant in one group: a doubt found in one
    mode reaches the others)."""
    groups: dict[tuple, list] = {}
    for point, outcome in zip(points, outcomes, strict=True):
        groups.setdefault((point.dtype, point.shape.text()), []).extend(
            _point_rows(point, outcome, modes, env))
    ceilings = env.get("ceilings")
    return [row for group in groups.values() for row in finish_group(group, ceilings)]


def _point_rows(point: Point, outcome: Outcome | None, modes: tuple[str, ...],
                env: dict) -> list:
    """NEW's rows, then BASE's, of one point."""
    if outcome is None or outcome.result is None:
        status, error = (R.NOT_RUN, "not run: ab was interrupted") if outcome is None else \
            (outcome.failure or R.ERROR, outcome.error)
        where = {"device_id": env.get("device_id", ""),
                 "device_name": env.get("gpu") or env.get("cpu") or ""}
        rows = [replace(point.result(mode, status, error=error), **where) for mode in modes]
        return rows + [_as_base(row) for row in rows]
    new = outcome.result
    device = outcome.device or env
    return results_from_worker(point, new, modes, device) + \
        [_as_base(row) for row in results_from_worker(point, new.base or new, modes, device)]


def _as_base(row):
    return replace(row, key=replace(row.key, variant=base_name(row.key.variant)),
                   baseline=False)


def _entries(points: list[Point], outcomes: list, modes: tuple[str, ...], rows: list,
             controls: set[str]) -> list[PairEntry]:
    """Each point and mode as the verdicts need it: the pairs, or why a side has no
    trusted time (its derived row is failed or SUSPECT)."""
    by_key = {r.key.text(): r for r in rows}
    entries = []
    for point, outcome in zip(points, outcomes, strict=True):
        result = outcome.result if outcome is not None else None
        for mode in modes:
            key = point.key(mode)
            sides = (("new", by_key[key.text()]),
                     ("base", by_key[replace(key, variant=base_name(key.variant)).text()]))
            status, why = untrusted(sides)
            paired = result.paired.get(mode) if result is not None else None
            why = why or (result.untimed if result is not None and result.untimed else "")
            busy = _busy_host(sides)
            entries.append(PairEntry(key.variant, key.dtype, key.shape.text(), mode,
                                     key.variant in controls, paired, status, why, *busy))
    return entries


def _busy_host(sides) -> tuple[float, str]:
    """(how many times slower the host's other work can have made a side's calls, why):
    (1.0, "") on a quiet host or a GPU (timing/hostload.py, as `compare` reads it)."""
    loads = [row.host_load for _, row in sides]
    reasons = [why for load in loads if (why := busy_reason(load))]
    return max((busy_factor(load) for load in loads), default=1.0), "; ".join(reasons)


def untrusted(sides) -> tuple[str, str]:
    """(FAILED or SUSPECT, why) when a side's derived row is not a PASS, the side named
    with its status and `run`'s reason (a SUSPECT row's reason is the rule it broke:
    verdicts/physics.py, verdicts/behaviour.py); ("", "") when both pass. A failed side
    is named before a SUSPECT one (a wrong answer outranks an untrusted time); both sides
    where both are. (NOT_RUN, why) where neither side ran: ab was stopped before the
    point, which is no fault of either version (FAILED would read as a broken kernel)."""
    if all(row.status == R.NOT_RUN for _, row in sides):
        return NOT_RUN, (sides[0][1].error or "").removeprefix("not run: ")
    for verdict, bad in ((FAILED, lambda r: not r.correct), (SUSPECT, lambda r: not r.passed)):
        said: dict[str, list[str]] = {}  # a worker that failed the task fails both alike
        for side, row in sides:
            if bad(row):
                text = f"{R.status_label(row.status)}: {row.error or ''}".rstrip(": ")
                said.setdefault(text, []).append(side)
        if said:
            return verdict, "; ".join(f"{' and '.join(who)} {text}"
                                      for text, who in said.items())
    return "", ""
