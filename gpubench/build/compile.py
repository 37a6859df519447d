"""Building C++/CUDA variants with torch's load_inline: incrementally, published once per
content.

Two folders per extension, because two needs pull apart:

- ninja can only skip unchanged work in a folder that stays put: one *work folder* per
  extension, `<cache>/extensions/work/<module>/`, named after everything EXCEPT the
  contents of the sources (family, folder, source names and labels, functions, flags,
  torch/CUDA/Python versions, GPU arch: `stable_key`). The module name compiled into
  the .so (TORCH_EXTENSION_NAME) is that same stable name, or main.cpp would recompile
  at every change. Sources are written only when their text changed, so an edit of a .cu
  recompiles cuda.cu alone (~1.5 s of nvcc) and relinks. Where layout.py can split them,
  the binding and pybind11's module definition are two translation units: an edit of the
  binding recompiles ~1 s of C++ and the module file (~5 s) never (otherwise load_inline's
  one main.cpp, torch/extension.h first, recompiles whole). torch's
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

import errno
import hashlib
import inspect
import itertools
import json
import os
import shutil
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

from gpubench.build.cache import (
    build_lock,
    cache_base,
    cache_root,
    import_library,
    load_finished,
    remove_tree,
    swap_in,
    work_root,
    write_marker,
)
from gpubench.build.diagnostics import CompileError, line_directive, summarize_compiler_output
from gpubench.build.flags import cuda_cflags, host_optimization, include_paths
from gpubench.build.key import (
    content_key,
    extension_name,
    module_name,
    stable_key,
    toolchain_facts,
)
from gpubench.build.layout import (
    FRONTEND,
    MODULE_FILE,
    Layout,
    plan_layout,
    slow_build_hint,
)
from gpubench.build.sources import (
    BuildRequest,
    Sources,
    header_hashes,
    headers_now,
    read_sources,
)
from gpubench.build.torch_pch import finish_pch, start_pch, waits_for_pch
from gpubench.build.workfolder import (
    DIRTY,
    STATE,
    forget_changed_headers,
    plain_path,
    recover,
)


@dataclass(frozen=True)
class BuildOutcome:
    module: object
    seconds: float  # wall time spent building or loading in this process
    cached: bool  # True when an earlier process's build was reused
    name: str
    directory: Path
    # For the results table: why this build was redone (e.g. "cached build was corrupt
    # (size 12345, expected 67890): rebuilt"), or why it was slow (torch headers in a .cu,
    # layout.slow_build_hint). None for an ordinary build.
    note: str | None = None
    # Seconds of each step of `seconds` (toolchain facts, sources and key, then the build
    # or the cached build's check and import), kept in results.json (build.steps_s): a
    # worker's load of a cached extension takes 3-10 ms on an H200, and what looks like
    # 0.2 s a worker is the build phase's own check of the cache.
    steps: dict[str, float] = field(default_factory=dict)


# Builds that failed in this process, by name: load_inline would not retry them
# (its in-process version check sees nothing new) and would report a missing .so.
_FAILED: dict[str, CompileError] = {}
_UNPUBLISHED = itertools.count(1)  # builds imported from staging, see _build_and_publish


def build_extension(request: BuildRequest, lock_timeout_s: float = 1800.0) -> BuildOutcome:
    """Import the extension, building it first unless an intact build of this content exists."""
    start = time.perf_counter()
    toolchain = toolchain_facts(request.with_cuda)
    facts_done = time.perf_counter()
    sources = read_sources(request)
    key = content_key(request, toolchain, sources)
    name = extension_name(request, key)
    if name in _FAILED:  # the same failure, without counting its build time twice
        raise CompileError(_FAILED[name].summary, _FAILED[name].log_path)
    keyed = time.perf_counter()
    try:
        outcome = _build_or_load(request, sources, toolchain, key, name, start, lock_timeout_s)
        return replace(outcome, steps={"toolchain": facts_done - start,
                                       "sources and key": keyed - facts_done,
                                       "load" if outcome.cached else "build":
                                       time.perf_counter() - keyed})
    except OSError as exc:
        if exc.errno not in _CACHE_UNWRITABLE:
            raise
        raise CompileError(_unwritable_message(exc), seconds=time.perf_counter() - start) \
            from None


# A full disk or quota, a read-only or foreign cache folder: Python's message for a failed
# write often names no file ("[Errno 28] No space left on device"), so the cache is named.
_CACHE_UNWRITABLE = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM}


def _unwritable_message(exc: OSError) -> str:
    where = exc.filename or cache_base()
    return (f"cannot write the build cache ({exc.strerror or exc}: {where}); free space "
            f"there, or set GPUBENCH_CACHE_DIR to another folder")


def _build_or_load(request: BuildRequest, sources: Sources, toolchain: dict[str, str],
                   key: str, name: str, start: float, lock_timeout_s: float) -> BuildOutcome:
    """The cached build of `name` when intact, else a fresh one, published to the cache."""
    directory = cache_root() / name
    module, _ = load_finished(name, directory, key)
    if module is None:
        with build_lock(cache_root() / f"{name}.flock", lock_timeout_s):
            # Checked again under the lock: another process may have built it meanwhile.
            module, problem = load_finished(name, directory, key)
            if module is None:
                module, directory, note = _rebuild(request, sources, toolchain, name,
                                                   directory, key, problem, start,
                                                   lock_timeout_s)
                hint = slow_build_hint([text for _, _, text in sources.cuda],
                                       request.implicit_headers and request.with_cuda)
                return BuildOutcome(module, time.perf_counter() - start, False, name,
                                    directory, note or _renamed(name, key) or hint)
    return BuildOutcome(module, time.perf_counter() - start, True, name, directory)


def _renamed(name: str, key: str) -> str | None:
    """Why a build of sources already built under another family's name was not reused:
    a published build is named after its family (key.extension_name), so a copy of a
    family under another name (or a renamed folder) compiles again, from scratch (the
    work folder is named after the family and its folder too: key.stable_key)."""
    kind = name.rsplit("_", 2)[-2]
    others = sorted(p.name for p in cache_root().glob(f"gb_*_{kind}_{key[:12]}")
                    if p.is_dir() and p.name != name)
    if not others:
        return None
    return (f"not cached: the same sources are built as {others[0]}, under another family "
            "name; a build is named after its family, so a copy under another name builds "
            "again")


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
    with build_lock(work.with_name(f"{module}.flock"), lock_timeout_s):
        library = _compile(request, sources, work, module)
        remove_tree(staging)  # what a killed builder left
        staging.mkdir(parents=True)
        shutil.copy2(library, staging / library.name)
    write_marker(staging, library.name, key, request)
    if headers_now(request) != header_hashes(sources.headers):
        # A header changed while it compiled: the binary matches neither key. Used from
        # staging (the next build removes it), never published under the old key.
        alias = f"{name}_unpublished{next(_UNPUBLISHED)}"  # never the cached build's name
        return (import_library(name, library.stem, staging / library.name, alias), staging,
                "a header changed during the build: this build is not cached")
    swap_in(staging, directory)
    return import_library(name, library.stem, directory / library.name), directory, None


def _compile(request: BuildRequest, sources: Sources, work: Path, module: str) -> Path:
    """Bring the work folder's .so up to date with `sources` (ninja recompiles only what
    changed) and return its path. Called under the work folder's flock."""
    work.mkdir(parents=True, exist_ok=True)
    recover(work)
    forget_changed_headers(work, sources)
    for library in work.glob("*.so"):
        library.unlink()  # the linker writes a new inode, whatever linker it is
    plain = plain_path(work)
    extra_cflags = [host_optimization(request), *request.cflags]
    # Every object left now agrees with the headers as read: recorded before ninja runs,
    # so that a failed or interrupted build does not cost a full rebuild next time.
    (work / STATE).write_text(json.dumps({"headers": header_hashes(sources.headers)}))
    layout = _layout(request, sources, work)
    include, build = start_pch(request, work, module, extra_cflags, layout.prelude)
    wait = waits_for_pch(request, layout.prelude)
    (work / DIRTY).write_text(f"{os.getpid()}\n")
    try:
        library = _build_library(request, sources, plain, module, [*extra_cflags, *include],
                                 layout)
    except Exception:
        (work / DIRTY).unlink(missing_ok=True)  # a failed compile leaves ninja's state consistent
        # The fix-and-rebuild loop will want the PCH; it waits for one only if a build would.
        finish_pch(build, include, module, wait=wait)
        raise
    except BaseException:  # Ctrl-C: stop at once; the flag stays, the next build cleans up
        if build is not None:
            build.abort()
        raise
    (work / DIRTY).unlink(missing_ok=True)
    finish_pch(build, include, module, wait=wait)
    return work / library.name  # the real folder, not the symlink ninja may have seen


