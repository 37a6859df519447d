"""Which code a run measured: the git revision of each family's folder and of gpubench.

A series of runs (`gpubench history`) is only useful if a change point can be put between
two commits. The repository's HEAD says which commit the tree was at; the folder's last
commit says which commit last changed the family (a nightly run at an unrelated commit
measured the same kernels); `dirty` says the folder held uncommitted edits (the run
measured code no commit holds). Git is asked with a timeout, through git_reader (nothing
of the folder's git config runs); a folder outside any repository, or no git at all, is a
Revision of Nones, never an error, and a repository refused (a `.git` file pointing
elsewhere) is one too, with the reason in `unknown`.

Which folder a family came from is recorded too (`folder`, and in git `repository` and
`path`): two folders may hold families of one name (two repositories' `kernels/square`),
and their runs are two histories, not one (records/series.py's folder identity).
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from gpubench.codec import Record
from gpubench.timing.git_reader import repository_of, run_git

# The folder of gpubench's own code: its revision is recorded beside the families'.
GPUBENCH_DIR = Path(__file__).resolve().parent.parent
# Each git call reads the index and a few objects: ~5 ms; 5 s only bounds a hung NFS mount.
GIT_TIMEOUT_S = 5.0
# A remote URL's scheme and user part ('https://user:token@', 'ssh://git@', 'git@'): not
# recorded, so a token in a URL never reaches results.json, and an https and an ssh clone
# of one repository read as one repository.
_URL_HEAD = re.compile(r"^(?:[a-z][a-z0-9+.-]*://)?(?:[^@/]*@)?", re.IGNORECASE)


@dataclass(frozen=True)
class Revision(Record):
    """A folder's place in its repository's history."""

    commit: str | None = None  # HEAD of the repository holding the folder
    dirty: bool = False  # uncommitted edits (tracked or new files) under the folder
    changed: str | None = None  # the last commit that changed something under the folder
    committed: float | None = None  # HEAD's commit time, Unix seconds
    subject: str | None = None  # HEAD's first line
    unknown: str | None = None  # why a repository found was not asked (git_reader)
    folder: str | None = None  # the folder, resolved
    repository: str | None = None  # origin's URL ('github.com/org/repo'), else its top folder
    path: str | None = None  # the folder inside its repository ('kernels/square', '.')


def revision_of(folder: Path | str) -> Revision:
    """The folder's Revision (only `folder` known outside a repository)."""
    folder = str(Path(folder).resolve())
    repository = repository_of(folder, GIT_TIMEOUT_S)
    if repository.top is None:
        return Revision(unknown=repository.refused, folder=folder)
    place = {"folder": folder, "repository": _remote(folder) or str(repository.top),
             "path": Path(folder).relative_to(repository.top).as_posix()}
    head = _git(folder, "log", "-1", "--format=%H%x00%ct%x00%s")
    if head is None or "\0" not in head:
        return Revision(**place)
    commit, committed, subject = ([*head.split("\x00"), "", ""])[:3]
    status = _git(folder, "status", "--porcelain", "--untracked-files=normal", "--", ".")
    changed = _git(folder, "log", "-1", "--format=%H", "--", ".")
    return Revision(commit=commit, dirty=bool(status), changed=changed or None,
                    committed=float(committed) if committed.isdigit() else None,
                    subject=subject or None, **place)


def revision_at(folder: Path | str, commit: str) -> Revision:
    """The folder's Revision as it was at `commit` (`history --backfill`: a run of an export
    of that commit records the folder's place and that commit, clean, as a nightly run of
    it would have)."""
    now = revision_of(folder)
    head = _git(now.folder or str(folder), "log", "-1", "--format=%H%x00%ct%x00%s",
                "--end-of-options", commit)
    if head is None or "\0" not in head:
        return Revision(unknown=f"no commit {commit!r}", folder=now.folder)
    sha, committed, subject = ([*head.split("\x00"), "", ""])[:3]
    changed = _git(now.folder or str(folder), "log", "-1", "--format=%H", "--end-of-options",
                   sha, "--", ".")
    return Revision(commit=sha, dirty=False, changed=changed or None,
                    committed=float(committed) if committed.isdigit() else None,
                    subject=subject or None, folder=now.folder, repository=now.repository,
                    path=now.path)


def _remote(folder: str) -> str | None:
    """origin's URL as a name: the repository wherever it is cloned (reading config runs
    nothing of it)."""
    url = _git(folder, "config", "--get", "remote.origin.url")
    return remote_name(url) if url else None


def remote_name(url: str) -> str | None:
    """'github.com/org/repo' of 'https://user:token@github.com/org/repo.git' and of
    'git@github.com:org/repo.git': no scheme, user or token, no '.git'."""
    text = url.strip()
    scp_like = "://" not in text and ":" in text and not text.startswith("/")
    text = _URL_HEAD.sub("", text)
    if scp_like:  # host:org/repo
        text = text.replace(":", "/", 1)
    return text.rstrip("/").removesuffix(".git") or None


def revisions(gpubench_dir: Path | str, family_dirs: dict[str, Path | str]) -> dict:
    """{'gpubench': Revision, 'families': {name: Revision}} as JSON-ready data, for a run's
    meta: each folder asked once, however many families it holds."""
    seen: dict[str, Revision] = {}

    def of(path) -> dict:
        key = str(Path(path).resolve())
        if key not in seen:
            seen[key] = revision_of(key)
        return seen[key].to_dict()

    return {"gpubench": of(gpubench_dir),
            "families": {name: of(path) for name, path in family_dirs.items()}}


def _git(folder: str, *args: str) -> str | None:
    try:
        done = run_git(folder, *args, timeout=GIT_TIMEOUT_S)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None
