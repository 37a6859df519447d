"""Inside the worker: which config of its space a task's variant runs, and running it so.

A task names a config as 'VARIANT@INDEX' (`gpubench tune`); a plain variant name runs the
config pinned for this GPU, dtype and shape when a pinned file exists (tune/pinned.py),
else the variant as written (a Triton autotuner with its whole list); a pinned config no
longer in the space is an ERROR that says so (running another one would hide it).
Applying a config:
- Triton: the module's Autotuner keeps that one config (`configs = [config]`): with one
  config Triton's Autotuner runs it without benchmarking, with its pre-hooks as usual;
  the full list is restored for a task that runs the variant as written;
- CUDA: the variant is built with the config's -D flags (a build of its own, cached; on
  a machine without CUDA, the CPU sources are built once, without them).
After the first call, the compiled Triton kernel's resources (registers, spills, shared
memory, warps) and the occupancy they allow go to the result's build facts. A Triton
variant run as written records the config its autotuner picked for the call (source
"autotune"): the autotuner benchmarks its list again in every process, and two processes
can pick differently (a 1024^3 matmul 8-36% apart between runs of unchanged code on an
H200, journal, issue 32), which `compare` then names instead of leaving it to look like
the code's doing.
"""

from __future__ import annotations

import contextlib
import dataclasses
from dataclasses import dataclass, field, replace
from pathlib import Path

from gpubench.analysis.config_change import AUTOTUNE
from gpubench.errors import SpecError
from gpubench.families.discovery import import_kernel_file
from gpubench.families.spec import CudaVariant, Family, Machine, TritonVariant, Variant
from gpubench.records.build_info import BuildInfo
from gpubench.records.point import Task
from gpubench.tune import pinned as P
from gpubench.tune.occupancy import SmLimits, occupancy
from gpubench.tune.space import (
    TuneConfig,
    autotuners,
    declared_space,
    define_flags,
    space_problem,
    split_name,
    triton_space,
)

ALL_CONFIGS = "_gpubench_all_configs"


@dataclass
class Tuned:
    """The variant a task runs, and the config it runs with (None: as written)."""

    variant: Variant
    config: TuneConfig | None = None
    source: str = ""  # "tune" or "pinned"
    note: str = ""  # said under `run`'s table
    autotuner: object = None  # a Triton variant's Autotuner
    facts: dict = field(default_factory=dict)  # registers, shared memory, occupancy
    picked: TuneConfig | None = None  # the autotuner's pick, when run as written
    # What the autotuner timed when the first call tuned it, by config label (its own
    # unit, ms); empty when that call reused an earlier pick or nothing was tuned.
    autotune_times: dict[str, float] = field(default_factory=dict)

    def build(self, build: BuildInfo | None = None) -> BuildInfo:
        """`build` (the result's build facts) with the config and its note added; a note
        of the build's own (a slow-build hint) is kept before it."""
        out = build or BuildInfo()
        if self.note:
            out = replace(out, note="; ".join(n for n in (out.note, self.note) if n))
        if self.config is not None:
            out = replace(out, config={**self.config.to_dict(), "source": self.source,
                                       **self.facts})
        elif self.picked is not None:
            out = replace(out, config={**self.picked.to_dict(), "source": AUTOTUNE})
        return out


