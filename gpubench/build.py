"""Building C++/CUDA variants with torch's load_inline, once per content.

load_inline decides whether to rebuild by ninja timestamps under a fixed name,
so two sources under one name rebuild every time and a killed build leaves a
`lock` file that makes every later load wait forever. gpubench therefore:

- names each build after a hash of everything that changes the binary (sources,
  headers of the family folder and of gpubench/include, flags, exported
  functions, GPU arch, torch/CUDA/Python versions);
- imports a finished build directly (no ninja, no torch JIT bookkeeping), so a
  second process pays ~10 ms instead of a full build (~30 s), after checking the
  .so's size and sha256 against the build's marker: importing a truncated .so
  dies of SIGBUS, so a damaged cache is rebuilt (once, with a note) instead;
- builds in a fresh `<name>.building` folder and renames it into place when
  done, so a killed build never leaves a half-written .so (or torch's `lock`
  file) where a later process would load it, and a .so is never rewritten in
  place under a process that has it mapped;
- serialises builds of one name with an flock, which the OS releases when a
  builder dies;
- hands ninja only plain paths: a family folder (or cache) whose path holds a
  space, `$`, a quote or ':' is reached through a symlink with a hashed name;
- prefixes every source with a `#line` directive, so compiler errors name the
  user's own file and line rather than load_inline's concatenated main.cpp.
"""

from __future__ import annotations

import fcntl
import hashlib
import importlib.util
import json
import os
import re
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

# Bump when the way builds are made changes, to invalidate every cached build.
# 2: the marker records the .so's size and sha256, checked before every import.
BUILD_SCHEMA = 2
INCLUDE_DIR = Path(__file__).resolve().parent / "include"
MARKER = "gpubench-build.json"  # written last: a folder without it holds no finished build
HEADER_SUFFIXES = (".h", ".hpp", ".cuh", ".inl")
# Paths that ninja and the shell running its commands both take literally. torch
# escapes only spaces for ninja, so '$' (a ninja variable), quotes and ':' break
# the build; any path outside this set reaches ninja through a symlink instead.
_PLAIN_PATH = re.compile(r"[A-Za-z0-9_@%+=,./-]+")


class CompileError(Exception):
    """A build that failed; `summary` holds the compiler's first errors with file:line."""

    def __init__(self, summary: str, log_path: Path | None = None, seconds: float = 0.0):
        super().__init__(summary)
        self.summary = summary
        self.log_path = log_path
        self.seconds = seconds  # time the failed build took


@dataclass(frozen=True)
class BuildRequest:
    """One extension: the sources of a family folder and the functions it exports."""

    family: str
    folder: Path
    cuda_sources: tuple[str, ...]
    cpp_sources: tuple[str, ...]
    functions: tuple[str, ...]
    cuda_flags: tuple[str, ...] = ()
    cflags: tuple[str, ...] = ()

    @property
    def with_cuda(self) -> bool:
        return bool(self.cuda_sources)


@dataclass(frozen=True)
class BuildOutcome:
    module: object
    seconds: float  # wall time spent building or loading in this process
    cached: bool  # True when an earlier process's build was reused
    name: str
    directory: Path
    # Why this build was redone, for the results table: e.g. "cached build was
    # corrupt (size 12345, expected 67890): rebuilt". None for an ordinary build.
    note: str | None = None


# ---------------------------------------------------------------- pure helpers


def content_key(request: BuildRequest, toolchain: dict[str, str]) -> str:
    """A hash of everything that changes the binary; equal keys mean reusable builds."""
    digest = hashlib.sha256()

    def add(label: str, data: bytes | str) -> None:
        data = data.encode() if isinstance(data, str) else data
        digest.update(f"{label}:{len(data)}:".encode())
        digest.update(data)

    add("schema", str(BUILD_SCHEMA))
    for key in sorted(toolchain):
        add(f"tool.{key}", toolchain[key])
    for attr in ("cuda_sources", "cpp_sources", "functions", "cuda_flags", "cflags"):
        add(attr, "\0".join(getattr(request, attr)))
    for path in _hashed_files(request):
        add(f"file.{path.name}", path.read_bytes())
    return digest.hexdigest()


def extension_name(request: BuildRequest, key: str) -> str:
    """A valid Python module name that a human can still read: gb_matmul_cuda_1a2b3c4d5e6f."""
    family = re.sub(r"\W", "_", request.family)
    return f"gb_{family}_{'cuda' if request.with_cuda else 'cpu'}_{key[:12]}"


