"""The ceilings cache as the parent last knew it good, written back where a variant changed it.

Why: a worker measures or checks this machine's ceilings (timing/ceilings.py) as it starts,
before any variant code, and keeps them in <cache>/ceilings/<key>.json; later runs trust
that file, and a forged one turns "99% comp" into "6% mem" with no warning. Variant code
runs in the same worker, as the same user: where the kernel has no Landlock
(run/worker/sandbox.py), or the sandbox is off, it can rewrite the file. The parent runs no
variant code, so it keeps its own copy.

What: every worker's hello carries the ceilings it measured (and wrote to the cache just
before) or read from the cache. The parent records each measured one as good, and the first
one a worker read, in this process. A hello whose ceilings came from the cache and are none
of the good ones means the file changed while variants ran: the last good copy is written
back, the check record beside it removed (the next worker probes again), and a warning names
the file. At the end of a run (`verify`, when no worker runs any more) each file is compared
with its good copies and restored the same way; a process that ends without that call (a
command other than `run`) does it at exit.

Limits: a parent killed by SIGKILL leaves a file changed since its last hello as it is, and
the next run reads it as good (a sandboxed worker cannot change it at all). A measurement
that another gpubench process makes meanwhile (`gpubench peak --force`) reads as a change
too: it is undone, with the warning, and is made again by the next `peak --force`.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import re
import sys
import threading
from pathlib import Path

_lock = threading.Lock()
_good: dict[str, list[dict]] = {}  # cache key -> the contents known good, the newest last
_warnings: list[str] = []  # not yet said
_at_exit: list[bool] = []  # whether the check at exit is registered

# A cache key as timing/ceilings.device_key makes it: a file name, never a path.
_KEY = re.compile(r"[A-Za-z0-9_.-]+")


def note_hello(env: dict) -> None:
    """A worker's hello (its env): record its ceilings as good, or restore the cache file
    if they came from a file that changed since this process last saw it good."""
    ceilings, check = env.get("ceilings"), env.get("ceilings_check")
    key = ceilings.get("key") if isinstance(ceilings, dict) else None
    if not isinstance(key, str) or not _KEY.fullmatch(key) or key.strip(".") == "":
        return
    seen = _normal(ceilings)
    if seen is None:
        return
    # No check: measured now; "remeasured": the cache was replaced by a new measurement.
    measured = not isinstance(check, dict) or bool(check.get("remeasured"))
    with _lock:
        good = _good.setdefault(key, [])
        if measured or not good:
            if seen in good:
                good.remove(seen)
            good.append(seen)
        elif seen not in good:
            _restore(key, good[-1], "a worker read ceilings that no worker of this run "
                                    "measured or read before")
        if not _at_exit:
            _at_exit.append(True)
            atexit.register(_verify_at_exit)


def verify() -> list[str]:
    """Once no worker runs: every cache file this process knows good ones of, compared
    with them and restored if it changed; returns the warnings not yet said (each once)."""
    with _lock:
        for key, good in _good.items():
            on_disk = _read(_path(key))
            if on_disk is None or on_disk not in good:
                _restore(key, good[-1], "it changed while this run's variants ran")
        said, _warnings[:] = list(_warnings), []
    return said


def forget() -> None:
    """Drop what this process knows (tests: each starts from nothing)."""
    with _lock:
        _good.clear()
        _warnings.clear()


def _restore(key: str, good: dict, why: str) -> None:
    from gpubench.files import atomic_write
    from gpubench.timing.ceilings import CHECK_SUFFIX

    path = _path(key)
    try:
        atomic_write(path, json.dumps(good, indent=2))
        path.with_name(f"{key}{CHECK_SUFFIX}").unlink(missing_ok=True)
        done = "restored from the copy the parent kept"
    except OSError as exc:
        done = f"could not be restored ({exc.strerror or exc})"
    _warnings.append(f"the ceilings cache {path} was changed by something other than "
                     f"gpubench's measurement ({why}): {done}; a variant that writes "
                     "files outside its scratch folder is the likely cause")


def _path(key: str) -> Path:
    from gpubench.timing.ceilings import cache_dir

    return cache_dir() / f"{key}.json"


def _read(path: Path) -> dict | None:
    try:
        return _normal(json.loads(path.read_text()))
    except (OSError, ValueError):
        return None


def _normal(data) -> dict | None:
    """Ceilings as a worker reports them: an older file's form read as the worker reads it
    (Ceilings.from_dict), through JSON, so that a hello and a file compare equal."""
    from gpubench.timing.ceilings import Ceilings

    try:
        return json.loads(json.dumps(Ceilings.from_dict(data).to_dict()))
    except (TypeError, ValueError, AttributeError):
        return None


def _verify_at_exit() -> None:
    with contextlib.suppress(Exception):
        for warning in verify():
            print(f"warning: {warning}", file=sys.stderr)
