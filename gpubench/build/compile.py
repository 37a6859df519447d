"""Building C++/CUDA variants with torch's load_inline: incrementally, published once per
content.

Two folders per extension, because two needs pull apart:

- ninja can only skip unchanged work in a folder that stays put: one *work folder* per
  extension, `<cache>/extensions/work/<module>/`, named after everything EXCEPT the
  contents of the sources (family, folder, source names and labels, functions, flags,
  torch/CUDA/Python versions, GPU arch: `stable_key`). The module name compiled into
  the .so (TORCH_EXTENSION_NAME) is that same stable name, or main.cpp would recompile
  at every change. load_inline writes main.cpp and cuda.cu only when their text changed,
  so an edit of a .cu recompiles cuda.cu alone (~2 s of nvcc) and relinks; main.cpp,
  which includes torch/extension.h (~40 s of gcc on 2 cores), is left alone. torch's
  in-process JIT versioner is reset for the name each time (it would rename a second
  build `<name>_v1`, recompiling everything, or skip ninja for sources it saw before).
- readers need a .so that never changes under them: every finished build is copied
  to `<cache>/extensions/<name>/`, named after a hash of everything that changes the
  binary (`content_key`: the above plus the texts of sources and headers), through a
  `<name>.building` staging folder renamed into place, with a marker recording the
  .so's size and sha256, checked before every import (importing a truncated .so dies of
  SIGBUS; a damaged one is rebuilt once, with a note). A process imports from there
  only, never from the work folder, and an old published folder is renamed away, never
  rewritten, so a process that has its .so mapped keeps valid pages. A second process
  with the same content imports it in ~10 ms without running ninja or torch's JIT.
  Imports go by `<name>.<module>`, one spec name per content: pybind11 3 returns the
  module it already made for a spec name, so two edits in one process would otherwise
  share the first one's functions.

Locks (flock: the kernel drops them when a builder dies), always taken in this order:
the content's `<name>.flock` (a second builder of the same content waits, then finds it
built), then the work folder's `<module>.flock` (two contents of one extension, e.g. two
processes at two edits, take turns in the folder). A precompiled torch/extension.h
(gpubench/build/pch.py) cuts each compile of main.cpp roughly in half (a CPU source edit or a
new extension: ~44 s -> ~18 s on 2 cores; docs/measurement.md "Builds"); its lock is only ever
tried, never waited for.

Never stale, never stuck, in the work folder:
- every build deletes the work folder's .so first, so the linker writes a new inode
  whatever it does (load_inline's own import maps that file in the builder);
- torch's `lock` baton is removed (we hold the folder's flock: any baton is stale),
  and a `gpubench-building` flag left by a killed build makes the next one start
  from clean objects;
- ninja trusts timestamps, but a header copied in with an old mtime (cp -p, rsync -a,
  copytree) must still rebuild: the folder records the header hashes its objects
  agree with, and objects that `ninja -t deps` says include a changed header are
  deleted (all of them when a header appears or goes: it may shadow another);
- sources are read once, so the key hashes exactly the text compiled; a header that
  changes during the build makes that build unpublished (imported from its staging
  folder) rather than cached under the old key.

Also: ninja sees only plain paths (a family folder or cache whose path holds a space,
`$`, a quote or ':' is reached through a symlink with a hashed name), and every source
starts with a `#line` directive, so compiler errors name the user's own file (or, for a
source given as text, its label) rather than load_inline's concatenated main.cpp.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib.util
import inspect
import itertools
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from gpubench.build import pch

# Bump when the way builds are made changes, to invalidate every cached build.
# 2: the marker records the .so's size and sha256, checked before every import.
# 3: incremental work folders; the marker names the module; headers found recursively.
BUILD_SCHEMA = 3
INCLUDE_DIR = Path(__file__).resolve().parent.parent / "include"  # gpubench/include
MARKER = "gpubench-build.json"  # written last: a folder without it holds no finished build
STATE = "gpubench-state.json"  # in a work folder: the header hashes of its last good build
DIRTY = "gpubench-building"  # in a work folder while ninja runs: only a killed build leaves it
HEADER_SUFFIXES = (".h", ".hpp", ".cuh", ".inl")
# Paths that ninja and the shell running its commands both take literally. torch
# escapes only spaces for ninja, so '$' (a ninja variable), quotes and ':' break
# the build; any path outside this set reaches ninja through a symlink instead.
_PLAIN_PATH = re.compile(r"[A-Za-z0-9_@%+=,./-]+")
# What a kill of the builder may leave half-written in a work folder.
_BUILD_PRODUCTS = (".o", ".so", ".d")
_NINJA_STATE = (".ninja_log", ".ninja_deps")


class CompileError(Exception):
    """A build that failed; `summary` holds the compiler's first errors with file:line."""

    def __init__(self, summary: str, log_path: Path | None = None, seconds: float = 0.0):
        super().__init__(summary)
        self.summary = summary
        self.log_path = log_path
        self.seconds = seconds  # time the failed build took


