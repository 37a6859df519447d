"""The folder a run writes to: claimed for the run, saved into atomically, rescued when it
stops taking writes — so no collision, no full disk and no chmod loses a measurement.

- Claimed: an exclusive lock (flock on `.gpubench.lock`) for the run's lifetime, so two
  runs given the same --out cannot overwrite each other; a folder that already holds a
  run's results is reused only with --force. The lock file goes with the lock: a finished
  run folder holds the run, not gpubench's bookkeeping.
- Saved: save_run writes results.csv and results.json through private temporary files,
  then renames; what a killed save left is removed when the folder is next claimed.
- Rescued: if a save fails (read-only, removed, full), the document goes to a fresh
  folder under the system's temporary directory, every later save too, and the run ends
  with exit 12 saying where.

- Recorded: its first save adds the folder to the index of runs (store/run_index.py), so
  that 'latest' finds it wherever --out put it.

And read back: resolve_run and load_run (what a user types: a folder, 'latest',
'latest~N'); read_run (a folder or a results.json) and the files' names are
results_file.py's, which the index of runs and the history store read too, and are named
here as well. The documents themselves, and their JSON, are records/run.py's.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from gpubench.errors import OutputError, UsageError
from gpubench.files import atomic_write
from gpubench.parsing import shown
from gpubench.records.run import RunDocument
from gpubench.records.saved_rows import SavedRows
from gpubench.safe_text import short_path
from gpubench.store import history_store, run_index
from gpubench.store.results_file import RESULTS_CSV, RESULTS_JSON, has_results, read_run

LOCK_NAME = ".gpubench.lock"
LATEST = "latest"
PROFILES = Path("profiles")  # where runs go without --out, relative to the current folder


class RunFolder:
    def __init__(self, path: Path, force: bool = False, latest_base: Path | None = None):
        self.path = path
        self.force = force
        self.latest_base = latest_base  # profiles/ when the folder is a default one
        self.rescue: Path | None = None
        self.problem: str | None = None
        self.failed_to: str = ""  # the folder that refused the results, and why
        self.unsaved_reason: str | None = None  # set when the rescue folder refused them too
        self._lock_fd: int | None = None
        self.started = time.time()  # claimed: the run's place in the index's order
        self.indexed = False
        self.rows = SavedRows()  # each row serialised once for all the run's saves
        self.saved: RunDocument | None = None  # the last document saved in the folder
        self.warnings: list[str] = []  # said at release, after the run's own output

    def claim(self) -> RunFolder:
        """Create and lock the folder; refuse a folder in use or holding results."""
        fd = self._lock_fd = self._lock()
        if has_results(self.path) and not self.force:
            self.release()
            raise UsageError(f"{short_path(self.path)} already holds a run's results; pass "
                             "--force to overwrite them, or choose another --out")
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        remove_stale_temporaries(self.path)
        self.started = time.time()
        return self

    def save(self, document: RunDocument) -> list[Path]:
        """Save into the folder, or into the rescue folder once the folder fails us."""
        if self.rescue is None:
            try:
                paths = save_run(document, self.path, self.rows)
                self.saved = document
                if self.latest_base is not None:  # once: saves come after every point
                    with contextlib.suppress(OSError):
                        point_latest(self.latest_base, self.path)
                    self.latest_base = None
                self._record()
                return paths
            except OSError as exc:
                self.failed_to = f"{short_path(self.path)} ({exc.strerror or exc})"
                self.rescue = Path(tempfile.mkdtemp(prefix="gpubench-rescue-"))
                self.problem = (f"could not write results to {self.failed_to}; everything "
                                f"measured is in {self.rescue}")
        if self.unsaved_reason is not None:  # the rescue failed too: the run goes on
            return []
        try:
            return save_run(document, self.rescue, self.rows)
        except OSError as exc:
            self._give_up(exc)
            return []

    def _give_up(self, exc: OSError) -> None:
        """Neither the folder nor the rescue folder takes the results (a file-size limit,
        `ulimit -f`, applies to both; a full disk too): the run goes on, its tables are
        printed as usual, and the problem says that nothing was saved, and why. The empty
        rescue folder is removed, not left behind without a word."""
        self.unsaved_reason = exc.strerror or str(exc)
        shutil.rmtree(self.rescue, ignore_errors=True)
        self.problem = (f"could not write results to {self.failed_to}, nor to a rescue "
                        f"folder ({self.unsaved_reason}): nothing of this run is saved; the "
                        "tables above are what was measured. A limit on file sizes "
                        "(`ulimit -f`) or a full disk does this")

    def _lock(self) -> int:
        """A descriptor of the lock file, flocked. The file is removed on release while
        still locked, so a run that opened it meanwhile gets a lock on a file no longer at
        the path: it tries again on the path's new file (as build/cache.build_lock does);
        a run that finds the lock held is refused at once."""
        path = self.path / LOCK_NAME
        while True:
            try:
                self.path.mkdir(parents=True, exist_ok=True)
                fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
            except OSError as exc:
                raise OutputError(f"cannot write results to {short_path(self.path)}: "
                                  f"{exc.strerror or exc}; choose another --out") from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                owner = _read_owner(fd)
                os.close(fd)
                raise UsageError(f"another gpubench run{owner} is writing to "
                                 f"{short_path(self.path)}; wait for it or choose another "
                                 "--out") from None
            if _names(path, fd):
                return fd
            os.close(fd)  # its holder removed it on release: lock the path's new file

    def _record(self) -> None:
        """Once, at the first save (a folder without results is no run to compare): into
        the index of runs. A cache that cannot be written (a folder named runs.json, a
        read-only cache) costs `latest` this run, never the run itself, and is said: a
        run missing from `runs` and `history` without a word looks like a lost run."""
        if not self.indexed:
            self.indexed = True
            try:
                run_index.record_run(self.path, self.started)
            except OSError as exc:
                self.warnings.append(
                    f"this run is not recorded in the index of runs "
                    f"{short_path(run_index.index_path())} ({exc.strerror or exc}): `runs`, "
                    f"`latest` and `history` do not see it; its results are in "
                    f"{short_path(self.path)}")

    def release(self) -> None:
        if self.indexed and self.rescue is None:  # the run's rows into the history store
            note = history_store.record_quietly(self.path, self.saved)
            self.warnings += [note] if note else []
        for warning in self.warnings:  # after the run's output: stderr, as other late ones
            print(f"warning: {warning}", file=sys.stderr)
        self.warnings = []
        if self._lock_fd is not None:
            with contextlib.suppress(OSError):
                (self.path / LOCK_NAME).unlink()  # still locked: see _lock
            with contextlib.suppress(OSError):
                os.close(self._lock_fd)
            self._lock_fd = None


def _names(path: Path, fd: int) -> bool:
    """Whether `path` still names the file open as `fd`."""
    try:
        named, held = path.stat(), os.fstat(fd)
    except OSError:
        return False
    return (named.st_dev, named.st_ino) == (held.st_dev, held.st_ino)


def _read_owner(fd: int) -> str:
    try:
        pid = os.pread(fd, 32, 0).decode().strip()
    except OSError:
        return ""
    return f" (pid {pid})" if pid.isdigit() else ""


# ---------------------------------------------------------------- results files


def save_run(document: RunDocument, run_dir: Path, rows: SavedRows | None = None
             ) -> list[Path]:
    """Write results.csv then results.json atomically; returns [csv, json]. In that order,
    so that a save killed between the two never leaves a results.json (what marks a run
    folder as holding results) without its results.csv, or with an older one."""
    run_dir = Path(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    json_path, csv_path = run_dir / RESULTS_JSON, run_dir / RESULTS_CSV
    rows = rows or SavedRows()
    atomic_write(csv_path, results_csv(document, rows))
    atomic_write(json_path, rows.document_json(document))
    return [csv_path, json_path]


def results_csv(document: RunDocument, rows: SavedRows | None = None) -> str:
    """The run as CSV for a spreadsheet: every text field made safe (no cell a formula,
    none longer than safe_text.CSV_LIMIT); results.json keeps the full texts."""
    return (rows or SavedRows()).csv_text(document.results)


def remove_stale_temporaries(run_dir: Path) -> list[Path]:
    """Remove what a save killed mid-write (kill -9) left: atomic_write's temporary files.
    Only called with the folder's lock held, so no other writer owns one of them."""
    removed = []
    for name in (RESULTS_JSON, RESULTS_CSV):
        for stale in run_dir.glob(f".{name}.*.tmp"):
            with contextlib.suppress(OSError):
                stale.unlink()
                removed.append(stale)
    return removed


