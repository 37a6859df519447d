"""The index of run folders: every run recorded in one file, wherever `--out` put it.

`latest` once meant the newest folder under ./profiles, so a run with --out, or one
started from another folder, was invisible to `compare latest~1 latest`. Each run folder is
now recorded (its absolute path, when it began, the command) when its first results are
saved, in one file in the user's cache: $GPUBENCH_CACHE_DIR/runs.json, else
~/.cache/gpubench/runs.json. The cache rather than a profiles root, because there is no
one profiles root: --out puts a run anywhere, and runs start from many working folders;
the cache is the one place every gpubench process of the user already shares (builds,
ceilings). $GPUBENCH_RUN_INDEX names another file (the tests give each test its own).

Written under an exclusive lock (flock on runs.json.lock; two runs ending together both
land) and atomically (a temporary file renamed over it: a reader never sees half).
Entries whose folder was deleted since are kept and skipped by readers (`gpubench runs`
counts them), and dropped first when the index passes MAX_ENTRIES.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shlex
import sys
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from gpubench.build.cache import cache_base
from gpubench.files import atomic_write
from gpubench.store.results_file import RESULTS_JSON

INDEX_NAME = "runs.json"
SCHEMA = 1
# ~250 bytes an entry: 2,000 runs are ~0.5 MB, read in a few ms whenever `latest` is
# resolved; a year of 5 runs a day. Past it, deleted folders go first, then the oldest.
MAX_ENTRIES = 2000


@dataclass(frozen=True)
class IndexEntry:
    """One run folder as the index knows it; the rest is in its results.json."""

    path: str  # absolute
    started: float  # Unix time the folder was claimed: the order of `latest~N`
    command: str  # 'gpubench run matmul --sizes 1k'
    cwd: str

    @property
    def folder(self) -> Path:
        return Path(self.path)

    def exists(self) -> bool:
        """Whether the folder still holds results (it may have been deleted or moved)."""
        return (self.folder / RESULTS_JSON).is_file()


def index_path() -> Path:
    env = os.environ.get("GPUBENCH_RUN_INDEX")
    return Path(env) if env else cache_base() / INDEX_NAME


def shown_command(argv: list[str] | None = None) -> str:
    """The command as typed: 'gpubench run matmul', whether started as `gpubench`, as
    `python -m gpubench` (argv[0] is then .../gpubench/__main__.py) or from elsewhere."""
    argv = list(sys.argv if argv is None else argv)
    return shlex.join(["gpubench", *argv[1:]])


def read_index(path: Path | None = None) -> list[IndexEntry]:
    """Every recorded run, oldest first. An unreadable or foreign index (not JSON, nested
    past the parser's recursion limit, a folder) reads as empty, and an entry that is not
    an entry's shape is passed over, the others kept: the index is a convenience, the run
    folders are the records, and the next run rewrites the file whole."""
    path = path or index_path()
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return []
    runs = document.get("runs") if isinstance(document, dict) else None
    if not isinstance(runs, list):
        return []
    entries = [entry for entry in map(_entry, runs) if entry is not None]
    return sorted(entries, key=lambda e: e.started)


def _entry(item) -> IndexEntry | None:
    """The IndexEntry `item` records, or None when it is not one."""
    if not isinstance(item, dict) or set(item) != {"path", "started", "command", "cwd"}:
        return None
    started = item["started"]
    if isinstance(started, bool) or not isinstance(started, int | float):
        return None
    if not all(isinstance(item[k], str) for k in ("path", "command", "cwd")):
        return None
    return IndexEntry(item["path"], float(started), item["command"], item["cwd"])


def record_run(folder: Path, started: float, command: str | None = None,
               path: Path | None = None) -> None:
    """Add (or refresh) `folder` in the index. Raises OSError where the cache cannot be
    written; the caller decides whether that matters (a run goes on without it)."""
    path = path or index_path()
    entry = IndexEntry(str(Path(folder).resolve()), started, command or shown_command(),
                       os.getcwd())
    with _locked(path):
        entries = [e for e in read_index(path) if e.path != entry.path]
        entries = _bounded([*entries, entry])
        _write(path, entries)


def _bounded(entries: list[IndexEntry]) -> list[IndexEntry]:
    if len(entries) <= MAX_ENTRIES:
        return entries
    live = [e for e in entries if e.exists()]
    return sorted(live, key=lambda e: e.started)[-MAX_ENTRIES:]


def _write(path: Path, entries: list[IndexEntry]) -> None:
    # one entry a line: readable with less, diffable, and still one JSON document
    lines = ",\n".join(json.dumps(asdict(e)) for e in entries)
    atomic_write(path, f'{{"schema": {SCHEMA}, "runs": [\n{lines}\n]}}\n')


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """The index's lock: held for the milliseconds of one read-modify-write."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path.with_name(path.name + ".lock"), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def newest_first(path: Path | None = None) -> tuple[list[IndexEntry], list[IndexEntry]]:
    """(runs whose folders hold results, newest first; recorded runs whose folders are gone)."""
    entries = read_index(path)
    live = [e for e in entries if e.exists()]
    gone = [e for e in entries if e not in live]
    return live[::-1], gone