@dataclass(frozen=True)
class BuildRequest:
    """One extension: the sources of a family folder and the functions it exports.

    Sources may also be given as texts, like load_inline's cpp_sources/cuda_sources:
    (label, text) pairs, compiled after the files of the same kind; the label names the
    text in compiler errors (`#line 1 "<label>"`), e.g. "spec.py: cuda_sources[0]".
    `implicit_headers` builds exactly as load_inline does by default: torch/types.h,
    cuda.h and cuda_runtime.h are prepended to the CUDA sources (code that uses
    torch::Tensor inside cuda_sources needs them; they cost ~tens of seconds of nvcc)."""

    family: str
    folder: Path
    cuda_sources: tuple[str, ...]
    cpp_sources: tuple[str, ...]
    functions: tuple[str, ...]
    cuda_flags: tuple[str, ...] = ()
    cflags: tuple[str, ...] = ()
    cpp_texts: tuple[tuple[str, str], ...] = ()
    cuda_texts: tuple[tuple[str, str], ...] = ()
    implicit_headers: bool = False

    @property
    def with_cuda(self) -> bool:
        return bool(self.cuda_sources or self.cuda_texts)


@dataclass(frozen=True)
class Sources:
    """What one build compiles, read once: the key hashes exactly the text that is compiled.
    Each source is (name in the key, name in #line, text); each header (name in the key,
    path, sha256)."""

    cpp: tuple[tuple[str, str, str], ...]
    cuda: tuple[tuple[str, str, str], ...]
    headers: tuple[tuple[str, Path, str], ...]


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


class _Digest:
    """sha256 over labelled fields; the lengths keep ("ab", "c") apart from ("a", "bc")."""

    def __init__(self, schema: int):
        self.digest = hashlib.sha256()
        self.add("schema", str(schema))

    def add(self, label: str, data: bytes | str) -> None:
        data = data.encode() if isinstance(data, str) else data
        self.digest.update(f"{label}:{len(data)}:".encode())
        self.digest.update(data)

    def add_request_shape(self, request: BuildRequest, toolchain: dict[str, str]) -> None:
        """Everything but the contents: toolchain, names, labels, functions, flags."""
        for key in sorted(toolchain):
            self.add(f"tool.{key}", toolchain[key])
        for attr in ("cuda_sources", "cpp_sources", "functions", "cuda_flags", "cflags"):
            self.add(attr, "\0".join(getattr(request, attr)))
        for attr in ("cuda_texts", "cpp_texts"):
            self.add(f"{attr}.labels", "\0".join(label for label, _ in getattr(request, attr)))
        self.add("implicit_headers", str(request.implicit_headers))

    def hexdigest(self) -> str:
        return self.digest.hexdigest()


def content_key(request: BuildRequest, toolchain: dict[str, str],
                sources: Sources | None = None) -> str:
    """A hash of everything that changes the binary; equal keys mean reusable builds.
    Not the folder's path: two copies of a family share their builds."""
    sources = read_sources(request) if sources is None else sources
    digest = _Digest(BUILD_SCHEMA)
    digest.add_request_shape(request, toolchain)
    for kind, entries in (("cuda", sources.cuda), ("cpp", sources.cpp)):
        for index, (name, _, text) in enumerate(entries):
            digest.add(f"{kind}.{index}.{name}", text)
    for name, _, sha in sources.headers:
        digest.add(f"header.{name}", sha)
    return digest.hexdigest()