def with_line_directive(path: Path) -> str:
    """The file's text, prefixed so that diagnostics point at the file itself."""
    return f'#line 1 "{c_string_body(str(path))}"\n{path.read_text()}'


def c_string_body(text: str) -> str:
    """`text` escaped for a C string literal: a folder named `it's "x"\\y` must not end
    the `#line` file name early. Control characters become octal escapes."""
    out = []
    for char in text:
        if char in '\\"':
            out.append("\\" + char)
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\{ord(char):03o}")
        else:
            out.append(char)
    return "".join(out)


_GCC_ERROR = re.compile(
    r"^(?P<file>[^\s:][^:]*):(?P<line>\d+):(?:\d+:)? (?:fatal )?error: (?P<msg>.*)$"
)
_NVCC_ERROR = re.compile(r"^(?P<file>\S+)\((?P<line>\d+)\): (?:catastrophic )?error: (?P<msg>.*)$")
_LINK_ERROR = re.compile(r"(undefined reference to .*|ld returned .*|undefined symbol: .*)")


def summarize_compiler_output(output: str, limit: int = 3) -> list[str]:
    """The first `limit` errors as 'file:line: message', gcc and nvcc formats alike."""
    found: list[str] = []
    for line in output.splitlines():
        match = _GCC_ERROR.match(line.strip()) or _NVCC_ERROR.match(line.strip())
        if match:
            entry = f"{_display_path(match['file'])}:{match['line']}: {match['msg'].strip()}"
        else:
            link = _LINK_ERROR.search(line)
            if not link:
                continue
            entry = f"link error: {link.group(1).strip()}"
        if entry not in found:
            found.append(entry)
        if len(found) >= limit:
            break
    return found


def _display_path(path: str) -> str:
    """Relative to the working directory when below it, else as given."""
    cwd = os.getcwd()
    if os.path.isabs(path) and path.startswith(cwd + os.sep):
        return os.path.relpath(path, cwd)
    return path


def _hashed_files(request: BuildRequest) -> list[Path]:
    """Sources, plus every header a source could include from its folder or gpubench/include."""
    files = [request.folder / s for s in (*request.cuda_sources, *request.cpp_sources)]
    headers = [p for p in sorted(request.folder.iterdir()) if p.suffix in HEADER_SUFFIXES]
    headers += sorted(p for p in INCLUDE_DIR.rglob("*") if p.suffix in HEADER_SUFFIXES)
    return files + headers


# ---------------------------------------------------------------- the builder


def cache_base() -> Path:
    """$GPUBENCH_CACHE_DIR, else ~/.cache/gpubench: the root of every gpubench cache."""
    env = os.environ.get("GPUBENCH_CACHE_DIR")
    return Path(env) if env else Path.home() / ".cache" / "gpubench"


def cache_root() -> Path:
    """Where built extensions live: <cache>/extensions."""
    root = cache_base() / "extensions"
    root.mkdir(parents=True, exist_ok=True)
    return root


def toolchain_facts(with_cuda: bool) -> dict[str, str]:
    """What besides the sources decides the binary: versions and the target GPU."""
    import torch
    from torch.utils import cpp_extension

    facts = {
        "torch": torch.__version__,
        "python": f"{sys.version_info.major}.{sys.version_info.minor}",
        "platform": sys.platform,
    }
    if with_cuda:
        major, minor = torch.cuda.get_device_capability()
        facts.update(
            cuda=str(torch.version.cuda),
            arch=f"sm_{major}{minor}",
            arch_list=os.environ.get("TORCH_CUDA_ARCH_LIST", ""),
            cuda_home=str(cpp_extension.CUDA_HOME),
        )
    return facts


# Builds that failed in this process, by name: load_inline would not retry them
# (its in-process version check sees nothing new) and would report a missing .so.
_FAILED: dict[str, CompileError] = {}


def build_extension(request: BuildRequest, lock_timeout_s: float = 1800.0) -> BuildOutcome:
    """Import the extension, building it first unless an intact build of this content exists."""
    start = time.perf_counter()
    key = content_key(request, toolchain_facts(request.with_cuda))
    name = extension_name(request, key)
    if name in _FAILED:  # the same failure, without counting its build time twice
        raise CompileError(_FAILED[name].summary, _FAILED[name].log_path)
    directory = cache_root() / name
    module, _ = _load_finished(name, directory, key)
    if module is None:
        with _build_lock(cache_root() / f"{name}.flock", lock_timeout_s):
            # Checked again under the lock: another process may have built it meanwhile.
            module, problem = _load_finished(name, directory, key)
            if module is None:
                module = _rebuild(request, name, directory, key, problem, start)
                note = f"cached build was corrupt ({problem}): rebuilt" if problem else None
                return BuildOutcome(module, time.perf_counter() - start, False, name,
                                    directory, note)
    return BuildOutcome(module, time.perf_counter() - start, True, name, directory)


