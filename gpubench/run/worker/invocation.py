"""The worker's view of a variant and its inputs: one calling convention (Invocation)
and the inputs every variant of a point shares (Group)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from gpubench.families import sideeffects
from gpubench.families.calling import returns_output


@dataclass
class Group:
    """Inputs and output buffer shared by the variants of one point, the seeds that made
    the inputs, and out's layout (which a variant must not change). No reference and no
    copy of the inputs lives here: the judge draws the inputs again from their seeds in its
    own process (run/judge/), so there is nothing here for a variant to rewrite."""

    key: tuple
    check_inputs: tuple
    time_inputs: tuple
    out: object
    check_seed: int = 0
    time_seed: int = 0
    out_layout: object = None
    names: tuple = ()

    def side_effects(self, mutated: list[str], state_before: dict) -> str | None:
        """What the last variant changed that it must not have (None: nothing); `mutated`
        names the inputs the judge found written into (run/judge/)."""
        out_changed = sideeffects.OutputLayout.of(self.out) != self.out_layout
        state = sideeffects.state_changes(state_before, sideeffects.torch_state())
        return sideeffects.describe(mutated, out_changed, state)


class Invocation:
    """A variant's callable under the harness's one convention, call(inputs, out) ->
    output: destination-passing variants write into `out`; returning ones allocate and
    return their output (calling.py decides which on the first call). What a call
    produced is the caller's to keep (run/worker/rotation.py keeps the re-checked ones).

    A destination-passing callable that says so (`returns_checked_view`: a leaderboard
    problem's Call) gives back `out` in the form its output is checked in, a view of it in
    another shape: a problem's own check sees a 0-dim sum its (1,) slot holds as 0-dim, as
    on the leaderboard. The call's output is then that view, so its copies and the judge's
    keep the shape; anything but `out`'s own memory, whole, is ignored for `out`."""

    def __init__(self, fn: Callable, declared: bool | None):
        self.fn, self.declared = fn, declared
        self.returns: bool | None = None
        self.shows_form = getattr(fn, "returns_checked_view", False) is True

    def __call__(self, inputs: tuple, out):
        if self.returns is None:
            self.returns = returns_output(self.fn, len(inputs), self.declared)
        if not self.returns:
            if self.shows_form:
                return _view_of(self.fn(*inputs, out), out)
            self.fn(*inputs, out)
            return out
        return self.fn(*inputs)

    def problem(self, produced, like, torch) -> str | None:
        """Why a returning variant's result cannot be checked, or None. `like` is the
        output buffer the harness made: the result must match its dtype and device."""
        if not self.returns:
            return None
        if not isinstance(produced, torch.Tensor):
            return (f"returned {type(produced).__name__}, not a tensor: a variant either "
                    "returns its output or writes into `out` (declare returns=False if it "
                    "writes into out)")
        if produced.requires_grad and produced.is_leaf:
            # A leaf in the autograd graph refuses in-place writes: the harness's poisoning
            # of a kept output (families/check.py) would fail with autograd's error, which
            # names no mistake of the variant's. A result of autograd ops (not a leaf) takes
            # them, and is checked and timed as any output.
            return ("returned a tensor that requires grad: return a plain tensor (detach, "
                    "or run under torch.no_grad())")
        if produced.dtype != like.dtype or produced.device.type != like.device.type:
            return (f"returned a {str(produced.dtype).removeprefix('torch.')} tensor on "
                    f"{produced.device.type}; expected {str(like.dtype).removeprefix('torch.')} "
                    f"on {like.device.type}")
        return None


def _view_of(shown, out):
    """`shown` where it is `out`'s memory in another shape (every element, in order), else
    `out`: the output checked is always the poisoned buffer the harness made."""
    if shown is out or type(shown) is not type(out):
        return out
    if (shown.data_ptr() == out.data_ptr() and shown.numel() == out.numel()
            and shown.dtype == out.dtype and shown.device == out.device
            and shown.is_contiguous()):
        return shown
    return out