def stable_key(request: BuildRequest, toolchain: dict[str, str]) -> str:
    """A hash of everything that decides the compiler's command lines, and nothing of the
    sources' contents: the name of the work folder where ninja keeps objects between
    edits. The folder's path counts (it is an -I flag)."""
    digest = _Digest(BUILD_SCHEMA)
    digest.add("family", request.family)
    digest.add("folder", os.path.abspath(request.folder))
    digest.add_request_shape(request, toolchain)
    return digest.hexdigest()


def _readable(request: BuildRequest, key: str) -> str:
    family = re.sub(r"\W", "_", request.family)
    return f"gb_{family}_{'cuda' if request.with_cuda else 'cpu'}_{key[:12]}"


def extension_name(request: BuildRequest, key: str) -> str:
    """The published build's name, from the content key: gb_matmul_cuda_1a2b3c4d5e6f."""
    return _readable(request, key)


def module_name(request: BuildRequest, stable: str) -> str:
    """The Python module name compiled into the .so, from the stable key: it must not
    change with the sources, or main.cpp (-DTORCH_EXTENSION_NAME) recompiles each time."""
    return _readable(request, stable)


def with_line_directive(path: Path) -> str:
    """The file's text, prefixed so that diagnostics point at the file itself."""
    return line_directive(str(path), path.read_text())


def line_directive(name: str, text: str) -> str:
    """`text` prefixed with `#line 1 "<name>"`, so diagnostics name its origin."""
    return f'#line 1 "{c_string_body(name)}"\n{text}'


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


# The file part is lazy and may hold ': ' and spaces: a label like "spec.py: cuda_sources[0]"
# is a file name to the compiler (#line).
_GCC_ERROR = re.compile(
    r"^(?P<file>\S.*?):(?P<line>\d+):(?:\d+:)? (?:fatal )?error: (?P<msg>.*)$"
)
_NVCC_ERROR = re.compile(
    r"^(?P<file>\S.*?)\((?P<line>\d+)\): (?:catastrophic )?error: (?P<msg>.*)$"
)
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


def parse_ninja_variables(text: str) -> dict[str, str]:
    """Top-level `name = value` lines of a build.ninja (torch writes no line continuations)."""
    variables = {}
    for line in text.splitlines():
        if line[:1].isspace() or "=" not in line:
            continue
        name, _, value = line.partition("=")
        variables[name.strip()] = value.strip()
    return variables


def parse_ninja_deps(output: str) -> dict[str, list[str]]:
    """`ninja -t deps` as {object: [paths it read]}; objects without recorded deps are absent.

        main.o: #deps 3, deps mtime 1700000000 (VALID)
            /src/main.cpp
            /src/helper.h
    """
    deps: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in output.splitlines():
        if not line.strip():
            current = None
        elif not line[0].isspace() and ": #deps " in line:
            current = deps.setdefault(line.split(": #deps ", 1)[0], [])
        elif current is not None:
            current.append(line.strip())
    return deps


def objects_to_rebuild(objects: list[str], previous: dict[str, str] | None,
                       current: dict[str, str], deps: dict[str, list[str]] | None) -> list[str]:
    """The objects of a work folder that must be recompiled because a header changed,
    whatever its timestamp says. `previous`/`current`: {header realpath: sha256} at the
    last good build and now; `deps`: {object: realpaths it read}, None if unknown.
    A header added or removed may shadow another one: every object goes."""
    if previous is None or set(previous) != set(current):
        return list(objects)
    changed = {path for path, sha in current.items() if previous[path] != sha}
    if not changed:
        return []
    if deps is None:
        return list(objects)
    return [obj for obj in objects if obj not in deps or changed & set(deps[obj])]


# ---------------------------------------------------------------- reading sources


def read_sources(request: BuildRequest) -> Sources:
    """Source files and texts in load_inline order (files first), and every header a source
    could include from the family folder (recursively) or gpubench/include."""
    folder = request.folder

    def files(names: tuple[str, ...]) -> list[tuple[str, str, str]]:
        return [(f"file:{n}", str(folder / n), (folder / n).read_text()) for n in names]

    def texts(pairs: tuple[tuple[str, str], ...]) -> list[tuple[str, str, str]]:
        return [(f"text:{label}", label, text) for label, text in pairs]

    return Sources(cpp=tuple(files(request.cpp_sources) + texts(request.cpp_texts)),
                   cuda=tuple(files(request.cuda_sources) + texts(request.cuda_texts)),
                   headers=tuple(_headers(folder, "family")
                                 + _headers(INCLUDE_DIR, "include")))