class Tuning:
    def __init__(self, machine: Machine):
        self.machine = machine
        self.facts: dict[tuple, dict] = {}  # (folder, variant, label) -> resources
        self._device_name: str | None = None  # asked of CUDA on first use (a pin lookup)

    @property
    def device_name(self) -> str:
        """This GPU's name, which pins are filed under ('' on a CPU). Asked lazily: the
        parent reads spaces through this class too and must not start a CUDA context."""
        if self._device_name is None:
            self._device_name = _device_name() if self.machine.has_cuda else ""
        return self._device_name

    @device_name.setter
    def device_name(self, name: str) -> None:
        self._device_name = name

    def resolve(self, family: Family, task: Task) -> Tuned:
        """The task's variant with its config applied (see the module docstring)."""
        base, index = split_name(task.variant)
        variant = family.variant(base)
        space, autotuner = self.space(family, variant)
        tuned = Tuned(variant, autotuner=autotuner)
        if index is not None:
            if index >= len(space):
                raise SpecError(f"variant '{base}' has {len(space)} configs; no config {index}")
            tuned.config, tuned.source = space[index], "tune"
        elif space:
            self._pinned(family, task, space, tuned)
        self._apply(tuned)
        return tuned

    def space(self, family: Family, variant: Variant) -> tuple[tuple[TuneConfig, ...], object]:
        """The variant's config space (empty: none) and, for Triton, its Autotuner."""
        if isinstance(variant, TritonVariant):
            module = import_kernel_file(family.directory / variant.module, "gpubench_triton")
            found = autotuners(vars(module))
            if len(found) > 1:
                names = ", ".join(name for name, _ in found)
                raise SpecError(f"{variant.module} defines several autotuned kernels ({names});"
                                " tune reads one per variant: split them into modules")
            if not found:
                return (), None
            tuner = found[0][1]
            return declared(tuner), tuner
        space = getattr(variant, "tune", None)
        if isinstance(variant, CudaVariant) and space is not None:
            problem = space_problem(space)
            if problem:
                raise SpecError(f"variant '{variant.name}': {problem}")
            return declared_space(space), None
        return (), None

    def _pinned(self, family: Family, task: Task, space, tuned: Tuned) -> None:
        path = P.pinned_path(Path(task.family_dir), self.device_name, tuned.variant.name,
                             task.dtype, task.shape.slug())
        if not path.is_file():
            return
        try:
            pinned = P.Pinned.from_json(path.read_text())
        except (OSError, ValueError) as exc:
            tuned.note = f"pinned config file {path} ignored: {exc}"
            return
        config = P.find_config(pinned, space)
        if config is None:  # loud: running another config than the one tuned hides it
            raise SpecError(f"the pinned config '{pinned.config.label}' is no longer in the "
                            f"kernel's space: tune again, or delete {path}")
        tuned.config, tuned.source = config, "pinned"
        tuned.note = f"ran the pinned config {config.label} (gpubench tune: {path})"

    def _apply(self, tuned: Tuned) -> None:
        if tuned.autotuner is not None:
            original = _all_configs(tuned.autotuner)
            chosen = [original[tuned.config.index]] if tuned.config else list(original)
            tuned.autotuner.configs = chosen
        elif tuned.config is not None and self.machine.has_cuda:
            # The flags are the .cu sources' macros: a CPU build (cpu=...) has none of them,
            # so every config of it is the one build.
            variant = tuned.variant
            tuned.variant = dataclasses.replace(
                variant, cuda_flags=(*variant.cuda_flags, *define_flags(tuned.config)))

    @contextlib.contextmanager
    def first_call(self, family: Family, tuned: Tuned):
        """Around the checked first call: the Triton kernel it compiled, and its resources."""
        key = (str(family.directory), tuned.variant.name,
               tuned.config.label if tuned.config else "")
        before = _compiled(tuned.autotuner) if tuned.config is not None else None
        watched = _forget_pick(tuned.autotuner) if tuned.config is None else False
        timed_before = _timings_table(tuned.autotuner)
        yield
        if tuned.config is None:
            tuned.picked = _picked(tuned.autotuner) if watched else None
            if watched:
                tuned.autotune_times = _times_if_tuned(tuned.autotuner, timed_before)
            return
        if key not in self.facts and before is not None:
            new = [k for k in _compiled(tuned.autotuner) if id(k) not in before]
            if len(new) == 1:
                self.facts[key] = self._resources(new[0])
        tuned.facts = self.facts.get(key, {})

    def _resources(self, kernel) -> dict:
        with contextlib.suppress(Exception):  # handles are loaded on the first launch
            if getattr(kernel, "n_regs", None) is None:
                kernel._init_handles()
        metadata = getattr(kernel, "metadata", None)
        regs, shared = getattr(kernel, "n_regs", None), getattr(metadata, "shared", None)
        warps = getattr(metadata, "num_warps", None)
        facts = {"registers": regs, "spills": getattr(kernel, "n_spills", None),
                 "shared_bytes": shared}
        limits = _sm_limits() if self.machine.has_cuda else None
        if limits and warps:
            facts["occupancy"] = occupancy(limits, warps * 32, regs, shared)
        return facts


def _all_configs(tuner) -> list:
    """The autotuner's own list, as the module declared it: kept on the object the first
    time (narrowing replaces `configs`), so a module imported again (--watch) starts anew."""
    if ALL_CONFIGS not in vars(tuner):
        setattr(tuner, ALL_CONFIGS, list(tuner.configs))
    return getattr(tuner, ALL_CONFIGS)


def _forget_pick(autotuner) -> bool:
    """Clear the autotuner's last pick before the call, so that what is there after it
    is this call's (Triton sets `best_config` on every call, and only there: before a
    process's first call the attribute does not exist); False when there is no pick to
    read: no autotuner, or a list of one config."""
    if autotuner is None or len(getattr(autotuner, "configs", ())) < 2:
        return False
    with contextlib.suppress(Exception):  # bookkeeping: it never fails a point
        autotuner.best_config = None
        return True
    return False


