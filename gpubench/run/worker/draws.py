"""A point's ground truth, drawn from seeds: its inputs, their checks, and the reference.

The worker keeps no reference and no copy of the inputs while variant code runs
(run/worker/execute.py): after a variant's calls, the inputs are drawn again here from the seed
that made them, under torch's seeded generator, and the float64 reference is made from
that fresh draw. So a family's make_inputs must give the same values for the same seed,
which make_group checks once per point.
"""

from __future__ import annotations

from dataclasses import replace

from gpubench.errors import SpecError
from gpubench.families import sideeffects
from gpubench.families.spec import Family
from gpubench.records.point import Task
from gpubench.run.worker.invocation import Group
from gpubench.run.worker.rotation import InputSet


def make_group(family: Family, task: Task, device: str, key: tuple) -> Group:
    """The point's inputs (check: the task's seed; timing: the next) and output buffer.
    The inputs must come back the same from their seed, as the check draws them again
    after a variant's calls; the reference made here only sizes `out` and is let go."""
    import torch

    dtype = getattr(torch, task.dtype)
    check_inputs = draw_inputs(family, task, device, task.seed)
    _require_reproducible(family, task, device, check_inputs)
    time_inputs = draw_inputs(family, task, device, task.seed + 1)
    # Made before the output: a leaderboard family's make_output reads what its reference
    # returned (its shape and dtype) for the point.
    sizing = reference(family, check_inputs)
    if family.make_output is not None:
        out = family.output(task.shape, dtype, device)
    else:
        out = torch.empty(sizing.shape, dtype=dtype, device=device)
    del sizing
    return Group(key, check_inputs, time_inputs, out, check_seed=task.seed,
                 time_seed=task.seed + 1, out_layout=sideeffects.OutputLayout.of(out),
                 names=tuple(sideeffects.input_names(family.reference, len(check_inputs))))


def twin_group(group: Group, key: tuple) -> Group:
    """A second side of an A/B pair: its own copy of `group`'s check inputs (what its first
    call writes there is its own fault), `group`'s timing inputs and output buffer (the
    pair's timed calls share them). Cloned, not drawn: `group`'s check passed, so its
    inputs still hold their seed's values, and a draw, its reproducibility check and the
    sizing reference would cost as much again for nothing."""
    check = tuple(x.clone() if hasattr(x, "clone") else x for x in group.check_inputs)
    return replace(group, key=key, check_inputs=check)


def _require_reproducible(family: Family, task: Task, device: str, drawn: tuple) -> None:
    """A SpecError unless make_inputs gives the same values again for the same seed."""
    again = draw_inputs(family, task, device, task.seed)
    if sideeffects.mutated_inputs(drawn, again, [str(i) for i in range(len(drawn))]):
        raise SpecError(f"{family.name}: make_inputs gives other values for the same seed; "
                        "gpubench draws a point's inputs again from their seed to check a "
                        "variant, so draw them with torch's random functions (torch.randn, "
                        "torch.rand, ... or a torch.Generator seeded from torch.initial_seed()"
                        "), which gpubench seeds")


def draw_inputs(family: Family, task: Task, device: str, seed: int) -> tuple:
    """Fresh random inputs, checked: tensors (or plain numbers, e.g. an epsilon) on the
    point's device, floating ones in the point's dtype, not all zeros (zeros hide
    unwritten outputs and run faster) nor one value repeated."""
    import torch

    dtype = getattr(torch, task.dtype)
    torch.manual_seed(seed)
    inputs = family.inputs(task.shape, dtype, device)
    inputs = tuple(inputs) if isinstance(inputs, tuple | list) else (inputs,)
    for index, item in enumerate(inputs):
        problem = _input_problem(item, dtype, device, torch)
        if problem:
            raise SpecError(f"{family.name}: make_inputs returned input {index} {problem}; "
                            "it must return tensors on the given device, floating ones in "
                            "the given dtype (.to(dtype)), with random values")
    return inputs


def _input_problem(item, dtype, device: str, torch) -> str | None:
    if isinstance(item, bool | int | float):
        return None
    if not isinstance(item, torch.Tensor):
        return f"as a {type(item).__name__}"
    if item.is_floating_point() and item.dtype != dtype:
        return f"as {str(item.dtype).removeprefix('torch.')} for a " \
               f"{str(dtype).removeprefix('torch.')} point"
    if item.device.type != torch.device(device).type:
        return f"on {item.device.type}, not {device}"
    if item.numel() and not item.any():
        return "as all zeros"
    if item.is_floating_point() and item.numel() > 1 and bool((item == item.flatten()[0]).all()):
        # A degenerate draw (a generator fed a seed it rounds away): a copy of it "sorts",
        # any reduction of it is trivial; reported, not benchmarked.
        return f"as one value repeated ({item.numel()} times {float(item.flatten()[0]):g})"
    return None


def reference(family: Family, inputs: tuple):
    """The reference on float64 copies of floating inputs: the check's ground truth."""
    import torch

    upcast = [x.double() if isinstance(x, torch.Tensor) and x.is_floating_point() else x
              for x in inputs]
    return family.reference(*upcast)


def fresh_sets(family: Family, task: Task, device: str, like_out, count: int
               ) -> list[InputSet]:
    """`count` input sets the variant has never seen, each with its own output buffer, from
    seeds drawn from the OS (no other set of the point has theirs): the loop's fresh calls
    (rotation.py) and the probe's (fresh_probe.py)."""
    import random

    import torch

    seeds = random.SystemRandom()
    return [InputSet(draw_inputs(family, task, device, seed), torch.empty_like(like_out), seed)
            for seed in (seeds.getrandbits(31) for _ in range(count))]
