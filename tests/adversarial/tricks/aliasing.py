"""Reading what was left behind, writing into inputs, aliasing the output."""

from __future__ import annotations

import gc

import torch


def writes_input(a, b):
    """Writes the product into its input `a` and returns `a`: the output aliases an input,
    and the input the next call (or the next variant) reads is no longer the harness's."""
    a.copy_(a @ b)
    return a


_returned: dict = {}


def returns_same_tensor(a, b):
    """Returns the very tensor it returned before for the same input buffers, unmodified
    since: a result cache the harness holds in its hand (the output is the variant's own
    buffer, so no poison ever reaches it)."""
    key = (a.data_ptr(), a._version, b.data_ptr(), b._version)
    if key not in _returned:
        _returned.clear()
        _returned[key] = a @ b
    return _returned[key]


_left_behind = {"calls": 0}
# Calls that compute: the check and two warm-up calls, whose outputs the allocator then
# hands back (a freed block of the same size is reused first, on a CPU and a GPU alike).
COMPUTING_CALLS = 3


def empty_like_leftover(a, b):
    """Computes on its first calls; later returns torch.empty of the output's shape, hoping
    the allocator hands back the block an earlier call's answer was freed from."""
    _left_behind["calls"] += 1
    out = torch.empty(a.shape[0], b.shape[1], dtype=a.dtype, device=a.device)
    if _left_behind["calls"] <= COMPUTING_CALLS:
        torch.matmul(a, b, out=out)
    return out


def poisons_reference(a, b, out):
    """(Invented.) Finds the harness's float64 references of its own shape through `gc` and
    fills them with NaN, then writes nothing: the NaN poison left in `out` now equals the
    reference. (Run last in its family: every later variant of the group would be judged
    against the spoilt references.)"""
    shape = (a.shape[0], b.shape[1])
    for obj in gc.get_objects():
        if isinstance(obj, torch.Tensor) and obj.dtype == torch.float64 \
                and tuple(obj.shape) == shape:
            obj.fill_(float("nan"))


def writes_nothing(*args):
    """Writes nothing at all: passes only where the poison left in `out` passes."""


def zeroes_everything(a, b, out):
    """(Attack round, issue 50.) Walks `gc` for every tensor of an input's shape or of the
    output's (the inputs, any copy of them, any reference, float64 or not) and zeroes it,
    then writes zeros: against zeroed references a kernel that computes nothing agrees, and
    every variant judged after it would get zero inputs."""
    shapes = {tuple(a.shape), tuple(b.shape), (a.shape[0], b.shape[1])}
    for obj in gc.get_objects():
        if isinstance(obj, torch.Tensor) and tuple(obj.shape) in shapes and \
                obj.is_floating_point():
            obj.zero_()
    out.zero_()
