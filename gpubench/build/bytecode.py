"""Python's bytecode, cached by gpubench where the environment forbids writing it in place.

Why: an environment with PYTHONDONTWRITEBYTECODE=1 (the lent GPU machines' image sets it,
as many container images do, so that no __pycache__ lands in the installed tree) compiles
every module from source at every import. In each gpubench process on an H100 host that
is 3.9 s of `builtins.compile` for torch's ~1,600 modules (cProfile): `import torch` takes
4.3-5.5 s, against 2.2-2.7 s with a bytecode cache. A run imports torch in its parent and
in each worker, so without the cache this is most of a run's fixed cost
(benchmarks/startup.py).

What: when writing bytecode is off and no PYTHONPYCACHEPREFIX is set, gpubench's own
processes (the command, its workers and builders) write bytecode under a prefix of their
own, $GPUBENCH_BYTECODE_DIR or <cache>/bytecode, never beside the sources: what the
setting is for (nothing written into the installed tree) still holds. Only where torch
has no bytecode in place: a prefix would hide bytecode that is there. Programs gpubench
runs for the user (`gpubench profile`, ncu's target) keep their environment as it is.
GPUBENCH_BYTECODE_CACHE=0 leaves Python as configured everywhere.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import sys
from pathlib import Path

from gpubench.build.cache import cache_base

OFF_VARIABLE = "GPUBENCH_BYTECODE_CACHE"  # "0": never override Python's bytecode settings
DIR_VARIABLE = "GPUBENCH_BYTECODE_DIR"  # where; default <cache>/bytecode


def prefix_dir(env: dict | None = None) -> Path:
    env = os.environ if env is None else env
    chosen = env.get(DIR_VARIABLE)
    return Path(chosen) if chosen else cache_base(env) / "bytecode"


def _wanted(env: dict) -> bool:
    return env.get(OFF_VARIABLE, "1") != "0" and _torch_compiles_from_source()


@functools.cache
def _torch_compiles_from_source() -> bool:
    """Whether torch, the heavy import, has no bytecode in place (a prefix would hide
    bytecode that is there: Python then reads only the prefix's). Finding torch's files
    imports nothing."""
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        return False
    prefix, sys.pycache_prefix = sys.pycache_prefix, None  # the in-place path, not ours
    try:
        in_place = Path(importlib.util.cache_from_source(spec.origin))
    finally:
        sys.pycache_prefix = prefix
    return not in_place.exists()


def use_in_this_process() -> Path | None:
    """Cache bytecode under gpubench's prefix from now on in this process, if Python was
    told not to write it and was given no prefix; returns the prefix used, or None. Call
    before the heavy imports (torch): modules imported earlier are not recompiled."""
    if not (_wanted(os.environ) and sys.dont_write_bytecode and sys.pycache_prefix is None):
        return None
    prefix = prefix_dir()
    sys.pycache_prefix = str(prefix)
    sys.dont_write_bytecode = False
    return prefix


def for_child(env: dict) -> dict:
    """`env` for a gpubench process (worker, builder): with gpubench's prefix where the
    environment forbids bytecode and sets no prefix of its own; else unchanged."""
    overrides = child_overrides(env)
    if not overrides:
        return env
    child = {key: value for key, value in env.items() if key != "PYTHONDONTWRITEBYTECODE"}
    child["PYTHONPYCACHEPREFIX"] = overrides["PYTHONPYCACHEPREFIX"]
    return child


def child_overrides(env: dict) -> dict:
    """The variables to set in a gpubench child's environment `env` ({} when none): an
    empty PYTHONDONTWRITEBYTECODE is Python's "not set" (Dask's pre-spawn settings can only
    set variables, not remove them)."""
    forbidden = bool(env.get("PYTHONDONTWRITEBYTECODE"))  # a child gets no -B of ours
    if not (_wanted(env) and forbidden and not env.get("PYTHONPYCACHEPREFIX")):
        return {}
    return {"PYTHONDONTWRITEBYTECODE": "", "PYTHONPYCACHEPREFIX": str(prefix_dir(env))}
