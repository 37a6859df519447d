"""The compiler as a baseline: a `compiled` variant in every family, torch.compile of its
reference, checked and timed like any variant.

The question every hand-written kernel must answer is whether it beats what the compiler
already gives. So each family gets, without a line in its spec, a variant named `compiled`:
`torch.compile(family.reference, dynamic=False)` at the run's mode, called so that it
returns its output (the table marks that its time includes allocating it). A family opts
out with `Family(compiled=False)` (a reference torch.compile cannot trace, or one that is
not meant to be fast); a family that declares a variant named `compiled` itself keeps its
own.

Which runs it, and how, is the command's to say; the worker learns it from its
environment (a worker inherits the command's), so nothing is threaded through the layers:
  GPUBENCH_COMPILED       "on" (run it, on a CPU too), "off" (no such variant), unset
                          (on a GPU; on a CPU present but not run: see CPU_REASON)
  GPUBENCH_COMPILE_MODE   torch.compile's mode (MODES), "default" when unset
`gpubench run` settles GPUBENCH_COMPILED for its run (commands/run.py); `run_settings()`
sets both for the duration of a command.

Its build cell is the first call at each shape, compile included (Dynamo compiles once per
shape: dynamic=False); "cached" when Inductor's FX-graph cache served the graph, which it
keeps under $GPUBENCH_CACHE_DIR/inductor so that a fresh GPUBENCH_CACHE_DIR is a cold cache.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from gpubench.families.spec import Family, Machine, Variant
from gpubench.records.build_info import BuildInfo

NAME = "compiled"
KIND = "compiled"
ENV_CHOICE = "GPUBENCH_COMPILED"
ENV_MODE = "GPUBENCH_COMPILE_MODE"
# torch.compile's modes that keep an output the harness holds valid: "reduce-overhead"
# replays CUDA graphs whose outputs the next replay overwrites, which the harness's re-check
# of kept outputs would read as a wrong answer. "max-autotune" captures CUDA graphs too
# (see docs/guide.md); "max-autotune-no-cudagraphs" tunes without them.
MODES = ("default", "max-autotune-no-cudagraphs", "max-autotune")
# Dynamo compiles a function again for every new shape (dynamic=False) and by default stops
# after 8, falling back to eager without a word: a sweep's shapes each need their own. 256
# shapes is more than any run's sweep; past it the row would time eager code, so the limit
# is raised, not removed, and a run that passes it gets torch's own warning.
RECOMPILE_LIMIT = 256
# On a CPU, Inductor writes and compiles C++ for every shape: ~18 s a shape cold on the
# 2-core CI machine, minutes for a quick run of four families. So a CPU run has
# it only when asked; a GPU's compile (Triton) is a few seconds and cached across runs.
CPU_REASON = ("on a CPU only when asked (--compiled or --variants compiled): Inductor "
              "compiles C++ for each shape, ~20 s a shape on 2 cores")


@dataclass(frozen=True)
class CompiledVariant(Variant):
    """torch.compile of the family's reference, added by `with_compiled`."""

    reference: Callable | None = field(default=None, hash=False, compare=False)
    mode: str = "default"
    asked: bool = False  # GPUBENCH_COMPILED=on: run on a CPU too

    kind = KIND

    def unavailable_reason(self, dtype: str, machine: Machine) -> str | None:
        reason = super().unavailable_reason(dtype, machine)
        if reason:
            return reason
        return None if machine.has_cuda or self.asked else CPU_REASON


def with_compiled(family: Family) -> Family:
    """`family` with its `compiled` variant last, at the current settings, unless the family
    opts out, declares one of its own, or GPUBENCH_COMPILED=off. A spec is imported once per
    process, so one added under earlier settings is dropped first."""
    own = tuple(v for v in family.variants if not isinstance(v, CompiledVariant))
    choice = os.environ.get(ENV_CHOICE, "")
    if choice != "off" and family.compiled and all(v.name != NAME for v in own):
        mode = compile_mode()
        own += (CompiledVariant(
            NAME, returns=True, reference=family.reference, mode=mode, asked=choice == "on",
            description=f"torch.compile of the reference (Inductor, mode {mode}): the "
                        "compiler's kernel, the bar a hand-written one must beat"),)
    # Set in place, as discovery names it: dataclasses.replace would run the spec's checks
    # again on values they already normalised (a one-axis family's axes among them).
    object.__setattr__(family, "variants", own)
    return family


def compile_mode() -> str:
    mode = os.environ.get(ENV_MODE) or "default"
    if mode not in MODES:
        from gpubench.errors import UsageError

        raise UsageError(f"{ENV_MODE}={mode!r}: one of {', '.join(MODES)}")
    return mode


@contextlib.contextmanager
def run_settings(choice: str | None, mode: str | None = None):
    """GPUBENCH_COMPILED (on/off; None leaves it as it is) and GPUBENCH_COMPILE_MODE for
    the duration of a command, and the workers it starts; restored after (tests run
    commands in one process)."""
    saved = {name: os.environ.get(name) for name in (ENV_CHOICE, ENV_MODE)}
    os.environ.update(settings_environment(choice, mode))
    try:
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def settings_environment(choice: str | None, mode: str | None) -> dict[str, str]:
    """The variables run_settings sets (None: left as they are): also what a worker
    started before the run settled them (run/lanes/prestart.py) is given, from a guess."""
    return {name: value for name, value in ((ENV_CHOICE, choice), (ENV_MODE, mode))
            if value is not None}


