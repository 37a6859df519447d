"""`run --watch`'s paired verdict: an iteration's changed points timed again in pairs against
the newest iteration that passed, both versions in one worker (`gpubench ab`'s method,
commands/ab.py), so that a 1% change is told from the ~1% a fresh process moves a short
kernel by (docs/measurement.md, "A/B in one process").

Each iteration keeps a copy of its families' sources (<session>/sources/iter-NNN/); the
copy of the newest iteration whose points of a family all passed is that family's BASE.
Only the BASEs stay on disk (prune_sources, after each iteration's pairing), and a file
unchanged since the BASE is a hard link to it.
Where it cannot pair, the line `compare` gives stands alone: a leaderboard problem (its
folder is made by gpubench), a timing mode whose samples are not one call each (graph,
cupti), a family with no passing iteration yet, a point that did not pass now.
"""

from __future__ import annotations

import contextlib
import shutil
from pathlib import Path

from rich.console import Console

from gpubench import errors
from gpubench.analysis.ab import AB_THRESHOLD
from gpubench.families.leaderboard import problem_sources
from gpubench.families.versions import changed_variants, copy_sources
from gpubench.records.run import RunDocument
from gpubench.report.ab_view import paired_line
from gpubench.run.ab.measure import measure_pairs
from gpubench.run.ab.pair import paired_timing
from gpubench.run.ab.rows import pair_verdicts
from gpubench.run.lanes.lane import default_lane


def keep_sources(dirs: dict[str, Path], target: Path,
                 bases: dict[str, tuple[int, Path]] | None = None) -> dict[str, Path]:
    """A copy of each family folder's sources at target/<family> (none for a problem, nor
    where the copy fails: that family is not paired, the iteration goes on); a file the
    family's BASE copy has unchanged is a hard link to it."""
    copies = {}
    for name, folder in dirs.items():
        if problem_sources(Path(folder)) is not None:
            continue
        like = (bases or {}).get(name)
        try:
            copies[name] = copy_sources(Path(folder), target / name,
                                        like[1] if like else None)
        except OSError:
            continue
    return copies


def prune_sources(root: Path, bases: dict[str, tuple[int, Path]]) -> None:
    """Remove the copies under root (<session>/sources/iter-NNN/<family>) that are no
    family's BASE: once an iteration is paired, only the newest passing copy is used."""
    kept = {Path(copy) for _, copy in bases.values()}
    if not root.is_dir():
        return
    for iteration in root.iterdir():
        if not iteration.is_dir():
            continue
        for copy in iteration.iterdir():
            if copy not in kept:
                shutil.rmtree(copy, ignore_errors=True)
        with contextlib.suppress(OSError):
            iteration.rmdir()  # empty now: no copy of it is anyone's BASE


def passed_sources(document: RunDocument, copies: dict[str, Path],
                   iteration: int) -> dict[str, tuple[int, Path]]:
    """The copies whose family's points all passed in `document`: the next BASEs."""
    rows: dict[str, list] = {}
    for result in document.results:
        rows.setdefault(result.family, []).append(result)
    return {name: (iteration, copy) for name, copy in copies.items()
            if rows.get(name) and all(r.passed for r in rows[name])}


def pair_with_previous(request, machine, points: list, document: RunDocument,
                       bases: dict[str, tuple[int, Path] | None], log_dir: Path,
                       console: Console) -> list[str]:
    """One line per paired point (and mode): its verdict against the BASE iteration."""
    passed = {(r.family, r.variant, r.dtype, r.shape.text()) for r in document.results
              if r.passed}
    lines: list[str] = []
    for name, base in bases.items():
        chosen = [p for p in points if p.family.name == name and
                  (name, p.variant.name, p.dtype, p.shape.text()) in passed]
        if base is None or not chosen:
            continue
        try:
            timing = paired_timing(request.config.timing, machine.device, AB_THRESHOLD,
                                   len(chosen))
        except errors.UsageError as why:
            return [f"not paired with an earlier iteration: {why}"]
        lines += _pair_family(machine, chosen, base, timing, log_dir, console)
    return lines


def _pair_family(machine, points: list, base: tuple[int, Path], timing, log_dir: Path,
                 console: Console) -> list[str]:
    iteration, folder = base
    family = points[0].family
    lane = default_lane(machine.device, log_dir, "pair-worker")
    outcomes: list = [None] * len(points)
    try:
        measure_pairs(lane, points, folder, timing, outcomes, console)
    except KeyboardInterrupt:
        lane.kill()
        raise
    lane.stop()
    changed = changed_variants(family.name, folder, Path(family.directory), family, machine)
    controls = set() if changed is None else {p.variant.name for p in points} - set(changed)
    _, verdicts = pair_verdicts(points, outcomes, timing, lane.env, controls, AB_THRESHOLD)
    return [paired_line(v, iteration) for v in verdicts]
