"""The on-disk cache of finished builds: its folders, the flock that serialises builders,
and publishing and loading a build. A published folder holds the .so and a marker (written
last) with the .so's size and sha256, checked before every import: importing a truncated
.so dies of SIGBUS. A folder is replaced by renaming, never rewritten, so a process that
has its .so mapped keeps valid pages."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib.util
import json
import os
import shutil
import time
from collections.abc import Mapping
from pathlib import Path

from gpubench.build.diagnostics import CompileError
from gpubench.build.sources import BuildRequest

MARKER = "gpubench-build.json"  # written last: a folder without it holds no finished build


def cache_base(environ: Mapping[str, str] | None = None) -> Path:
    """$GPUBENCH_CACHE_DIR, else ~/.cache/gpubench: the root of every gpubench cache (of
    this process, or of a child that gets `environ`)."""
    env = (os.environ if environ is None else environ).get("GPUBENCH_CACHE_DIR")
    return Path(env) if env else Path.home() / ".cache" / "gpubench"


def require_writable_cache() -> Path:
    """The cache root, made and written once now: a cache that cannot be written (a file
    in its way, a read-only folder, a full disk) is one OutputError (exit 12) before any
    worker starts, not every point CRASHED by a worker that cannot start."""
    from gpubench.errors import OutputError

    base = cache_base()
    probe = base / f".writable-{os.getpid()}"
    try:
        base.mkdir(parents=True, exist_ok=True)
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise OutputError(f"gpubench's cache {base} cannot be written: "
                          f"{exc.strerror or exc}; set GPUBENCH_CACHE_DIR to a folder you "
                          "can write") from None
    return base


def cache_root() -> Path:
    """Where built extensions live: <cache>/extensions."""
    root = cache_base() / "extensions"
    root.mkdir(parents=True, exist_ok=True)
    return root


def work_root() -> Path:
    """Where ninja keeps each extension's objects between builds: <cache>/extensions/work."""
    root = cache_root() / "work"
    root.mkdir(parents=True, exist_ok=True)
    return root


# Published builds imported by this process, by name (see import_library for why not
# sys.modules or Python's own import caches).
_LOADED: dict[str, object] = {}


def write_marker(folder: Path, library: str, key: str, request: BuildRequest) -> None:
    """Record, last, what makes `folder` a finished build: its key, module, and the .so's
    size and sha256 (load_finished trusts the .so only at those)."""
    size, digest = _size_and_sha256(folder / library)
    described = {"family": request.family, "folder": str(request.folder),
                 "cuda_sources": request.cuda_sources, "cpp_sources": request.cpp_sources,
                 "cuda_texts": [label for label, _ in request.cuda_texts],
                 "cpp_texts": [label for label, _ in request.cpp_texts],
                 "functions": request.functions, "cuda_flags": request.cuda_flags,
                 "cflags": request.cflags, "implicit_headers": request.implicit_headers}
    (folder / MARKER).write_text(json.dumps({
        "key": key, "module": Path(library).stem, "library": library, "size": size,
        "sha256": digest, "request": described}))


def swap_in(staging: Path, directory: Path) -> None:
    """Replace `directory` by `staging`. The old folder is renamed away first, never
    rewritten: a process that has its .so mapped keeps valid pages."""
    for leftover in directory.parent.glob(f"{directory.name}.old-*"):
        remove_tree(leftover)  # a swap killed between its two renames
    old = directory.with_name(f"{directory.name}.old-{os.getpid()}")
    if directory.exists() or directory.is_symlink():
        os.rename(directory, old)
    os.rename(staging, directory)
    remove_tree(old)


def remove_tree(path: Path) -> None:
    """Remove a folder, file or symlink; nothing when it is not there."""
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.exists():
        shutil.rmtree(path)


def load_finished(name: str, directory: Path, key: str):
    """(module, None) for an intact finished build, (None, None) when there is none,
    (None, why) when there is one that must not or could not be imported."""
    if name in _LOADED:
        return _LOADED[name], None
    problem, module, library = _cached_build_problem(directory, key)
    if problem is not None:
        return None, (None if problem is _ABSENT else problem)
    try:
        return import_library(name, module, library), None
    except ImportError as exc:
        return None, f"import failed: {exc}"


