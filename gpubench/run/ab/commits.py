"""A family folder's commits, as `bisect` walks them and `history --backfill` runs them:
the commits that changed the folder between two revisions, oldest first. git errors (a
bad revision) are UsageErrors naming the folder, in git's own last line."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from gpubench import errors
from gpubench.timing.git_reader import run_git

# Every call reads the log of one folder; half a minute only bounds a hung network mount.
GIT_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class Commit:
    sha: str
    subject: str
    date: str  # author date, ISO 8601



def commit_of(folder: Path, revision: str) -> Commit:
    done = _git(folder, "log", "-1", "--format=%H%x00%s%x00%aI", "--end-of-options",
                revision)
    sha, subject, date = done.split("\x00")
    return Commit(sha, subject, date.strip())


def changes_between(folder: Path, good: str, bad: str) -> list[Commit]:
    """The commits that changed `folder` after GOOD up to BAD, oldest first."""
    listing = _git(folder, "log", "--reverse", "--ancestry-path",
                   "--format=%H%x00%s%x00%aI", f"{good}..{bad}", "--", ".")
    return [Commit(*line.split("\x00")) for line in listing.splitlines() if line]


def _git(folder: Path, *args: str) -> str:
    try:
        done = run_git(folder, *args, timeout=GIT_TIMEOUT_S)
    except OSError as exc:
        raise errors.UsageError(f"git is needed to read {folder}'s history: {exc}") from None
    if done.returncode != 0:
        why = done.stderr.strip().splitlines()
        raise errors.UsageError(f"git {args[0]} failed in {folder}: "
                                f"{why[-1] if why else done.returncode}")
    return done.stdout.strip()