def point_latest(base: Path, run_dir: Path) -> None:
    """Make base/latest name run_dir: a relative symlink, or a one-line file where the
    filesystem has no symlinks."""
    link = base / LATEST
    try:
        tmp = base / f".{LATEST}.{os.getpid()}"
        tmp.unlink(missing_ok=True)
        tmp.symlink_to(run_dir.name)
        os.replace(tmp, link)
    except OSError:
        atomic_write(link, run_dir.name + "\n")


def resolve_run(reference: str | Path, base: Path | None = None) -> Path:
    """A run folder from what a user types: a folder, a results.json, 'latest', or
    'latest~N' (the Nth run before the newest). Without `base`, the newest runs are the
    index's (store/run_index.py: every run, wherever --out put it), or, while it records
    none, ./profiles'; with `base`, that folder's (its `latest` link, then folder names,
    which start with the UTC time the run began)."""
    text = str(reference)
    if text == LATEST or text.startswith(LATEST + "~"):
        back = _steps_back(text)
        if base is None:
            recorded, _ = run_index.newest_first()
            if recorded:
                if len(recorded) <= back:
                    raise UsageError(f"'{shown(text)}': only {len(recorded)} run(s) with "
                                     f"results recorded (`gpubench runs` lists them)")
                return recorded[back].folder
        return _latest_in(text, back, PROFILES if base is None else base)
    path = Path(reference)
    if path.name == RESULTS_JSON:
        path = path.parent
    if not (path / RESULTS_JSON).is_file():
        raise UsageError(f"no run results at {path} (expected {path / RESULTS_JSON})")
    return path


