"""`ab --base-rev REV`: BASE is the family's folder as git holds it at REV, exported into
gpubench's cache once per commit and checked against git at every reuse.

An export is a folder of plain files that anything on the machine can edit, and an edit
there is code `ab` runs as BASE with nothing to show for it (an export made identical to
HEAD read -65.7%). So a reused export is compared with the commit's tree, file by file:
each file's git object id is recomputed from its bytes (and its mode) and matched against
`git ls-tree` of the folder at that commit; a file changed, added or missing re-makes the
export, and the run says so in a line. Bytecode is not part of the tree and never
trusted: every __pycache__ folder is removed before the comparison (Python would run a
planted .pyc whose header matches its source's mtime and size).

The comparison is a few ms of hashing and one git call. A folder whose .gitattributes
rewrites files on export (export-subst, eol) never matches its tree: it is exported anew
at every run, which costs about as much.
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import stat
import subprocess
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

from gpubench import errors
from gpubench.build.cache import cache_root
from gpubench.timing.git_reader import repository_of, run_git

# Every git call reads a few objects; two minutes only bounds a hung network mount.
GIT_TIMEOUT_S = 120
# git's modes for what a folder's tree holds (a submodule, 160000, is not exported).
FILE, EXECUTABLE, SYMLINK = "100644", "100755", "120000"
# How many differing files the re-made line names.
NAMED = 3


@dataclass(frozen=True)
class Export:
    """The exported folder, the commit it holds, and what the run should be told."""

    folder: Path
    commit: str
    note: str = ""  # one line when a cached export did not match its commit and was re-made


def export_revision(folder: Path, revision: str) -> Export:
    """`folder` as it is at git `revision`, from gpubench's cache when the cached copy
    still matches the commit's tree, else exported again (git archive)."""
    folder = Path(folder).resolve()
    refused = repository_of(folder, GIT_TIMEOUT_S).refused
    if refused:  # a .git file pointing at another repository: not this folder's history
        raise errors.UsageError(f"--base-rev {revision}: {folder}: {refused}")
    top = Path(_git(folder, revision, "rev-parse", "--show-toplevel").decode().strip())
    commit = _git(folder, revision, "rev-parse", "--verify", "--end-of-options",
                  f"{revision}^{{commit}}").decode().strip()
    try:
        relative = folder.relative_to(top.resolve())
    except ValueError:
        raise errors.UsageError(f"--base-rev {revision}: {folder} is not inside the git "
                                f"repository at {top}") from None
    root = cache_root() / "ab-base" / commit
    target = root / relative
    tree = tree_entries(_git(top, revision, "ls-tree", "-r", "-z", "--full-tree", commit,
                             "--", relative.as_posix()), relative)
    if not tree:
        raise errors.UsageError(f"--base-rev {revision}: {relative} holds no file at "
                                f"{commit[:12]}")
    note = ""
    if target.exists():
        differing = differences(tree, folder_entries(target, object_format(tree)))
        if not differing:
            return Export(target, commit)
        named = ", ".join(differing[:NAMED]) + (", ..." if len(differing) > NAMED else "")
        note = (f"--base-rev {revision}: the cached export of {commit[:12]} differs from "
                f"its git tree ({named}): exported again")
    archive = _git(top, revision, "archive", "--format=tar", commit, "--", str(relative))
    _replace(root, relative, archive, revision)
    if not (target / "spec.py").is_file():
        raise errors.UsageError(f"--base-rev {revision}: {relative} has no spec.py at "
                                f"{commit[:12]}")
    return Export(target, commit, note)


def tree_entries(listing: bytes, relative: Path) -> dict[str, tuple[str, str]]:
    """`git ls-tree -r -z` output -> {path under `relative`: (mode, object id)}, files and
    symlinks only (a submodule's folder is exported empty)."""
    prefix = "" if relative == Path(".") else relative.as_posix()
    found = {}
    for line in listing.split(b"\0"):
        if not line:
            continue
        head, _, path = line.partition(b"\t")
        mode, kind, oid = head.decode().split(" ")
        if kind != "blob":
            continue
        name = path.decode("utf-8", "surrogateescape")
        found[name[len(prefix) + 1:] if prefix else name] = (mode, oid)
    return found


def folder_entries(folder: Path, object_format: str = "sha1") -> dict[str, tuple[str, str]]:
    """{path under `folder`: (git mode, git object id)} of what the folder holds now, as
    `git hash-object` would name each file; __pycache__ folders are removed first."""
    found = {}
    for root, dirs, files in os.walk(folder):
        for name in [d for d in dirs if d == "__pycache__"]:
            shutil.rmtree(Path(root) / name, ignore_errors=True)
            dirs.remove(name)
        for name in dirs + files:
            path = Path(root) / name
            info = path.lstat()
            if stat.S_ISDIR(info.st_mode):
                continue
            if stat.S_ISLNK(info.st_mode):
                mode, data = SYMLINK, os.fsencode(os.readlink(path))
            else:
                mode = EXECUTABLE if info.st_mode & stat.S_IXUSR else FILE
                data = path.read_bytes()
            digest = hashlib.new(object_format, b"blob %d\0" % len(data) + data)
            found[path.relative_to(folder).as_posix()] = (mode, digest.hexdigest())
    return found


def differences(tree: dict, found: dict) -> list[str]:
    """The paths where an export differs from its tree: changed, added or missing."""
    return sorted(p for p in tree.keys() | found.keys() if tree.get(p) != found.get(p))


def object_format(tree: dict) -> str:
    """The repository's hash, told by its object ids' length: sha1 (40 hex digits) or
    sha256 (64)."""
    return "sha256" if any(len(oid) == 64 for _, oid in tree.values()) else "sha1"


def _replace(root: Path, relative: Path, archive: bytes, revision: str) -> None:
    """The export made anew beside the cache's copy (root/relative), then moved into its
    place: a run reading the old copy meanwhile keeps its files."""
    root.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".export-", dir=root.parent))
    try:
        try:
            with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
                tar.extractall(staging / "tree", filter="data")
        except (tarfile.TarError, OSError) as exc:
            raise errors.UsageError(f"--base-rev {revision}: the export of {relative} "
                                    f"failed: {exc}") from None
        target = root / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        if target.exists():
            target.rename(staging / "replaced")
        (staging / "tree" / relative).rename(target)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _git(where: Path, revision: str, *args: str) -> bytes:
    try:
        # through git_reader: the folder's git config runs nothing (filters, fsmonitor)
        done = run_git(where, *args, timeout=GIT_TIMEOUT_S, text=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise errors.UsageError(f"--base-rev needs git: {exc}") from None
    if done.returncode != 0:
        why = done.stderr.decode(errors="replace").strip().splitlines()
        raise errors.UsageError(f"--base-rev {revision}: git {args[0]} failed: "
                                f"{why[-1] if why else done.returncode}")
    return done.stdout
