"""What a variant may not change: its inputs, its output buffer, torch's global state.

The variants of a group share one set of inputs, one output buffer and one
process. A variant that scales its input in place (`x.mul_(1.5)`) would make
the next, correct variant FAIL; one that resizes `out` would break the next
with a shape error; one that calls `torch.set_num_threads(1)` would slow every
later one. So the worker snapshots all three before a variant runs, compares
after, and blames the variant that did it — then restores, so later variants
run as if it never had. Runs inside the worker (it touches torch).
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass

# name -> (getter, setter) of each piece of torch state a kernel's speed or result
# depends on; all are process-wide and survive the variant that set them.
STATE = {
    "num_threads": (lambda t: t.get_num_threads(), lambda t, v: t.set_num_threads(v)),
    "default_dtype": (lambda t: t.get_default_dtype(), lambda t, v: t.set_default_dtype(v)),
    "grad_enabled": (lambda t: t.is_grad_enabled(), lambda t, v: t.set_grad_enabled(v)),
    "deterministic_algorithms": (lambda t: t.are_deterministic_algorithms_enabled(),
                                 lambda t, v: t.use_deterministic_algorithms(v)),
    "float32_matmul_precision": (lambda t: t.get_float32_matmul_precision(),
                                 lambda t, v: t.set_float32_matmul_precision(v)),
    "cuda.matmul.allow_tf32": (lambda t: t.backends.cuda.matmul.allow_tf32,
                               lambda t, v: setattr(t.backends.cuda.matmul, "allow_tf32", v)),
    "cudnn.allow_tf32": (lambda t: t.backends.cudnn.allow_tf32,
                         lambda t, v: setattr(t.backends.cudnn, "allow_tf32", v)),
    "cudnn.benchmark": (lambda t: t.backends.cudnn.benchmark,
                        lambda t, v: setattr(t.backends.cudnn, "benchmark", v)),
}


def torch_state() -> dict:
    import torch

    return {name: get(torch) for name, (get, _) in STATE.items()}


def restore_state(snapshot: dict) -> None:
    import torch

    for name, value in snapshot.items():
        if STATE[name][0](torch) != value:
            STATE[name][1](torch, value)


def state_changes(before: dict, after: dict) -> list[str]:
    """'num_threads 16→1' for every piece of global state that differs. Pure."""
    return [f"{name} {_show(before[name])}→{_show(after[name])}"
            for name in before if before[name] != after.get(name)]


@dataclass(frozen=True)
class OutputLayout:
    """What a variant must leave alone of `out`: where it lives and how it is laid out."""

    shape: tuple
    stride: tuple
    dtype: str
    data_ptr: int

    @classmethod
    def of(cls, out) -> OutputLayout:
        return cls(tuple(out.shape), tuple(out.stride()), str(out.dtype), out.data_ptr())


def input_names(reference, count: int) -> list[str]:
    """The inputs' names for messages: the reference's parameter names (`lambda a, b:`),
    else 'input 0', 'input 1', ..."""
    try:
        params = [p.name for p in inspect.signature(reference).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    return [params[i] if i < len(params) else f"input {i}" for i in range(count)]


def mutated_inputs(inputs: tuple, pristine: tuple, names: list[str]) -> list[str]:
    """Names of the tensors whose values differ from their pristine copies."""
    import torch

    changed = []
    for name, now, before in zip(names, inputs, pristine, strict=True):
        if isinstance(now, torch.Tensor) and not torch.equal(now, before):
            changed.append(name)
    return changed


def describe(mutated: list[str], out_changed: bool, state: list[str]) -> str | None:
    """One sentence naming every side effect, or None. Pure."""
    parts = []
    if mutated:
        parts.append(f"mutated its input{'s' if len(mutated) > 1 else ''} "
                     f"{', '.join(mutated)}")
    if out_changed:
        parts.append("resized or replaced the output buffer (out)")
    if state:
        parts.append(f"changed torch global state: {', '.join(state)}")
    if not parts:
        return None
    return "; ".join(parts) + " — restored for the variants after it"


def _show(value) -> str:
    return str(value).removeprefix("torch.")