def _picked(autotuner) -> TuneConfig | None:
    """The config the autotuner ran the call with, as one of its list's TuneConfigs (None
    when the call did not go through it, or when the module's "Autotuner" is not one whose
    pick can be read: bookkeeping never fails a point)."""
    try:
        return listed_config(autotuner, getattr(autotuner, "best_config", None))
    except Exception:
        return None


def listed_config(autotuner, config) -> TuneConfig | None:
    """A Triton Config as the TuneConfig of the autotuner's declared list (None: not in it)."""
    if config is None:
        return None
    configs = _all_configs(autotuner)
    index = next((i for i, c in enumerate(configs) if c is config), None)
    if index is None:  # early_config_prune may hand back copies of the list's configs
        index = next((i for i, c in enumerate(configs) if str(c) == str(config)), None)
    return declared(autotuner)[index] if index is not None else None


def declared(autotuner) -> tuple[TuneConfig, ...]:
    """The autotuner's list as the module declared it, as TuneConfigs."""
    return triton_space(_Listed(_all_configs(autotuner)))


def declared_config(autotuner, label: str):
    """The autotuner's own Config object whose label is `label` (None: not in its list)."""
    return next((c for c, t in zip(_all_configs(autotuner), declared(autotuner), strict=True)
                 if t.label == label), None)


def pin(autotuner, label: str) -> bool:
    """Make the autotuner run config `label` from its next call on, without tuning (a list
    of one: see the module docstring); False when its list has no such config. The next
    task's resolve() gives it its whole list back."""
    config = declared_config(autotuner, label)
    if config is None:
        return False
    autotuner.configs = [config]
    return True


def _timings_table(autotuner) -> dict | None:
    """The autotuner's last benchmark table (config -> time), None when there is none to
    read (a module's own class of that name may raise: bookkeeping never fails a point)."""
    try:
        table = getattr(autotuner, "configs_timings", None)
    except Exception:
        return None
    return table if isinstance(table, dict) else None


def _times_if_tuned(autotuner, before) -> dict[str, float]:
    """{label: time} of the tuning the first call ran; {} when it ran none. Triton's
    Autotuner replaces `configs_timings` each time it benchmarks its list, so the same
    object as before the call means a pick reused (or a list pruned to one config)."""
    try:
        timings = _timings_table(autotuner)
        if timings is None or timings is before:
            return {}
        times = {}
        for config, timing in timings.items():
            listed = listed_config(autotuner, config)
            value = timing[0] if isinstance(timing, (list, tuple)) else timing  # p50 first
            if listed is not None and isinstance(value, (int, float)):
                times[listed.label] = float(value)
        return times
    except Exception:  # bookkeeping: it never fails a point
        return {}


class _Listed:
    """An object with `.configs`, for triton_space over a saved list."""

    def __init__(self, configs: list):
        self.configs = configs


def jit_function(autotuner, attribute: str):
    """The object under the autotuner, through any heuristics wrapped around it (each
    holds the next in `.fn`), that has `attribute` (Triton's JITFunction: its
    device_caches, its cache_key); the innermost `.fn` when none has it."""
    fn = getattr(autotuner, "fn", None)
    while fn is not None and not hasattr(fn, attribute) and hasattr(fn, "fn"):
        fn = fn.fn
    return fn


def _compiled(autotuner) -> dict[int, object] | None:
    """id -> kernel of every kernel compiled so far from the autotuner's JIT function (None
    under the interpreter, which compiles nothing). Triton 3.x keeps them per device:
    device_caches[device][0] is {key: CompiledKernel}."""
    caches = getattr(jit_function(autotuner, "device_caches"), "device_caches", None)
    if caches is None:
        return None
    kernels = {}
    for entry in list(caches.values()):
        table = entry[0] if isinstance(entry, tuple) else entry
        if isinstance(table, dict):
            kernels.update((id(k), k) for k in table.values())
    return kernels


def _device_name() -> str:
    import torch

    return torch.cuda.get_device_name()


def _sm_limits() -> SmLimits | None:
    import torch

    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    regs = getattr(props, "regs_per_multiprocessor", None)
    shared = getattr(props, "shared_memory_per_multiprocessor", None)
    threads = getattr(props, "max_threads_per_multi_processor", None)
    return SmLimits(regs, shared, threads) if regs and shared and threads else None