def _latest_in(text: str, back: int, base: Path) -> Path:
    """'latest~back' among the run folders directly under `base`."""
    runs = sorted((p for p in base.iterdir() if (p / RESULTS_JSON).is_file()
                   and not p.is_symlink()), key=lambda p: p.name) if base.is_dir() else []
    if back == 0 and (base / LATEST).exists():
        return _follow_latest(base)
    if len(runs) <= back:
        raise UsageError(f"'{shown(text)}': only {len(runs)} run(s) with results in "
                         f"{base}/")
    return runs[-1 - back]


_MAX_BACK_DIGITS = 18  # 10^18 runs back: more than any folder holds


def _steps_back(text: str) -> int:
    suffix = text.removeprefix(LATEST).removeprefix("~") or "0"
    # ASCII digits only (str.isdigit also takes '²', which int() refuses); more runs
    # back than any folder holds need no conversion (int() refuses past 4300 digits).
    if not (suffix.isascii() and suffix.isdigit()):
        raise UsageError(f"'{shown(text)}': expected latest or latest~N (N = runs back)")
    return int(suffix) if len(suffix) <= _MAX_BACK_DIGITS else 10**_MAX_BACK_DIGITS


def _follow_latest(base: Path) -> Path:
    link = base / LATEST
    if link.is_symlink() or link.is_dir():
        return link.resolve()
    return base / link.read_text().strip()


def load_run(reference: str | Path = LATEST, base: Path | str | None = None) -> RunDocument:
    """The run document of a run folder, a results.json, 'latest' or 'latest~N' (see
    resolve_run for `base`)."""
    return read_run(resolve_run(reference, None if base is None else Path(base)))
