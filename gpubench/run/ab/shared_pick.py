"""One autotune pick for both sides of a pair whose Triton kernel is the same.

Triton's autotuner times its config list again in every module that holds it, and two
tunings of one kernel can keep two configs: in an A/A, an autotuned matmul's two sides
kept tiles 18% apart and the pairs read FASTER for code that was the same on both sides
(journal, issue 63). Such a verdict is about the autotuner's draw, not the code.

So when both sides hold the same kernel (Triton's own cache key of the JIT function: its
source and the functions it calls) with the same config list, and their tunings kept
different configs, both sides run one config: the one fastest in the two tunings' times
together (each side timed every config once; their mean per config is a better look than
either alone), NEW's pick when the times cannot be read. When the kernel differs, each
side keeps its own pick, as it would in use. The verdict's reason says which of the two
happened (rows.py, analysis/config_change.py).
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, replace

from gpubench.analysis.config_change import AUTOTUNE, KEPT
from gpubench.records.worker_result import WorkerResult
from gpubench.run.worker.tune_apply import Tuned, declared, jit_function, pin
from gpubench.tune.space import TuneConfig


@dataclass(frozen=True)
class SharedPick:
    """The config both sides of a pair run, and what each side's autotuner had kept."""

    config: TuneConfig
    base_pick: TuneConfig
    new_pick: TuneConfig

    def applied(self, result: WorkerResult) -> WorkerResult:
        """A side's checked result, its build facts naming the config it now runs and the
        two picks (`kept`, by index), which the verdict's reason tells
        (analysis/config_change.shared_pick)."""
        config = {**self.config.to_dict(), "source": AUTOTUNE,
                  KEPT: {"base": self.base_pick.index, "new": self.new_pick.index}}
        return replace(result, build=replace(result.build, config=config))


def share_pick(base: Tuned | None, new: Tuned | None) -> SharedPick | None:
    """Pin both sides to one config when their autotuners kept two for the same kernel
    (see the module docstring); None, and each side left on its own pick, otherwise. A
    kernel module's own class named Autotuner may raise anywhere: that is no sharing,
    never a failed point."""
    if base is None or new is None or base.picked is None or new.picked is None:
        return None
    if base.picked.label == new.picked.label:
        return None
    try:
        if not same_kernel(base.autotuner, new.autotuner):
            return None
        label = jointly_fastest(base.autotune_times, new.autotune_times) or new.picked.label
        config = next(c for c in declared(new.autotuner) if c.label == label)
        if pin(base.autotuner, label) and pin(new.autotuner, label):
            return SharedPick(config, base.picked, new.picked)
    except Exception:
        pass
    for side in (base, new):  # as they were: each on its own pick
        with contextlib.suppress(Exception):
            pin(side.autotuner, side.picked.label)
    return None


def jointly_fastest(base: dict[str, float], new: dict[str, float]) -> str | None:
    """The config with the least mean of the two tunings' times (None: no config timed by
    both)."""
    both = [label for label in new if label in base]
    return min(both, key=lambda label: base[label] + new[label], default=None)


def same_kernel(first, second) -> bool:
    """Whether two autotuners wrap the same Triton kernel with the same config list: the
    JIT functions' cache keys are equal (neither unreadable) and so are the lists."""
    key = kernel_key(first)
    return key is not None and key == kernel_key(second) and \
        [c.label for c in declared(first)] == [c.label for c in declared(second)]


def kernel_key(autotuner) -> str | None:
    """Triton's cache key of the JIT function under the autotuner (and any heuristics
    around it): a hash of its source, the functions it calls and its first line; None
    when there is none to read."""
    try:
        key = getattr(jit_function(autotuner, "cache_key"), "cache_key", None)
    except Exception:  # a kernel whose dependencies cannot be resolved, a stand-in class
        return None
    return key if isinstance(key, str) and key else None
