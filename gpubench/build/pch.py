"""A precompiled torch/extension.h of gpubench's own, shared by every C++ build with the
same compiler flags.

Why: every C++ translation unit of a torch extension includes torch/extension.h, and
parsing it is most of a build: on a 2-core EPYC, main.cpp of kernels/square takes 42 s
at -O3, of which ~18 s is parsing the header; with a precompiled header (PCH) the same
compile takes 22 s (the rest is template instantiation and code generation, which a PCH
cannot keep). torch's own `use_pch` writes the PCH into torch's site-packages and
deletes it again whenever a load_inline call passes use_pch=False, so gpubench keeps its
own, in <cache>/pch/<key>/.

How gcc finds it: for `#include <torch/extension.h>` gcc looks, in each include folder in
turn, for `torch/extension.h.gch` before `torch/extension.h`; the folder holding ours is
passed with -I, which gcc searches before torch's own -isystem folders (but after the
family's folders, so a family that ships its own torch/extension.h gets its own). Beside
the .gch lies a symlink to the real header: a second `#include <torch/extension.h>`
(gpubench/binding.h has one) must find a file there, or gcc fails with "No such file".

Rules that keep it safe:
- gcc itself refuses a PCH built with other flags or by another compiler binary and
  then reads the header as usual ("an unusable .gch is ignored", -Winvalid-pch says
  why), so a wrong PCH costs time, never correctness. It does NOT notice headers that
  changed since, so the PCH records every header it read (gcc's -MD list, ~5400 files,
  ~30 ms to stat) and is deleted before a compile when any of them changed;
- it is built with the flags of the real compile (parsed from torch's build.ninja), less
  -DTORCH_EXTENSION_NAME (gcc accepts a macro defined now that the PCH never mentions,
  so one PCH serves every extension) and the -I folders (the family's, ours);
- one builder at a time (a non-blocking flock: a build that finds another process busy
  with the PCH compiles without it rather than wait), into a temp file renamed into
  place, so gcc never sees half a .gch;
- after building, gcc is asked (a probe that stops right after the #include, ~0.1 s)
  whether it really uses the PCH with the real flags; a refused PCH is deleted and
  remembered, so it is not rebuilt for nothing at every build.

Cost: the PCH is built once per machine, compiler, torch version and flag set (~50 s and
~800 MB on disk here, measured: 790 MB), in parallel with the build that needed it.
Set GPUBENCH_PCH=0 to build without it.
"""

from __future__ import annotations

import contextlib
import fcntl
import functools
import hashlib
import json
import os
import shlex
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from gpubench.files import atomic_write

# Bump when the way PCHs are made changes, to invalidate every PCH.
SCHEMA = 1
MARKER = "pch.json"  # written before the .gch is renamed into place
FAILED = "pch-failed.json"  # a PCH that did not build or that gcc refused, for these flags
LOG = "pch-build.log"


def probe_source(header_name: str) -> str:
    """The header, then a quoted include that cannot exist: gcc stops there, right after
    reading the PCH."""
    return f'#include <{header_name}>\n#include "gpubench-pch-probe-stops-here.h"\n'


# ---------------------------------------------------------------- pure helpers


def enabled() -> bool:
    """False when GPUBENCH_PCH=0 (or "no"/"off"): build without a PCH."""
    return os.environ.get("GPUBENCH_PCH", "1").strip().lower() not in ("0", "no", "off", "false")


def pch_key(facts: dict[str, str]) -> str:
    """The name of a PCH folder: everything known before a build that decides its flags."""
    digest = hashlib.sha256(f"schema:{SCHEMA}".encode())
    for key in sorted(facts):
        digest.update(f"\0{key}={facts[key]}".encode())
    return digest.hexdigest()[:16]


def pch_flags(cflags: list[str]) -> list[str]:
    """The real compile's flags less what must not or need not be in a shared PCH: the
    extension's name (one PCH for all extensions) and the -I folders (the family's, the
    PCH's own); torch passes its own folders with -isystem, which stay."""
    kept, skip_next = [], False
    for flag in cflags:
        if skip_next:
            skip_next = False
        elif flag == "-I":
            skip_next = True
        elif not (flag.startswith("-DTORCH_EXTENSION_NAME=") or flag.startswith("-I")):
            kept.append(flag)
    return kept