# In a work folder: the module file that failed to compile or link (its sha256), so that
# the next builds of the same declarations go straight to one translation unit.
SPLIT_REFUSED = "gpubench-split-refused"


def _layout(request: BuildRequest, sources: Sources, work: Path) -> Layout:
    layout = plan_layout([text for _, _, text in sources.cpp], request.functions,
                         request.implicit_headers)
    if layout.split and _refused_split(work) == _digest(layout.module_text):
        return Layout(FRONTEND)
    return layout


def _build_library(request: BuildRequest, sources: Sources, work: Path, module: str,
                   extra_cflags: list[str], layout: Layout) -> Path:
    """Split when the layout says so; when gpubench's module file is what fails (a type
    it could not name, a declaration read wrongly), once more as one translation unit."""
    if not layout.split:
        return _load_inline(request, sources, work, module, extra_cflags)
    try:
        return _load_split(request, sources, work, module, extra_cflags, layout)
    except CompileError as exc:
        if not _module_file_failed(exc):
            raise
        (work / SPLIT_REFUSED).write_text(_digest(layout.module_text))
        return _load_inline(request, sources, work, module, extra_cflags)


def _module_file_failed(error: CompileError) -> bool:
    log = error.log_path.read_text() if error.log_path and error.log_path.is_file() else ""
    text = f"{error.summary}\n{log}"
    return MODULE_FILE in text or "undefined symbol" in text