def _rebuild(request: BuildRequest, name: str, directory: Path, key: str,
             problem: str | None, start: float):
    """Build once; a failure is remembered for this process and, when a corrupt cache
    was being replaced, says where that cache is and how to get away from it."""
    try:
        return _build_and_install(request, name, directory, key)
    except CompileError as exc:
        error = exc
        if problem is not None:
            error = CompileError(
                f"{exc.summary} (rebuilding the corrupt cached build in {directory}: "
                f"{problem}; delete that folder, or set GPUBENCH_CACHE_DIR to another folder)",
                exc.log_path)
        error.seconds = time.perf_counter() - start
        _FAILED[name] = error
        raise error from None


def _build_and_install(request: BuildRequest, name: str, directory: Path, key: str):
    """Compile in a fresh staging folder, record the .so's size and hash, then rename the
    folder into place: readers see either the old folder or a finished new one."""
    staging = directory.with_name(f"{name}.building")
    _remove_tree(staging)  # what a killed builder left, stale torch `lock` included
    staging.mkdir(parents=True)
    module = _compile(request, name, staging)
    _write_marker(staging / MARKER, staging / f"{name}.so", key, request)
    _swap_in(staging, directory)
    return module


def _write_marker(marker: Path, library: Path, key: str, request: BuildRequest) -> None:
    size, digest = _size_and_sha256(library)
    marker.write_text(json.dumps({"key": key, "request": repr(request),
                                  "size": size, "sha256": digest}))


def _swap_in(staging: Path, directory: Path) -> None:
    """Replace `directory` by `staging`. The old folder is renamed away first, never
    rewritten: a process that has its .so mapped keeps valid pages."""
    for leftover in directory.parent.glob(f"{directory.name}.old-*"):
        _remove_tree(leftover)  # a swap killed between its two renames
    old = directory.with_name(f"{directory.name}.old-{os.getpid()}")
    if directory.exists() or directory.is_symlink():
        os.rename(directory, old)
    os.rename(staging, directory)
    _remove_tree(old)


def _remove_tree(path: Path) -> None:
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.exists():
        shutil.rmtree(path)


def _load_finished(name: str, directory: Path, key: str):
    """(module, None) for an intact finished build, (None, None) when there is none,
    (None, why) when there is one that must not or could not be imported."""
    if name in sys.modules:
        return sys.modules[name], None
    problem = _cached_build_problem(name, directory, key)
    if problem is not None:
        return None, (None if problem is _ABSENT else problem)
    try:
        return _import_library(name, directory / f"{name}.so"), None
    except ImportError as exc:
        return None, f"import failed: {exc}"


# Returned by _cached_build_problem when there is no build at all (not a corruption).
_ABSENT = "absent"


def _cached_build_problem(name: str, directory: Path, key: str) -> str | None:
    """Why the build in `directory` must not be imported, None if it may, _ABSENT if there
    is none. A .so is trusted only at the size and sha256 its builder recorded."""
    marker, library = directory / MARKER, directory / f"{name}.so"
    if not marker.exists():
        return _ABSENT if not library.exists() else "its marker file is missing"
    try:
        recorded = json.loads(marker.read_text())
        expected_size, expected_hash = int(recorded["size"]), str(recorded["sha256"])
    except (OSError, ValueError, KeyError, TypeError):
        return f"its marker file {MARKER} is unreadable"
    if recorded.get("key") != key:
        return "its marker file names other sources"
    if not library.is_file():
        return f"{library.name} is missing"
    size, digest = _size_and_sha256(library)
    if size != expected_size:
        return f"size {size}, expected {expected_size}"
    if digest != expected_hash:
        return f"sha256 {digest[:12]}..., expected {expected_hash[:12]}..."
    return None


