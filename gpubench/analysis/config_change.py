"""Whether a point ran another config in NEW than in BASE, in a few words for `compare`.

Triton's autotuner benchmarks its config list again in every process and keeps the
fastest it saw there. Two runs of unchanged code can therefore run two configs: on an
H200, matmul/triton_tc 1024^3 ran config #3 (9.49 us) in one process and #5 (8.81 us) in
the next, and a 2-GPU run read +36% SLOWER against one GPU with #2 against #5 (journal,
issue 32, twenty-fourth run). A verdict on such a point is about the pick as much as about
the code, so the comparison says which configs ran (BuildInfo.config, run/worker/tune_apply.py).
The verdict is kept: a change of the kernel or of its list can be why the pick moved.
"""

from __future__ import annotations

# the "source" of a BuildInfo.config Triton's autotuner picked in the worker's process
# (written by run/worker/tune_apply.py).
AUTOTUNE = "autotune"
# In `ab`, the picks of two autotuners of one kernel that both sides then ran as one
# config ({"base": index, "new": index}; run/ab/shared_pick.py).
KEPT = "kept"


def config_of(result) -> dict:
    """The config a result's point ran with ({} when none): label, index and source
    ('autotune', 'pinned' or 'tune')."""
    config = result.build.config
    return config if isinstance(config, dict) else {}


def config_moved(base, new) -> bool:
    """Whether the two results name the config they ran, and it is another one."""
    old, fresh = config_of(base), config_of(new)
    return bool(old and fresh) and old.get("label") != fresh.get("label")


def autotune_moved(base, new) -> bool:
    """Whether Triton's autotuner ran another config in NEW than in BASE."""
    return config_moved(base, new) and AUTOTUNE in (config_of(base).get("source"),
                                                   config_of(new).get("source"))


def config_change(base, new) -> str:
    """'autotune picked config #6 in BASE, #14 in NEW' when the two results ran other
    configs of the same list; '' when the same, or when either side names none."""
    if not config_moved(base, new):
        return ""
    who = "autotune picked" if autotune_moved(base, new) else "ran"
    return f"{who} config {_name(config_of(base))} in BASE, {_name(config_of(new))} in NEW"


def _name(config: dict) -> str:
    index = config.get("index")
    return f"#{index}" if isinstance(index, int) else repr(str(config.get("label", "?")))


def shared_pick(result) -> str:
    """'one Triton kernel on both sides: both ran config #1; their autotuners kept #4 in
    BASE, #1 in NEW' for an `ab` result whose two sides ran one config in place of two
    picks; '' otherwise."""
    config = config_of(result)
    kept = config.get(KEPT)
    if not isinstance(kept, dict):
        return ""
    return (f"one Triton kernel on both sides: both ran config {_name(config)}, the faster "
            f"in both tunings; their autotuners kept #{kept.get('base')} in BASE, "
            f"#{kept.get('new')} in NEW")
