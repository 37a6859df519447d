"""`history FAMILY --backfill A..B`: a series from a repository's past. Each commit of
A..B (git's range: after A, up to B) that changed the family's folder is exported from git
(run/ab/export.py, as `ab --base-rev` does) and run as a nightly job would have run it,
oldest first; each run records the folder's place and that commit as its revision
(timing/revision.py: revision_at), so that its rows join the series of later nightly runs
of the same folder. The runs go under --out (or profiles/), one folder per commit.

A commit whose family fails to build or load is a run of FAILED rows, as a nightly run of
it would be; history shows it as a mark. Runs are made now: their start times are today's,
in commit order, so backfill before the first nightly run, or read the series by commit.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from rich.console import Console

from gpubench import errors, safe_text
from gpubench.commands import run
from gpubench.commands.run_request import RunRequest
from gpubench.families.discovery import family_dirs, resolve_families
from gpubench.report.files import new_run_dir
from gpubench.run.ab.commits import changes_between, commit_of
from gpubench.run.ab.export import export_revision
from gpubench.run.config import RunConfig
from gpubench.timing.revision import revision_at

PROFILES = Path("profiles")


def backfill(family: str, span: str, config: RunConfig, console: Console,
             out: Path | None = None) -> int:
    """Run every commit of `span` ('A..B') that changed `family`'s folder; the number of
    runs made. Raises UsageError for a span that is not A..B or names no commit."""
    good, dots, bad = span.partition("..")
    if not dots or not good or not bad:
        raise errors.UsageError(f"--backfill takes a range A..B of git revisions, not "
                                f"'{safe_text.one_line(span)}'")
    folder = resolve_families((family,), family_dirs(config.kernels_dirs))[family]
    start, end = commit_of(folder, good), commit_of(folder, bad)
    commits = changes_between(folder, start.sha, end.sha)
    if not commits:
        raise errors.UsageError(f"--backfill {safe_text.one_line(span)}: no commit in it "
                                f"changed {folder}")
    root = out or new_run_dir(PROFILES, [family, "backfill"])
    for n, commit in enumerate(commits, start=1):
        console.print(safe_text.terminal(f"backfill {n}/{len(commits)}: {commit.sha[:12]} "
                                         f"{commit.subject[:60]!r} ({commit.date})"),
                      markup=False, soft_wrap=True)
        try:
            export = export_revision(folder, commit.sha)
            run.execute(RunRequest(
                config=replace(config, families=(family,), kernels_dirs=(export.folder,)),
                out=root / f"{n:03d}-{commit.sha[:12]}", legend=False,
                recorded_revisions={family: revision_at(folder, commit.sha).to_dict()}),
                console)
        except errors.GpubenchError as exc:  # this commit only: the others still run
            console.print(safe_text.terminal(f"backfill {commit.sha[:12]}: not run ({exc})"),
                          markup=False, soft_wrap=True)
    return len(commits)
