"""The folder a run writes to: claimed for the run, saved into atomically, rescued when it
stops taking writes — so no collision, no full disk and no chmod loses a measurement.

- Claimed: an exclusive lock (flock on `.gpubench.lock`) for the run's lifetime, so two
  runs given the same --out cannot overwrite each other; a folder that already holds a
  run's results is reused only with --force.
- Saved: RunDocument.save writes through private temporary files, then renames.
- Rescued: if a save fails (read-only, removed, full), the document goes to a fresh
  folder under the system's temporary directory, every later save too, and the run ends
  with exit 12 saying where.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import tempfile
from pathlib import Path

from gpubench.errors import OutputError, UsageError
from gpubench.records.run import RESULTS_JSON, RunDocument, point_latest

LOCK_NAME = ".gpubench.lock"


class RunFolder:
    def __init__(self, path: Path, force: bool = False, latest_base: Path | None = None):
        self.path = path
        self.force = force
        self.latest_base = latest_base  # profiles/ when the folder is a default one
        self.rescue: Path | None = None
        self.problem: str | None = None
        self._lock_fd: int | None = None

    def claim(self) -> RunFolder:
        """Create and lock the folder; refuse a folder in use or holding results."""
        try:
            self.path.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as exc:
            raise OutputError(f"cannot write results to {self.path}: "
                              f"{exc.strerror or exc}; choose another --out") from None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            owner = _read_owner(fd)
            os.close(fd)
            raise UsageError(f"another gpubench run{owner} is writing to {self.path}; wait "
                             "for it or choose another --out") from None
        self._lock_fd = fd
        if (self.path / RESULTS_JSON).exists() and not self.force:
            self.release()
            raise UsageError(f"{self.path} already holds a run's results; pass --force to "
                             "overwrite them, or choose another --out")
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        return self

    def save(self, document: RunDocument) -> list[Path]:
        """Save into the folder, or into the rescue folder once the folder fails us."""
        if self.rescue is None:
            try:
                paths = document.save(self.path)
                if self.latest_base is not None:  # once: saves come after every point
                    with contextlib.suppress(OSError):
                        point_latest(self.latest_base, self.path)
                    self.latest_base = None
                return paths
            except OSError as exc:
                self.rescue = Path(tempfile.mkdtemp(prefix="gpubench-rescue-"))
                self.problem = (f"could not write results to {self.path} "
                                f"({exc.strerror or exc}); everything measured is in "
                                f"{self.rescue}")
        return document.save(self.rescue)

    def release(self) -> None:
        if self._lock_fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._lock_fd)
            self._lock_fd = None


def _read_owner(fd: int) -> str:
    try:
        pid = os.pread(fd, 32, 0).decode().strip()
    except OSError:
        return ""
    return f" (pid {pid})" if pid.isdigit() else ""