def _headers(root: Path, label: str) -> list[tuple[str, Path, str]]:
    """(label/relative path, path, sha256) of the headers below `root`, hidden folders and
    __pycache__ skipped. A family folder holds a few files: a few ms to read them all."""
    if not root.is_dir():
        return []
    found = []
    for path in sorted(root.rglob("*")):
        parts = path.relative_to(root).parts
        if path.suffix not in HEADER_SUFFIXES or not path.is_file() or any(
                part.startswith(".") or part == "__pycache__" for part in parts[:-1]):
            continue
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        found.append((f"{label}/{'/'.join(parts)}", path, digest))
    return found


def _header_hashes(headers: tuple[tuple[str, Path, str], ...]) -> dict[str, str]:
    """{realpath: sha256}: the form ninja's deps log can be compared with."""
    return {os.path.realpath(path): sha for _, path, sha in headers}


def _headers_now(request: BuildRequest) -> dict[str, str]:
    return _header_hashes(tuple(_headers(request.folder, "family")
                                + _headers(INCLUDE_DIR, "include")))


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


def work_root() -> Path:
    """Where ninja keeps each extension's objects between builds: <cache>/extensions/work."""
    root = cache_root() / "work"
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
# Published builds imported by this process, by name (see _import_library for why not
# sys.modules or Python's own import caches).
_LOADED: dict[str, object] = {}
_UNPUBLISHED = itertools.count(1)  # builds imported from staging, see _build_and_publish


def build_extension(request: BuildRequest, lock_timeout_s: float = 1800.0) -> BuildOutcome:
    """Import the extension, building it first unless an intact build of this content exists."""
    start = time.perf_counter()
    toolchain = toolchain_facts(request.with_cuda)
    sources = read_sources(request)
    key = content_key(request, toolchain, sources)
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
                module, directory, note = _rebuild(request, sources, toolchain, name,
                                                   directory, key, problem, start,
                                                   lock_timeout_s)
                return BuildOutcome(module, time.perf_counter() - start, False, name,
                                    directory, note)
    return BuildOutcome(module, time.perf_counter() - start, True, name, directory)


def _rebuild(request: BuildRequest, sources: Sources, toolchain: dict[str, str], name: str,
             directory: Path, key: str, problem: str | None, start: float,
             lock_timeout_s: float):
    """Build once; a failure is remembered for this process and, when a corrupt cache
    was being replaced, says where that cache is and how to get away from it."""
    try:
        module, where, note = _build_and_publish(request, sources, toolchain, name, directory,
                                                 key, lock_timeout_s)
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
    if problem is not None:
        note = f"cached build was corrupt ({problem}): rebuilt"
    return module, where, note


def _build_and_publish(request: BuildRequest, sources: Sources, toolchain: dict[str, str],
                       name: str, directory: Path, key: str, lock_timeout_s: float):
    """Compile in the extension's work folder, copy the .so into a fresh staging folder with
    its marker, then rename that into place: readers see the old folder or a finished new
    one. Returns (module, folder it was imported from, note)."""
    module = module_name(request, stable_key(request, toolchain))
    work = work_root() / module
    staging = directory.with_name(f"{name}.building")
    with _build_lock(work.with_name(f"{module}.flock"), lock_timeout_s):
        library = _compile(request, sources, work, module)
        _remove_tree(staging)  # what a killed builder left
        staging.mkdir(parents=True)
        shutil.copy2(library, staging / library.name)
    _write_marker(staging, library.name, key, request)
    if _headers_now(request) != _header_hashes(sources.headers):
        # A header changed while it compiled: the binary matches neither key. Used from
        # staging (the next build removes it), never published under the old key.
        alias = f"{name}_unpublished{next(_UNPUBLISHED)}"  # never the cached build's name
        return (_import_library(name, library.stem, staging / library.name, alias), staging,
                "a header changed during the build: this build is not cached")
    _swap_in(staging, directory)
    return _import_library(name, library.stem, directory / library.name), directory, None