def _refused_split(work: Path) -> str | None:
    try:
        return (work / SPLIT_REFUSED).read_text().strip()
    except OSError:
        return None


def _digest(text: str | None) -> str:
    return hashlib.sha256((text or "").encode()).hexdigest()


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
    """load_inline into the work folder (a plain path, see plain_path): one main.cpp with
    torch/extension.h, the C++ sources and the module definition. The path of the .so it
    built; its own import of that .so is not used: see import_library."""
    from torch.utils.cpp_extension import load_inline

    cpp, cuda = _with_lines(sources.cpp), _with_lines(sources.cuda)
    implicit = {} if request.implicit_headers else _no_implicit_headers(load_inline)
    if implicit:
        # load_inline prepends this itself unless told not to. First in main.cpp, it is
        # what the precompiled header stands in for; sources include it anyway (the
        # module definition load_inline appends needs it).
        cpp.insert(0, f"#include <{FRONTEND}>")
    _forget_version(module)
    return _torch_build(work, lambda: load_inline(
        name=module, cpp_sources=cpp, cuda_sources=cuda or None,
        functions=list(request.functions), extra_include_paths=include_paths(request),
        extra_cuda_cflags=cuda_cflags(request), extra_cflags=extra_cflags,
        build_directory=str(work), with_cuda=request.with_cuda, verbose=False, **implicit))


def _load_split(request: BuildRequest, sources: Sources, work: Path, module: str,
                extra_cflags: list[str], layout: Layout) -> Path:
    """torch's load() on gpubench's module file, the binding (its prelude first) and the
    .cu, each its own translation unit in the work folder. Files are rewritten only when
    their text changed: ninja then recompiles only the edited one."""
    from torch.utils.cpp_extension import load

    files = [_write_if_changed(work / MODULE_FILE, layout.module_text)]
    if layout.binding:
        binding = [f"#include <{layout.prelude}>", *_with_lines(sources.cpp)]
        files.append(_write_if_changed(work / "binding.cpp", "\n".join(binding)))
    if sources.cuda:
        files.append(_write_if_changed(work / "cuda.cu", "\n".join(_with_lines(sources.cuda))))
    _forget_version(module)
    return _torch_build(work, lambda: load(
        name=module, sources=[str(path) for path in files], extra_cflags=extra_cflags,
        extra_cuda_cflags=cuda_cflags(request), extra_include_paths=include_paths(request),
        build_directory=str(work), with_cuda=request.with_cuda, verbose=False))


def _with_lines(entries) -> list[str]:
    """Each source's text after its `#line` directive: errors name the user's file."""
    return [line_directive(name, text) for _, name, text in entries]


def _write_if_changed(path: Path, text: str) -> Path:
    """Keep the file (and its mtime, which ninja reads) when its text is already this."""
    try:
        if path.read_text() == text:
            return path
    except OSError:
        pass
    path.write_text(text)
    return path


def _torch_build(work: Path, build) -> Path:
    """Run torch's builder; its failure as a CompileError naming the user's file:line, the
    whole compiler output kept in build-error.log."""
    try:
        built = build()
    except RuntimeError as exc:
        output = str(exc)
        log = Path(os.path.realpath(work)) / "build-error.log"
        log.write_text(output)
        errors = summarize_compiler_output(output) or [output.strip().splitlines()[-1]]
        raise CompileError("; ".join(errors), log) from None
    except ImportError as exc:
        raise CompileError(f"the built extension does not load: {exc}") from None
    return Path(built.__file__)