# Returned by _cached_build_problem when there is no build at all (not a corruption).
_ABSENT = "absent"


def _cached_build_problem(directory: Path, key: str):
    """(why the build in `directory` must not be imported, module name, .so path): why is
    None if it may be, _ABSENT if there is none. A .so is trusted only at the size and
    sha256 its builder recorded."""
    marker = directory / MARKER
    if not marker.exists():
        stray = directory.is_dir() and any(directory.glob("*.so"))
        return (_ABSENT if not stray else "its marker file is missing"), None, None
    try:
        recorded = json.loads(marker.read_text())
        expected_size, expected_hash = int(recorded["size"]), str(recorded["sha256"])
        module, library = str(recorded["module"]), directory / str(recorded["library"])
    except (OSError, ValueError, KeyError, TypeError):
        return f"its marker file {MARKER} is unreadable", None, None
    if recorded.get("key") != key:
        return "its marker file names other sources", None, None
    if not library.is_file():
        return f"{library.name} is missing", None, None
    size, digest = _size_and_sha256(library)
    if size != expected_size:
        return f"size {size}, expected {expected_size}", None, None
    if digest != expected_hash:
        return f"sha256 {digest[:12]}..., expected {expected_hash[:12]}...", None, None
    return None, module, library


def _size_and_sha256(path: Path) -> tuple[int, str]:
    """Both from one open file; hashing a few-MB .so costs a few ms."""
    with open(path, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        return size, hashlib.file_digest(handle, "sha256").hexdigest()


def import_library(name: str, module: str, library: Path, alias: str | None = None):
    """Import `library` as `<name>.<module>` and remember it under the build's `name`.

    The last part must be `module`, the name of its PyInit_ function. The first makes
    each content's import distinct: pybind11 (3.x) hands back the module it already
    initialised under the same spec name, and Python's and the dynamic loader's caches
    go by path and name; so `module` alone would return an older content's functions
    after an edit in this process (load_inline's own import of the work folder's .so
    gets exactly that, and is not used). `alias` replaces `name` there."""
    import torch  # noqa: F401  (the extension links against libtorch)

    spec = importlib.util.spec_from_file_location(f"{alias or name}.{module}", library)
    loaded = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(loaded)
    if alias is None:
        _LOADED[name] = loaded
    return loaded


class build_lock:
    """An flock held for the build; the kernel drops it if the builder is killed.

    The lock file is removed on release (one per content would otherwise pile up in the
    cache, one per edit): removed while still held, so a waiter that then gets the lock
    finds its file no longer at the path and takes the lock again on the path's current
    file. Only a lock on the file the path names counts."""

    def __init__(self, path: Path, timeout_s: float):
        self.path, self.timeout_s, self.handle = path, timeout_s, None

    def __enter__(self):
        deadline = time.monotonic() + self.timeout_s
        while True:
            self.handle = open(self.path, "a+")  # closed in __exit__ (or _wait, timed out)
            self._wait(deadline)
            if _names_file(self.path, self.handle):
                return self
            self.handle.close()  # its holder removed it on release: lock the new one

    def _wait(self, deadline: float) -> None:
        while True:
            try:
                fcntl.flock(self.handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                if time.monotonic() > deadline:
                    self.handle.close()
                    raise CompileError(
                        f"another gpubench process has been building {self.path.stem} for "
                        f"over {self.timeout_s:.0f} s; remove {self.path} if none is running"
                    ) from None
                time.sleep(0.2)

    def __exit__(self, *exc):
        with contextlib.suppress(OSError):
            self.path.unlink()
        fcntl.flock(self.handle, fcntl.LOCK_UN)
        self.handle.close()


def _names_file(path: Path, handle) -> bool:
    """Whether `path` still names the file open in `handle`."""
    try:
        named, held = path.stat(), os.fstat(handle.fileno())
    except OSError:
        return False
    return (named.st_dev, named.st_ino) == (held.st_dev, held.st_ino)