def parse_depfile(text: str) -> list[str]:
    """The prerequisites of a make-style depfile (gcc -MD): `target: a.h b.h \\` lines."""
    body = text.replace("\\\n", " ")
    _, _, prerequisites = body.partition(": ")
    return [path.replace("\\ ", " ") for path in _split_escaped(prerequisites)]


def _split_escaped(text: str) -> list[str]:
    """Split on spaces that are not escaped with a backslash (gcc escapes them in paths)."""
    parts, current, escaped = [], "", False
    for char in text:
        if escaped:
            current += char
            escaped = False
        elif char == "\\":
            current += char
            escaped = True
        elif char.isspace():
            if current:
                parts.append(current)
            current = ""
        else:
            current += char
    if current:
        parts.append(current)
    return parts


def probe_says_used(output: str) -> bool:
    """gcc -H prints `! path.gch` for a PCH it uses, `. path.h` for a header it reads."""
    return any(line.startswith("! ") and line.rstrip().endswith(".gch")
               for line in output.splitlines())


# ---------------------------------------------------------------- compiler facts


@functools.lru_cache(maxsize=8)
def gcc_identity(cxx: tuple[str, ...]) -> str | None:
    """`gcc version ...` of the compiler, or None when it is not gcc (clang has no .gch
    search) or does not run. One `cxx -v` (~5 ms), once per process and compiler."""
    try:
        done = subprocess.run([*cxx, "-v"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return None
    output = done.stdout + done.stderr
    versions = [line for line in output.splitlines() if line.startswith("gcc version ")]
    if not versions or "clang" in output.lower():
        return None
    return versions[0].strip()


def _stat(path: str) -> list[int] | None:
    try:
        status = os.stat(path)
    except OSError:
        return None
    return [status.st_mtime_ns, status.st_size]


# ---------------------------------------------------------------- one PCH


@dataclass
class Pch:
    """The PCH of one flag set: `directory` holds torch/extension.h.gch, the symlink to
    the real header, the marker and the log."""

    directory: Path
    cxx: tuple[str, ...]
    flags: tuple[str, ...]
    header: Path  # the real header, e.g. <torch>/include/torch/extension.h
    identity: str  # gcc_identity(cxx)
    header_name: str = "torch/extension.h"  # as sources include it

    @property
    def gch(self) -> Path:
        return self.directory / f"{self.header_name}.gch"

    def recipe(self) -> dict:
        """What the PCH was built from; a marker or failure record for other flags is void."""
        return {"schema": SCHEMA, "cxx": list(self.cxx), "flags": list(self.flags),
                "header": str(self.header), "compiler": self.identity}

    def problem(self) -> str | None:
        """Why the .gch in place must not be used (None: it may). Never trusts a .gch
        whose headers changed since: gcc would use it all the same."""
        if not self.gch.is_file():
            return "absent"
        try:
            recorded = json.loads((self.directory / MARKER).read_text())
        except (OSError, ValueError):
            return "its marker is missing or unreadable"
        if recorded.get("recipe") != self.recipe():
            return "built with other flags or compiler"
        for path, stat in recorded.get("deps", []):
            if _stat(path) != stat:
                return f"{path} changed since it was built"
        return None

    def failed_before(self) -> bool:
        """True when this very recipe failed or was refused by gcc: not worth 50 s again.
        (Delete <cache>/pch, or change flags, to try again.)"""
        try:
            return json.loads((self.directory / FAILED).read_text()).get("recipe") == \
                self.recipe()
        except (OSError, ValueError):
            return False

    def start(self) -> PchBuild | None:
        """Make sure no stale .gch can be used; start building a fresh one when there is
        none. Returns the running build, or None when the PCH is usable, busy (another
        process builds it: this build goes on without) or not worth trying."""
        self.directory.mkdir(parents=True, exist_ok=True)
        # Held until PchBuild.finish/abort, across the extension's own build.
        lock = open(self.directory.with_name(f"{self.directory.name}.flock"), "a+")  # noqa: SIM115
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            lock.close()
            self._drop_if_stale()  # the builder drops it too; both may, harmlessly
            return None
        if self.problem() is None:
            lock.close()
            return None
        _unlink(self.gch)  # stale or absent: gcc must not see an old one meanwhile
        if self.failed_before():
            lock.close()
            return None
        for leftover in self.gch.parent.glob(f"{self.gch.name}.tmp-*"):
            _unlink(leftover)  # a builder killed midway (a build timeout)
        try:
            return PchBuild(self, lock)
        except OSError:  # no compiler to start, a full disk: build without
            lock.close()
            return None

    def _drop_if_stale(self) -> None:
        problem = self.problem()
        if problem not in (None, "absent"):
            _unlink(self.gch)


class PchBuild:
    """A PCH being compiled beside the extension's own build, holding the PCH's flock."""

    def __init__(self, pch: Pch, lock):
        self.pch, self.lock = pch, lock
        self.temp = pch.gch.with_name(f"{pch.gch.name}.tmp-{os.getpid()}")
        self.depfile = self.temp.with_name(f"{self.temp.name}.d")
        self.temp.parent.mkdir(parents=True, exist_ok=True)
        self.log = open(pch.directory / LOG, "w")  # noqa: SIM115 (the compiler's output, until finish)
        command = [*pch.cxx, *pch.flags, "-x", "c++-header", str(pch.header),
                   "-o", str(self.temp), "-MD", "-MF", str(self.depfile)]
        self.log.write(shlex.join(command) + "\n")
        self.log.flush()
        # Same session as the build: a build timeout that kills the worker's session
        # kills this compiler too, and the temp file it leaves is removed next time.
        self.started = time.monotonic()
        self.process = subprocess.Popen(command, stdout=self.log, stderr=subprocess.STDOUT,
                                        stdin=subprocess.DEVNULL, cwd=pch.directory)

    def finish(self, probe_command: list[str] | None) -> str:
        """Wait for the compiler, then put the PCH in place and check with `probe_command`
        (the real compile's compiler and flags) that gcc uses it. Returns what happened."""
        try:
            code = self.process.wait()
            seconds = time.monotonic() - self.started
            if code != 0:
                self._record_failure(f"the compiler exited with {code}; see {LOG}")
                return f"PCH build failed (exit {code})"
            self._install(seconds)
            if probe_command is not None and not self._used_by(probe_command):
                _unlink(self.pch.gch)
                self._record_failure("gcc does not use it with the real flags (-Winvalid-pch)")
                return "PCH refused by gcc"
            return "PCH built"
        finally:
            self.abort()

    def abort(self) -> None:
        """Stop the compiler if it still runs, drop temp files and the lock."""
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        for path in (self.temp, self.depfile):
            _unlink(path)
        self.log.close()
        with contextlib.suppress(OSError):
            self.lock.close()  # closing the file releases the flock

    def _install(self, seconds: float) -> None:
        """Marker first, then the symlink, then the .gch (atomic renames): a reader that
        sees the .gch also sees the marker that vouches for it."""
        pch = self.pch
        deps = parse_depfile(self.depfile.read_text())
        marker = {"recipe": pch.recipe(), "seconds": round(seconds, 1),
                  "deps": [[path, _stat(path)] for path in deps]}
        atomic_write(pch.directory / MARKER, json.dumps(marker))
        link = pch.directory / pch.header_name
        if not (link.is_symlink() and os.readlink(link) == str(pch.header)):
            temporary = link.with_name(f"{link.name}.tmp-{os.getpid()}")
            _unlink(temporary)
            temporary.symlink_to(pch.header)
            os.replace(temporary, link)
        os.replace(self.temp, pch.gch)

    def _used_by(self, probe_command: list[str]) -> bool:
        """Ask gcc, with the real flags, whether it takes the PCH (stops at a missing
        include right after: ~0.1 s)."""
        command = [*probe_command, "-H", "-Winvalid-pch", "-fsyntax-only", "-x", "c++", "-"]
        try:
            done = subprocess.run(command, input=probe_source(self.pch.header_name),
                                  capture_output=True, text=True, timeout=120,
                                  cwd=self.pch.directory)
        except (OSError, subprocess.TimeoutExpired):
            return False
        self.log.write(f"probe: {shlex.join(command)}\n{done.stderr}")
        return probe_says_used(done.stderr)

    def _record_failure(self, why: str) -> None:
        atomic_write(self.pch.directory / FAILED,
                          json.dumps({"recipe": self.pch.recipe(), "why": why}))


def _unlink(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
