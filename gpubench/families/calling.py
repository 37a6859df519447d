"""How a variant is called: destination-passing `fn(*inputs, out)` or returning
`fn(*inputs) -> Tensor`.

Destination-passing lets the harness poison `out` and catch elements a kernel never
wrote, and keeps allocation out of the time. But the code people paste from lectures
and tutorials (GPU MODE lecture 1's `square_matrix`, most Triton tutorials) allocates
and returns its result, and must run unchanged. So a variant may do either; which
one is read from the callable itself where it says so:

- Python functions (torch and Triton variants): the signature. One that accepts one
  positional argument more than there are inputs takes `out`.
- pybind11 functions (C++/CUDA extensions) and torch's builtins, which have no Python
  signature: their docstring starts with one, `square_matrix(arg0: torch.Tensor) ->
  torch.Tensor` or `square(input, *, out=None) -> Tensor`: the positional arguments
  and the return type tell.

A variant's `returns=True/False` overrides both. Pure: no torch, no GPU.
"""

from __future__ import annotations

import inspect
import re
import time
from collections.abc import Callable

# The signature line pybind11 generates and torch's builtins document: name(args) -> type
_PYBIND_SIGNATURE = re.compile(r"^\s*\w+\((?P<args>.*)\)\s*->\s*(?P<ret>[\w.:<>\[\], ]+)\s*$")


def returns_output(fn: Callable, n_inputs: int, declared: bool | None = None) -> bool:
    """Whether `fn` returns its output instead of writing into an `out` argument. When
    nothing tells, destination-passing (the convention of every shipped family)."""
    if declared is not None:
        return declared
    if inspect.isfunction(fn) or inspect.ismethod(fn):
        return _python_returns(fn, n_inputs)
    documented = _documented_signature(fn)
    if documented is not None:
        positional, returned = documented
        return positional == n_inputs and returned != "None"
    return _python_returns(fn, n_inputs)


def _documented_signature(fn: Callable) -> tuple[int, str] | None:
    """(required positional arguments, return type) from the docstring's first line."""
    doc = (getattr(fn, "__doc__", None) or "").strip()
    match = _PYBIND_SIGNATURE.match(doc.splitlines()[0]) if doc else None
    if not match:
        return None
    positional = 0
    for parameter in _split_top_level(match["args"]):
        if parameter.startswith("*"):
            break  # keyword-only from here on
        if parameter and parameter != "/" and "=" not in parameter:
            positional += 1
    return positional, match["ret"].strip()


def _split_top_level(args: str) -> list[str]:
    """'a: List[int, 2], b=None' -> ['a: List[int, 2]', 'b=None']: commas outside brackets."""
    parts, depth, current = [], 0, ""
    for char in args:
        depth += char in "[<("
        depth -= char in "]>)"
        if char == "," and depth == 0:
            parts.append(current.strip())
            current = ""
        else:
            current += char
    return [*parts, current.strip()] if current.strip() else parts


def _python_returns(fn: Callable, n_inputs: int) -> bool:
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):  # a builtin without a signature: keep the convention
        return False
    try:
        signature.bind(*range(n_inputs + 1))
        return False  # it takes `out`
    except TypeError:
        pass
    try:
        signature.bind(*range(n_inputs))
        return True
    except TypeError:
        return False  # neither fits: calling it will say why


def load_callable(fn) -> float:
    """Seconds a torch variant's callable took to load, in the worker's build phase (its
    timeout is the build's): one with a `load()` (a leaderboard submission, imported then,
    which may build CUDA code with load_inline at import) is loaded there, not in its
    first call. 0 for any other callable."""
    load = getattr(fn, "load", None)
    if not callable(load):
        return 0.0
    start = time.perf_counter()
    load()
    return time.perf_counter() - start