def settle_for(machine: Machine, asked: bool | None, variants: tuple[str, ...]) -> str:
    """A run's GPUBENCH_COMPILED: --compiled/--no-compiled where given; else "on" when
    `compiled` is among --variants; else the environment's own GPUBENCH_COMPILED (a
    default of the user's, or a test suite's); else "on" on a GPU, "off" on a CPU."""
    if asked is not None:
        return "on" if asked else "off"
    if NAME in variants:
        return "on"
    if os.environ.get(ENV_CHOICE) in ("on", "off"):
        return os.environ[ENV_CHOICE]
    return "on" if machine.has_cuda else "off"


# ---------------------------------------------------------------- inside the worker


def inductor_cache_dir() -> str:
    """Where Inductor keeps what it compiled: under gpubench's cache, so that a fresh
    GPUBENCH_CACHE_DIR is a cold cache for the compiled variant as for every build."""
    from gpubench.build.cache import cache_base

    return str(cache_base() / "inductor")


def worker_environment() -> dict:
    """Set in every worker's environment before it starts (run/lanes/worker_process.py): once
    any of torch's code has asked Inductor for its cache folder, Inductor has written its
    default (/tmp/torchinductor_$USER) into the process's environment, and a later setting
    comes too late. Seen: a run whose worker first measured the ceilings compiled into
    one folder, the next run into another, and missed the cache.

    TORCHINDUCTOR_COMPILE_THREADS=1: any torch.compile in a worker (this variant's, or a
    leaderboard submission's own) compiles in-process. Inductor's pool of compile workers
    would be child processes that outlive the point, with a reader thread
    (`InductorSubproc`) the health check blames on the variant (pmpp_v2's sort and vectorsum
    solutions on an H200). A user's own setting wins."""
    return {"TORCHINDUCTOR_CACHE_DIR": inductor_cache_dir(),
            "TORCHINDUCTOR_COMPILE_THREADS": os.environ.get("TORCHINDUCTOR_COMPILE_THREADS",
                                                            "1")}


def load(variant: CompiledVariant) -> tuple[Callable, dict]:
    """The compiled callable (compiling happens on its first call at each shape) and its
    build facts. One subprocess-free compile: Inductor's pool of compile workers would be
    processes that outlive a point, and a reference has a few kernels to compile."""
    import torch

    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", inductor_cache_dir())  # in-process use
    torch._inductor.config.compile_threads = 1
    no_progress_monitor()
    dynamo = torch._dynamo.config
    dynamo.recompile_limit = max(dynamo.recompile_limit, RECOMPILE_LIMIT)
    dynamo.accumulated_recompile_limit = max(dynamo.accumulated_recompile_limit,
                                             RECOMPILE_LIMIT)
    compiled = torch.compile(variant.reference, dynamic=False,
                             mode=None if variant.mode == "default" else variant.mode)
    return compiled, BuildInfo(compile_s=0.0, mode=variant.mode)


def no_progress_monitor() -> None:
    """Inductor draws tqdm progress bars while it compiles on a GPU, and tqdm's first bar
    starts a `tqdm_monitor` thread that lives on: the worker's health check then sees a
    thread the point left running and fails it (H200, torch 2.11, every cold compile).
    tqdm's documented switch, monitor_interval = 0, starts no monitor. Set in every
    worker at its start (run/worker/process.py): a leaderboard submission that calls
    torch.compile itself starts the same thread (pmpp_v2 sort)."""
    try:
        import tqdm
    except ImportError:
        return
    tqdm.tqdm.monitor_interval = 0


def cache_events() -> dict:
    """Inductor's FX-graph cache hits and misses so far in this process (zeros before
    torch.compile was first used: torch._dynamo is not imported for that)."""
    utils = sys.modules.get("torch._dynamo.utils")
    counters = utils.counters.get("inductor", {}) if utils is not None else {}
    return {"hit": counters.get("fxgraph_cache_hit", 0),
            "miss": counters.get("fxgraph_cache_miss", 0)}


def first_call_build(build: BuildInfo, first_call_s: float, before: dict) -> BuildInfo:
    """The build cell of a compiled point: its first call at this shape, compile included;
    cached when the FX-graph cache served every graph compiled for it (None when nothing
    compiled: Dynamo had this shape already in this process)."""
    after = cache_events()
    hits, misses = (after[k] - before[k] for k in ("hit", "miss"))
    cached = None if not hits and not misses else not misses
    # a new shape's own first call: not the loaded callable's reuse
    return replace(build, reused_in_process=False, compile_s=first_call_s, cached=cached)


def compile_failure(exc: BaseException) -> str | None:
    """The SKIPPED reason when torch.compile itself failed (no C++ compiler for Inductor's
    CPU code, an op Dynamo cannot trace, ...), None for any other error: the reference ran
    eagerly to make the check's answer, so the compiler is what failed here."""
    failed = type(exc).__module__.startswith(("torch._dynamo", "torch._inductor"))
    if not failed:
        return None
    first = next((line.strip() for line in str(exc).splitlines() if line.strip()), "")
    return f"torch.compile failed here: {type(exc).__name__}: {first[:300]}"