def _size_and_sha256(path: Path) -> tuple[int, str]:
    """Both from one open file; hashing a few-MB .so costs a few ms."""
    with open(path, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        return size, hashlib.file_digest(handle, "sha256").hexdigest()


def _import_library(name: str, library: Path):
    import torch  # noqa: F401  (the extension links against libtorch)

    spec = importlib.util.spec_from_file_location(name, library)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    sys.modules[name] = module
    return module


class _build_lock:
    """An flock held for the build; the kernel drops it if the builder is killed."""

    def __init__(self, path: Path, timeout_s: float):
        self.path, self.timeout_s, self.handle = path, timeout_s, None

    def __enter__(self):
        self.handle = open(self.path, "a+")
        deadline = time.monotonic() + self.timeout_s
        while True:
            try:
                fcntl.flock(self.handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise CompileError(
                        f"another gpubench process has been building {self.path.stem} for "
                        f"over {self.timeout_s:.0f} s; remove {self.path} if none is running"
                    ) from None
                time.sleep(0.2)
        return self

    def __exit__(self, *exc):
        fcntl.flock(self.handle, fcntl.LOCK_UN)
        self.handle.close()


def _no_implicit_headers(load_inline) -> dict:
    """Skip torch's implicit `#include <torch/types.h>` in .cu files where torch allows it:
    device code without torch headers compiles in ~0.3 s instead of ~60 s."""
    import inspect

    params = inspect.signature(load_inline).parameters
    return {"no_implicit_headers": True} if "no_implicit_headers" in params else {}


def _compile(request: BuildRequest, name: str, directory: Path):
    """load_inline into `directory`, with every path ninja sees made plain (see _plain_path)."""
    from torch.utils.cpp_extension import load_inline

    folder = request.folder
    build_dir = _plain_path(directory)
    try:
        return load_inline(
            name=name,
            cpp_sources=[with_line_directive(folder / s) for s in request.cpp_sources],
            cuda_sources=[with_line_directive(folder / s) for s in request.cuda_sources] or None,
            functions=list(request.functions),
            extra_include_paths=[str(_plain_path(folder)), str(_plain_path(INCLUDE_DIR))],
            # -lineinfo: ncu's source view maps SASS back to these lines; costs no speed.
            extra_cuda_cflags=["-O3", "-lineinfo", *request.cuda_flags],
            extra_cflags=["-O3", *request.cflags],
            build_directory=str(build_dir),
            with_cuda=request.with_cuda,
            verbose=False,
            **_no_implicit_headers(load_inline),
        )
    except RuntimeError as exc:
        output = str(exc)
        log = directory / "build-error.log"
        log.write_text(output)
        errors = summarize_compiler_output(output) or [output.strip().splitlines()[-1]]
        raise CompileError("; ".join(errors), log) from None
    except ImportError as exc:
        raise CompileError(f"the built extension does not load: {exc}") from None
    finally:
        if build_dir != directory:
            build_dir.unlink(missing_ok=True)  # it would point at the renamed staging folder


def _plain_path(path: Path) -> Path:
    """`path` (absolute) if ninja and the shell take it literally, else a symlink to it
    with a plain, hashed name: `/tmp/my kernels/it's$weird` fails in ninja as is."""
    path = Path(os.path.abspath(path))
    if _PLAIN_PATH.fullmatch(str(path)):
        return path
    digest = hashlib.sha256(str(path).encode()).hexdigest()[:16]
    readable = re.sub(r"[^A-Za-z0-9_.-]", "_", path.name)[:40]
    link = _link_root() / f"{readable}-{digest}"
    if not (link.is_symlink() and os.readlink(link) == str(path)):
        temporary = link.with_name(f"{link.name}.{os.getpid()}.tmp")
        temporary.unlink(missing_ok=True)
        temporary.symlink_to(path, target_is_directory=True)
        os.replace(temporary, link)  # atomic: a concurrent builder sees old or new link
    return link


def _link_root() -> Path:
    """A plain-path folder of ours for those symlinks: in the cache, else in the temp folder."""
    candidates = (cache_root() / "links",
                  Path(tempfile.gettempdir()) / f"gpubench-links-{os.getuid()}")
    for root in candidates:
        if not _PLAIN_PATH.fullmatch(str(root)):
            continue
        root.mkdir(mode=0o700, parents=True, exist_ok=True)
        if not root.is_symlink() and root.stat().st_uid == os.getuid():
            return root
    raise CompileError(
        f"the cache folder {cache_root()} has a path that ninja cannot take (a space, '$', "
        "a quote or ':'), and so has the temp folder: set GPUBENCH_CACHE_DIR to a plain "
        "path such as /tmp/gpubench-cache")