def _write_marker(folder: Path, library: str, key: str, request: BuildRequest) -> None:
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


def _unlink(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        path.unlink()


# ---------------------------------------------------------------- loading published builds


def _load_finished(name: str, directory: Path, key: str):
    """(module, None) for an intact finished build, (None, None) when there is none,
    (None, why) when there is one that must not or could not be imported."""
    if name in _LOADED:
        return _LOADED[name], None
    problem, module, library = _cached_build_problem(directory, key)
    if problem is not None:
        return None, (None if problem is _ABSENT else problem)
    try:
        return _import_library(name, module, library), None
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


def _import_library(name: str, module: str, library: Path, alias: str | None = None):
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
                    self.handle.close()
                    raise CompileError(
                        f"another gpubench process has been building {self.path.stem} for "
                        f"over {self.timeout_s:.0f} s; remove {self.path} if none is running"
                    ) from None
                time.sleep(0.2)
        return self

    def __exit__(self, *exc):
        fcntl.flock(self.handle, fcntl.LOCK_UN)
        self.handle.close()


# ---------------------------------------------------------------- the work folder


def host_optimization(request: BuildRequest) -> str:
    """-O level of the C++ translation unit (main.cpp). In a CUDA extension it holds host
    glue only — tensor checks and a launch; the kernels are nvcc's, at -O3 — and at -O1
    it compiles in 11.5 s instead of 20.4 s with the precompiled header on 2 cores
    (docs/measurement.md, "Builds"): the difference is template code generation, not
    speed that a timed call could see. A CPU-only extension's kernels are that C++, so it
    keeps -O3. A variant's own cflags come after this flag and win."""
    return "-O1" if request.with_cuda else "-O3"


def _compile(request: BuildRequest, sources: Sources, work: Path, module: str) -> Path:
    """Bring the work folder's .so up to date with `sources` (ninja recompiles only what
    changed) and return its path. Called under the work folder's flock."""
    work.mkdir(parents=True, exist_ok=True)
    _recover(work)
    _forget_changed_headers(work, sources)
    for library in work.glob("*.so"):
        library.unlink()  # the linker writes a new inode, whatever linker it is
    plain = _plain_path(work)
    extra_cflags = [host_optimization(request), *request.cflags]
    # Every object left now agrees with the headers as read: recorded before ninja runs,
    # so that a failed or interrupted build does not cost a full rebuild next time.
    (work / STATE).write_text(json.dumps({"headers": _header_hashes(sources.headers)}))
    include, build = _start_pch(request, work, module, extra_cflags)
    (work / DIRTY).write_text(f"{os.getpid()}\n")
    try:
        library = _load_inline(request, sources, plain, module, [*extra_cflags, *include])
    except Exception:
        _unlink(work / DIRTY)  # a failed compile leaves ninja's state consistent
        _finish_pch(build, include, module)  # the fix-and-rebuild loop will want it
        raise
    except BaseException:  # Ctrl-C: stop at once; the flag stays, the next build cleans up
        if build is not None:
            build.abort()
        raise
    _unlink(work / DIRTY)
    _finish_pch(build, include, module)
    return work / library.name  # the real folder, not the symlink ninja may have seen


def _recover(work: Path) -> None:
    """Undo what a killed build may have left: torch's `lock` baton (whose owner is gone,
    since we hold the folder's flock) and, after a kill mid-compile, half-written objects
    and ninja logs."""
    _unlink(work / "lock")
    if (work / DIRTY).exists():
        for path in work.iterdir():
            if path.suffix in _BUILD_PRODUCTS or path.name in _NINJA_STATE:
                _unlink(path)
        _unlink(work / DIRTY)


def _forget_changed_headers(work: Path, sources: Sources) -> None:
    """Delete the objects that include a header whose content changed since the folder's
    last good build: ninja compares timestamps, and a header copied in with an old mtime
    would not look newer than the object."""
    objects = sorted(path.name for path in work.glob("*.o"))
    if not objects:
        return
    try:
        previous = json.loads((work / STATE).read_text())["headers"]
    except (OSError, ValueError, KeyError, TypeError):
        previous = None
    current = _header_hashes(sources.headers)
    deps = None
    if previous is not None and set(previous) == set(current) and previous != current:
        deps = _ninja_deps(work)
    for stale in objects_to_rebuild(objects, previous, current, deps):
        _unlink(work / stale)


def _ninja_deps(work: Path) -> dict[str, list[str]] | None:
    """{object: realpaths of what it read} from ninja's deps log, None when ninja cannot say."""
    try:
        done = subprocess.run(["ninja", "-t", "deps"], cwd=work, capture_output=True,
                              text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    return {obj: [os.path.realpath(os.path.join(work, path)) for path in paths]
            for obj, paths in parse_ninja_deps(done.stdout).items()}


def _forget_version(module: str) -> None:
    """Make load_inline run ninja for `module` whatever it ran before in this process.

    torch's JIT versioner remembers each name's sources per process: a second build
    of the same name with other sources would be renamed `<name>_v1` (a new
    TORCH_EXTENSION_NAME: everything recompiles), and the same sources again would
    skip ninja altogether. Best effort: a torch without the versioner just builds."""
    from torch.utils import cpp_extension

    versioner = getattr(cpp_extension, "JIT_EXTENSION_VERSIONER", None)
    entries = getattr(versioner, "entries", None)
    if isinstance(entries, dict):
        entries.pop(module, None)


def _no_implicit_headers(load_inline) -> dict:
    """Skip torch's implicit `#include <torch/types.h>` in .cu files where torch allows it:
    device code without torch headers compiles in ~0.3 s instead of ~60 s."""
    params = inspect.signature(load_inline).parameters
    return {"no_implicit_headers": True} if "no_implicit_headers" in params else {}


def _load_inline(request: BuildRequest, sources: Sources, work: Path, module: str,
                 extra_cflags: list[str]) -> Path:
    """load_inline into the work folder (a plain path, see _plain_path); the path of the
    .so it built. Its own import of that .so is not used: see _import_library."""
    from torch.utils.cpp_extension import load_inline

    cpp = [line_directive(name, text) for _, name, text in sources.cpp]
    cuda = [line_directive(name, text) for _, name, text in sources.cuda]
    implicit = {} if request.implicit_headers else _no_implicit_headers(load_inline)
    if implicit:
        # load_inline prepends this itself unless told not to. First in main.cpp, it is
        # what the precompiled header stands in for; sources include it anyway (the
        # module definition load_inline appends needs it).
        cpp.insert(0, "#include <torch/extension.h>")
    _forget_version(module)
    try:
        built = load_inline(
            name=module,
            cpp_sources=cpp,
            cuda_sources=cuda or None,
            functions=list(request.functions),
            extra_include_paths=[str(_plain_path(request.folder)), str(_plain_path(INCLUDE_DIR))],
            # -lineinfo: ncu's source view maps SASS back to these lines; costs no speed.
            extra_cuda_cflags=["-O3", "-lineinfo", *request.cuda_flags],
            extra_cflags=extra_cflags,
            build_directory=str(work),
            with_cuda=request.with_cuda,
            verbose=False,
            **implicit,
        )
    except RuntimeError as exc:
        output = str(exc)
        log = Path(os.path.realpath(work)) / "build-error.log"
        log.write_text(output)
        errors = summarize_compiler_output(output) or [output.strip().splitlines()[-1]]
        raise CompileError("; ".join(errors), log) from None
    except ImportError as exc:
        raise CompileError(f"the built extension does not load: {exc}") from None
    return Path(built.__file__)


# ---------------------------------------------------------------- the precompiled header


def _start_pch(request: BuildRequest, work: Path, module: str, extra_cflags: list[str]):
    """(the -I flag that puts gpubench's PCH folder on the include path, the PCH build
    started beside this one or None). The flag is passed whether or not the PCH exists
    yet, so that ninja sees the same command line before and after it appears.

    The user's own -D/-U flags stay out of the PCH and its key: gcc accepts a PCH when a
    macro defined now is one its headers never mention, so variants that differ by
    -DTILE=16/32 share one PCH (~50 s and ~800 MB each otherwise); a macro that torch's
    headers do test (-DNDEBUG) makes gcc ignore the PCH, and that build compiles
    without it, as before."""
    if not pch.enabled():
        return [], None
    cxx = tuple(shlex.split(os.environ.get("CXX", "c++")))  # torch's get_cxx_compiler()
    identity = pch.gcc_identity(cxx)
    if identity is None:
        return [], None
    import torch
    from torch.utils import cpp_extension

    macros = {flag for flag in request.cflags if flag.startswith(("-D", "-U"))}
    facts = {"torch": torch.__version__, "torch_dir": str(Path(torch.__file__).parent),
             "python_include": str(sysconfig.get_path("include")), "cxx": shlex.join(cxx),
             "compiler": identity, "cuda": str(request.with_cuda),
             "cuda_home": str(cpp_extension.CUDA_HOME) if request.with_cuda else "",
             "cflags": json.dumps([flag for flag in extra_cflags if flag not in macros])}
    directory = cache_base() / "pch" / pch.pch_key(facts)
    directory.mkdir(parents=True, exist_ok=True)
    include = [f"-I{_plain_path(directory)}"]
    command = _cxx_command(request, work, module, [*extra_cflags, *include])
    if command is None:
        return include, None
    compiler, cflags = command
    header = Path(torch.__file__).parent / "include" / pch.HEADER
    flags = tuple(flag for flag in pch.pch_flags(cflags) if flag not in macros)
    one = pch.Pch(directory, compiler, flags, header, pch.gcc_identity(compiler) or identity)
    return include, one.start()


def _finish_pch(build, include: list[str], module: str) -> None:
    """Wait for a PCH started beside the build, and check that gcc takes it with the
    flags it was made for plus what a real compile adds (the -I folders, the extension's
    name, as here; the user's macros are gcc's call at each compile)."""
    if build is None:
        return
    probe = [*build.pch.cxx, *include, f"-DTORCH_EXTENSION_NAME={module}", *build.pch.flags]
    build.finish(probe)


def _cxx_command(request: BuildRequest, work: Path, module: str,
                 extra_cflags: list[str]) -> tuple[tuple[str, ...], list[str]] | None:
    """(compiler, flags) of the real compile of main.cpp, as torch writes them into
    build.ninja: exact, rather than a copy of torch's flag logic that a new torch
    version would silently outdate (a PCH built with other flags is never used).
    torch's writer is private: when it is gone, the work folder's build.ninja from an
    earlier build serves (its -I folders may differ; the PCH drops those anyway)."""
    text = _torch_ninja_text(request, work, module, extra_cflags)
    if text is None and (work / "build.ninja").is_file():
        text = (work / "build.ninja").read_text()
    if text is None:
        return None
    variables = parse_ninja_variables(text)
    if "cxx" not in variables or "cflags" not in variables:
        return None
    flags = shlex.split(variables["cflags"]) + shlex.split(variables.get("post_cflags", ""))
    return tuple(shlex.split(variables["cxx"])), flags


def _torch_ninja_text(request: BuildRequest, work: Path, module: str,
                      extra_cflags: list[str]) -> str | None:
    """The build.ninja torch would write for this build, written aside and read back."""
    try:
        from torch.utils.cpp_extension import _write_ninja_file_to_build_library as write
    except ImportError:
        return None
    path = work / "gpubench-flags.ninja"
    sources = [str(work / "main.cpp")] + ([str(work / "cuda.cu")] if request.with_cuda else [])
    arguments = {
        "path": str(path), "name": module, "sources": sources, "extra_cflags": extra_cflags,
        "extra_cuda_cflags": ["-O3", "-lineinfo", *request.cuda_flags],
        "extra_sycl_cflags": [], "extra_ldflags": [],
        "extra_include_paths": [str(_plain_path(request.folder)), str(_plain_path(INCLUDE_DIR))],
        "with_cuda": request.with_cuda, "with_sycl": False, "is_standalone": False}
    try:
        accepted = inspect.signature(write).parameters
        write(**{name: value for name, value in arguments.items() if name in accepted})
        return path.read_text()
    except Exception:  # a private function: any change in it means "no PCH this time"
        return None
    finally:
        _unlink(path)


# ---------------------------------------------------------------- plain paths


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
