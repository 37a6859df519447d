"""The work folder where ninja keeps an extension's objects between edits, kept never stale
and never stuck: what a killed build left is cleaned up, objects that include a header whose
content changed are deleted whatever their timestamps say, and paths ninja cannot take
literally are reached through a symlink with a plain, hashed name."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import tempfile
from pathlib import Path

from gpubench.build.cache import cache_root
from gpubench.build.diagnostics import CompileError
from gpubench.build.sources import Sources, header_hashes

STATE = "gpubench-state.json"  # in a work folder: the header hashes of its last good build
DIRTY = "gpubench-building"  # in a work folder while ninja runs: only a killed build leaves it
# Paths that ninja and the shell running its commands both take literally. torch
# escapes only spaces for ninja, so '$' (a ninja variable), quotes and ':' break
# the build; any path outside this set reaches ninja through a symlink instead.
_PLAIN_PATH = re.compile(r"[A-Za-z0-9_@%+=,./-]+")
# What a kill of the builder may leave half-written in a work folder.
_BUILD_PRODUCTS = (".o", ".so", ".d")
_NINJA_STATE = (".ninja_log", ".ninja_deps")


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



def recover(work: Path) -> None:
    """Undo what a killed build may have left: torch's `lock` baton (whose owner is gone,
    since we hold the folder's flock) and, after a kill mid-compile, half-written objects
    and ninja logs."""
    (work / "lock").unlink(missing_ok=True)
    if (work / DIRTY).exists():
        for path in work.iterdir():
            if path.suffix in _BUILD_PRODUCTS or path.name in _NINJA_STATE:
                path.unlink(missing_ok=True)
        (work / DIRTY).unlink(missing_ok=True)


def forget_changed_headers(work: Path, sources: Sources) -> None:
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
    current = header_hashes(sources.headers)
    deps = None
    if previous is not None and set(previous) == set(current) and previous != current:
        deps = _ninja_deps(work)
    for stale in objects_to_rebuild(objects, previous, current, deps):
        (work / stale).unlink(missing_ok=True)


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



def plain_path(path: Path) -> Path:
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
