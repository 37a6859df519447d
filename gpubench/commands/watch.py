"""`gpubench run FAMILY --watch`: the edit-measure loop.

The first iteration is a normal run of the chosen points. Then every save of a file the
family uses (families/watched.py) runs the variants it affects again, through the very
pieces `run` uses (RunCommand.plan, prepare, measure), and says one line per point
against the last iteration in which the point passed and against the first, with
`gpubench compare`'s verdicts (analysis/watch_history.py, report/watch_view.py), and
then, where it can, the changed points timed in pairs against the last iteration that
passed, both versions in one worker (commands/pairing.py: `gpubench ab`'s method). A
build error or a failing check is one of those lines, and the loop keeps watching; a
spec that no longer loads is said, and the next save tries again.

Every iteration is a run record of its own, <session>/iter-NNN/ (results.json, worker
logs), and <session>/latest names the newest: `gpubench compare` and `gpubench report`
read them. Ctrl-C (or SIGTERM) ends the session; the exit code is that of the points'
newest results, as `run`'s would be (docs/guide.md): 0 when every point passed.

Files are watched with watchfiles (inotify on Linux, debounced, the watcher of uvicorn):
changes made while an iteration runs are kept and start the next one.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from rich.markup import escape

from gpubench import errors, safe_text
from gpubench.analysis.watch_history import WatchHistory
from gpubench.commands.command import Command
from gpubench.commands.pairing import (
    keep_sources,
    pair_with_previous,
    passed_sources,
    prune_sources,
)
from gpubench.commands.run import PROFILES, RunCommand, RunRequest, new_seed
from gpubench.families.watched import (
    Affected,
    affected,
    changed_between,
    is_watched,
    snapshot,
    watch_roots,
)
from gpubench.records import result as R
from gpubench.records.run import RunDocument
from gpubench.report.files import new_run_dir
from gpubench.report.watch_view import iteration_lines
from gpubench.run.machine import detect_machine
from gpubench.store.folder import RunFolder

# After a save, the quiet time before an iteration starts: an editor's save (write or
# rename, then chmod) takes a few ms, and "save all" of several files well under 100 ms,
# so one iteration sees them all; 0.1 s is nothing beside a run of seconds.
QUIET_MS = 100
# Saves that never pause (a formatter on every file, a checkout) start an iteration
# after at most this long anyway (watchfiles' default).
LONGEST_WAIT_MS = 1600
# The watcher wakes up this often without a change: the first wake-up says it runs (the
# loop then says "watching"); the others cost a few microseconds each.
WAKE_MS = 500
# What --watch does not combine with, and why not: each wants one finished run.
NOT_WITH_WATCH = {"as_json": "--json", "markdown": "--markdown", "trace": "--trace",
                  "report": "--report", "baseline": "--baseline", "cluster": "--cluster",
                  "ncu": "--ncu", "ncu_check": "--ncu-check", "sanitize": "--sanitize"}


@dataclass
class WatchSession:
    """What the loop keeps between iterations."""

    folder: Path  # profiles/<time>-<families>-watch, or --out
    dirs: dict[str, Path]  # family name -> its folder
    seed: int  # one for the session: every iteration times the same inputs
    families: dict = field(default_factory=dict)  # name -> Family as last loaded, or None
    history: WatchHistory = field(default_factory=WatchHistory)
    problem: errors.GpubenchError | None = None  # the last save's spec did not load
    # family name -> (iteration, a copy of its sources then) of the newest iteration whose
    # points of that family all passed: what the next one is paired against (pairing.py)
    sources: dict[str, tuple[int, Path]] = field(default_factory=dict)

    def iteration_dir(self) -> Path:
        return self.folder / f"iter-{len(self.history.runs) + 1:03d}"


class WatchCommand(Command[RunRequest]):
    def execute(self) -> int:
        for name, flag in NOT_WITH_WATCH.items():
            if getattr(self.request, name):
                raise errors.UsageError(f"--watch runs again on every save: not with {flag}")
        run = RunCommand(self.request, self.console)
        run.places.check_parallel_options()
        machine = detect_machine(self.request.device)
        dirs = run.family_folders()
        seed = self.request.config.seed if self.request.config.seed is not None else new_seed()
        folder = self.request.out or new_run_dir(PROFILES, [*dirs, "watch"])
        # A spec imported again after an edit must never come from a stale .pyc: one
        # written in the same second as a same-size edit passes Python's mtime check.
        sys.dont_write_bytecode = True
        os.environ["PYTHONDONTWRITEBYTECODE"] = "1"  # the workers too
        claim = RunFolder(folder).claim()  # the session's folder, locked for its lifetime
        try:
            session = WatchSession(folder, dirs, seed)
            with run.compiled_settings(machine):
                return self._session(run, machine, session)
        finally:
            claim.release()

    def _session(self, run: RunCommand, machine, session: WatchSession) -> int:
        """The first iteration, then one per save until Ctrl-C; the exit code."""
        try:
            before = snapshot(watch_roots(session.dirs.values()))
            self._first(run, machine, session)
            self._watch(run, machine, session, before)
        except KeyboardInterrupt as stop:
            return self._end(session, stop)
        return self._end(session, None)

    def _first(self, run: RunCommand, machine, session: WatchSession) -> None:
        """A normal run of the chosen points, tables and all; a spec that does not load
        is said, and the loop waits for the save that fixes it."""
        try:
            points = run.plan(session.dirs, machine, session.seed)
        except errors.GpubenchError as exc:
            if not isinstance(exc, errors.SpecError):
                raise  # a usage error (an unknown variant, a bad shape): nothing to watch
            self._say_problem(session, exc)
            session.families = dict.fromkeys(session.dirs)
            return
        session.families = {name: None for name in session.dirs}
        session.families.update({p.family.name: p.family for p in points})
        self.console.print(run.headline(points, session.dirs, machine, None), markup=False)
        document, paths = self._iterate(run, machine, session, points, session.dirs, True)
        run.epilogue(list(document.results), paths, float(document.meta.get("wall_s", 0)))
        session.history.add(document)
        prune_sources(session.folder / "sources", session.sources)

    def _watch(self, run: RunCommand, machine, session: WatchSession,
               before: dict[Path, int]) -> None:
        """An iteration per save. The watcher starts with the first wait: what was saved
        before it did (during the first iteration) is found by comparing the files with
        `before`, once the watcher's first wake-up shows it is running."""
        import watchfiles

        started = False
        roots = watch_roots(session.dirs.values())
        for changes in watchfiles.watch(*roots, watch_filter=_watch_filter,
                                        step=QUIET_MS, debounce=LONGEST_WAIT_MS,
                                        rust_timeout=WAKE_MS, yield_on_timeout=True,
                                        raise_interrupt=True):
            paths = {Path(path) for _, path in changes}
            if not started:
                started = True
                paths |= changed_between(before, snapshot(watch_roots(session.dirs.values())))
                if not paths:
                    self._say_watching(session)
            if paths and self._on_save(run, machine, session, paths):
                self._say_watching(session)

    def _on_save(self, run: RunCommand, machine, session: WatchSession,
                 paths: set[Path]) -> bool:
        """One iteration for the variants `paths` affect; False when they affect none
        (nothing said)."""
        found = [a for name, folder in session.dirs.items()
                 if (a := affected(name, folder, session.families.get(name), machine, paths))]
        if not found:
            return False
        points = self._plan(run, machine, session, found)
        if not points:
            return True  # the reason was said
        names = {p.family.name: session.dirs[p.family.name] for p in points}
        stamp = time.strftime("%H:%M:%S")
        number = len(session.history.runs) + 1
        self.console.print(safe_text.terminal(
            f"[{stamp}] #{number}: {_what_changed(found)}: {_count(points)}"), markup=False,
            soft_wrap=True)
        bases = {name: session.sources.get(name) for name in names}
        document, paths_saved = self._iterate(run, machine, session, points, names, False)
        reports = session.history.add(document)
        where = str(paths_saved[1])
        for line in iteration_lines(reports, where):
            self.console.print(line, markup=False, soft_wrap=True, highlight=False)
        for line in pair_with_previous(self.request, machine, points, document, bases,
                                       paths_saved[1].parent, self.console):
            self.console.print(line, markup=False, soft_wrap=True, highlight=False)
        prune_sources(session.folder / "sources", session.sources)  # only BASEs stay
        return True

    def _plan(self, run: RunCommand, machine, session: WatchSession,
              found: list[Affected]) -> list:
        """The points to run again: a whole family planned from its spec as saved now, or
        the changed variants (with the baseline, as `run --variants` has it)."""
        points = []
        for change in found:
            folder = {change.family: session.dirs[change.family]}
            try:
                points += self._plan_one(run, machine, session, change, folder)
            except errors.GpubenchError as exc:
                self._say_problem(session, exc)
                if change.whole_family:
                    session.families[change.family] = None
                return []
        session.problem = None
        return points

    def _plan_one(self, run: RunCommand, machine, session: WatchSession, change: Affected,
                  folder: dict[str, Path]) -> list:
        chosen = self.request.config.variants
        if change.whole_family:
            points = run.plan(folder, machine, session.seed, fresh=True)
            session.families[change.family] = points[0].family if points else None
            return points
        variants = sorted(change.variants & set(chosen)) if chosen else sorted(change.variants)
        if not variants:
            self.console.print(safe_text.terminal(
                f"{', '.join(change.files)}: used by {', '.join(sorted(change.variants))}, "
                "not among --variants; nothing to run"), markup=False, soft_wrap=True)
            return []
        return run.plan(folder, machine, session.seed, variants=tuple(variants))

    def _iterate(self, run: RunCommand, machine, session: WatchSession, points: list,
                 dirs: dict[str, Path], first: bool) -> tuple[RunDocument, list[Path]]:
        """One run of `points` into the session's next iteration folder; its final
        document and where it was saved. On Ctrl-C the folder keeps what was measured
        (marked incomplete) and the interrupt goes on."""
        number = len(session.history.runs) + 1
        folder = RunFolder(session.iteration_dir(), self.request.force, session.folder).claim()
        copies = keep_sources(dirs, session.folder / "sources" / folder.path.name,
                              session.sources)
        try:
            lanes = run.places.lanes_for(machine, folder.path, None)
            runner, saver = run.prepare(folder, machine, dirs, points, session.seed, None, lanes)
            try:
                run.measure(runner, saver, points, tables=first,
                            progress=first or self.console.is_terminal)
            except KeyboardInterrupt:
                session.history.runs.append(saver.document(final=True))
                saver.save(final=True)
                raise
            document = saver.document(final=True)
            paths = folder.save(document)
            run.say_folder_problem(folder)
            session.sources.update(passed_sources(document, copies, number))
            return document, paths
        finally:
            folder.release()

    # ------------------------------------------------------------ what is said

    def _say_problem(self, session: WatchSession, exc: errors.GpubenchError) -> None:
        session.problem = exc
        self.console.print(f"[bold red]error:[/] {escape(safe_text.terminal(exc))}",
                           soft_wrap=True)

    def _say_watching(self, session: WatchSession) -> None:
        folders = ", ".join(safe_text.one_line(str(f))
                            for f in watch_roots(session.dirs.values()))
        self.console.print(f"watching {folders} for saves (Ctrl-C ends; records in "
                           f"{safe_text.one_line(str(session.folder))})", markup=False,
                           soft_wrap=True, style="dim")

    def _end(self, session: WatchSession, stop: KeyboardInterrupt | None) -> int:
        """Where the records are, and the exit code: an iteration cut short by the
        signal exits as `run` does then (130, 143); else the points' newest results
        decide (0 all passed, 1 one failed, 15 one SUSPECT), or the spec that last
        failed to load (4)."""
        runs = session.history.runs
        prune_sources(session.folder / "sources", session.sources)  # an iteration cut short
        if runs:
            first, last = session.folder / "iter-001", session.folder / f"iter-{len(runs):03d}"
            hint = (f"; compare: gpubench compare {first} {last}" if len(runs) > 1 else "")
            self.console.print(safe_text.terminal(
                f"watch ended: {len(runs)} iteration(s) saved in {session.folder}{hint}"),
                markup=False, soft_wrap=True)
        if stop is not None and runs and runs[-1].incomplete:
            return errors.interruption_code(stop)
        if session.problem is not None:
            return session.problem.exit_code
        return R.exit_code(session.history.latest())


def _watch_filter(change, path: str) -> bool:
    return is_watched(path)


def _what_changed(found: list[Affected]) -> str:
    """'square_triton.py -> triton' or 'spec.py -> all of square'."""
    parts = []
    for change in found:
        files = ", ".join(change.files)
        which = (f"all of {change.family}" if change.whole_family
                 else ", ".join(sorted(change.variants)))
        parts.append(f"{files} -> {which}")
    return "; ".join(parts)


def _count(points: list) -> str:
    return f"{len(points)} point{'s' if len(points) != 1 else ''}"


execute = WatchCommand.entry  # the module's one entry (command.py): cli/app.py calls it
