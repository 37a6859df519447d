"""Building C++/CUDA variants with torch's load_inline, once per content.

load_inline decides whether to rebuild by ninja timestamps under a fixed name,
so two sources under one name rebuild every time and a killed build leaves a
`lock` file that makes every later load wait forever. gpubench therefore:

- names each build after a hash of everything that changes the binary (sources,
  headers of the family folder and of gpubench/include, flags, exported
  functions, GPU arch, torch/CUDA/Python versions);
- imports a finished build directly (no ninja, no torch JIT bookkeeping), so a
  second process pays ~10 ms instead of a full build (~30 s);
- serialises builds of one name with an flock, which the OS releases when a
  builder dies, so any torch `lock` file found while holding it is stale and is
  removed instead of waited on;
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
import sys
import time
from dataclasses import dataclass
from pathlib import Path

# Bump when the way builds are made changes, to invalidate every cached build.
BUILD_SCHEMA = 1
INCLUDE_DIR = Path(__file__).resolve().parent / "include"
MARKER = "gpubench-build.json"
HEADER_SUFFIXES = (".h", ".hpp", ".cuh", ".inl")


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
    return f'#line 1 "{path}"\n{path.read_text()}'


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
    """Import the extension, building it first if no finished build of this content exists."""
    start = time.perf_counter()
    key = content_key(request, toolchain_facts(request.with_cuda))
    name = extension_name(request, key)
    if name in _FAILED:  # the same failure, without counting its build time twice
        raise CompileError(_FAILED[name].summary, _FAILED[name].log_path)
    directory = cache_root() / name
    module = _import_finished(name, directory, key)
    if module is not None:
        return BuildOutcome(module, time.perf_counter() - start, True, name, directory)
    with _build_lock(cache_root() / f"{name}.flock", lock_timeout_s):
        module = _import_finished(name, directory, key)  # another process may have built it
        cached = module is not None
        if module is None:
            try:
                module = _compile(request, name, directory)
            except CompileError as exc:
                exc.seconds = time.perf_counter() - start
                _FAILED[name] = exc
                raise
            (directory / MARKER).write_text(json.dumps({"key": key, "request": repr(request)}))
    return BuildOutcome(module, time.perf_counter() - start, cached, name, directory)


def _import_finished(name: str, directory: Path, key: str):
    marker = directory / MARKER
    library = directory / f"{name}.so"
    if not (marker.is_file() and library.is_file()):
        return None
    try:
        if json.loads(marker.read_text()).get("key") != key:
            return None
    except (OSError, ValueError):
        return None
    if name in sys.modules:
        return sys.modules[name]
    import torch  # noqa: F401  (the extension links against libtorch)

    spec = importlib.util.spec_from_file_location(name, library)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except ImportError as exc:
        raise CompileError(f"the built extension does not load: {exc}") from None
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
    from torch.utils.cpp_extension import load_inline

    directory.mkdir(parents=True, exist_ok=True)
    stale = directory / "lock"  # torch's FileBaton; we hold the flock, so its owner is gone
    if stale.exists():
        stale.unlink()
    folder = request.folder
    try:
        return load_inline(
            name=name,
            cpp_sources=[with_line_directive(folder / s) for s in request.cpp_sources],
            cuda_sources=[with_line_directive(folder / s) for s in request.cuda_sources] or None,
            functions=list(request.functions),
            extra_include_paths=[str(folder), str(INCLUDE_DIR)],
            # -lineinfo: ncu's source view maps SASS back to these lines; costs no speed.
            extra_cuda_cflags=["-O3", "-lineinfo", *request.cuda_flags],
            extra_cflags=["-O3", *request.cflags],
            build_directory=str(directory),
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
