"""A reference-kernels problem's output as gpubench holds it: one buffer, `out`.

ref_kernel returns a tensor or a tuple of tensors, and `data` may hold a slot for each: a
tensor of its size whose values the result does not depend on (generate_input's empty
output, which ref_kernel may fill and return). The harness holds one output buffer per
call (poisoned before it, copied for a re-check, sent to the judge), so:

  a tensor   `out` is its slot (without one, shaped like the result); the kernel gets
             `out` itself in the slot's place
  a tuple    `out` is flat, the pieces one after another in one dtype; the kernel gets
             each piece, viewed in its slot's shape, in that slot's place

The problem's check_implementation sees what the kernel returned, as on the leaderboard,
whose eval.py hands custom_kernel's result to the check untouched: a 0-dim sum held in a
(1,) slot reaches it 0-dim (pmpp_v2's vectorsum), the (1,) slot itself stays (1,) and fails
that problem's shape test there and here. The form travels as the shape of what the call
gives back (`Layout.store`: `out` or a view of it), which is the shape the judge's copy of
the output has. A tuple's pieces reach the check in the reference's shapes: one buffer
cannot say how each piece was returned.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass

from gpubench.errors import SpecError


@dataclass(frozen=True)
class Piece:
    """One tensor of the result: its slot in `data` (None: the kernel allocates it), its
    shape there, and where its elements start in `out`."""

    slot: int | None
    shape: tuple[int, ...]
    start: int

    @property
    def numel(self) -> int:
        return math.prod(self.shape)


@dataclass(frozen=True)
class Layout:
    """Where each tensor of a problem's result lives, in `data` and in `out`."""

    pieces: tuple[Piece, ...]
    dtype: object  # torch.dtype of `out`
    many: bool  # ref_kernel returns a tuple (of len(pieces) tensors)

    @property
    def out_shape(self) -> tuple[int, ...]:
        if self.many:
            return (sum(p.numel for p in self.pieces),)
        return self.pieces[0].shape

    @property
    def has_slots(self) -> bool:
        return any(piece.slot is not None for piece in self.pieces)

    def inputs_of(self, data: tuple) -> tuple:
        """`data` without its slots: the inputs gpubench draws, poisons nothing of, and
        checks for writes."""
        slots = {p.slot for p in self.pieces}
        return tuple(item for index, item in enumerate(data) if index not in slots)

    def around(self, inputs: tuple, out) -> tuple:
        """`data` again: each slot's piece of `out` back in its place (slots ascending, so
        every insert lands where inputs_of took it from)."""
        data = list(inputs)
        for slot, index in sorted((p.slot, i) for i, p in enumerate(self.pieces)
                                  if p.slot is not None):
            data.insert(slot, self.piece(out, index))
        return tuple(data)

    def piece(self, out, index: int):
        """Piece `index` of `out` in its shape: `out` itself for a lone tensor (the slot
        the kernel gets is the harness's own buffer)."""
        if not self.many:
            return out
        piece = self.pieces[index]
        return out.reshape(-1)[piece.start:piece.start + piece.numel].view(piece.shape)

    def store(self, out, result):
        """Put what a kernel returned into `out`, where it is not there already; returns
        `out` in the form the problem's check is to see: `out`, or for a lone tensor
        returned in another shape (a 0-dim sum, a reshape) a view of `out` in that shape.
        A ValueError says why a result does not fit."""
        if self.many:
            return self._store_tuple(out, result)
        _require_tensor(result, "a tensor")
        _fill(out, result)
        return out if tuple(result.shape) == tuple(out.shape) else out.view(result.shape)

    def checked(self, out):
        """What check_implementation gets for the output `out` as it reached the judge:
        itself (in the form the kernel returned it), or a tuple's pieces."""
        if not self.many:
            return out
        return tuple(self.piece(out, index) for index in range(len(self.pieces)))

    def _store_tuple(self, out, result):
        count = len(self.pieces)
        if not isinstance(result, tuple | list) or len(result) != count:
            what = f"{len(result)} items" if isinstance(result, tuple | list) else \
                type(result).__name__
            raise ValueError(f"returned {what}; the reference returns a tuple of {count} "
                             "tensors")
        for index, item in enumerate(result):
            _require_tensor(item, f"item {index} a tensor")
            _fill(self.piece(out, index), item)
        return out


def _require_tensor(item, what: str) -> None:
    import torch

    if not isinstance(item, torch.Tensor):
        raise ValueError(f"returned a {type(item).__name__} where the reference returns "
                         f"{what}")


def _fill(place, item) -> None:
    """Copy `item` into `place` (its elements in order), unless it is `place`'s memory in
    `place`'s order already (a kernel that wrote into its slot and returned it, or a view
    of it in another shape): no copy then, so none is timed."""
    if item.numel() != place.numel():
        raise ValueError(f"returned shape {tuple(item.shape)}; the output is "
                         f"{tuple(place.shape)}")
    if _same_memory(item, place):
        return
    place.copy_(item.reshape(place.shape))


def _same_memory(item, place) -> bool:
    return (item.data_ptr() == place.data_ptr() and item.dtype == place.dtype
            and item.device == place.device and item.is_contiguous()
            and place.is_contiguous() and item.numel() == place.numel())


def find(data: tuple, ref: Callable[[list], object], where: str) -> Layout:
    """The layout of a problem's result for `data` (ref(items): ref_kernel on the items,
    packed as the problem takes them). A slot is a tensor of `data` as large as a result
    tensor whose values the result does not depend on (filled with 1, then 2). A tensor
    ref_kernel returns that is a slot's own memory has that slot; the others take the
    last free slots of their size, in order (a lone result: the last such tensor, the
    output generate_input appends). `where` names the problem in a SpecError."""
    import torch

    items = _clones(data)
    result = ref(items)
    many = isinstance(result, tuple | list)
    elements = list(result) if many else [result]
    if not elements or not all(isinstance(e, torch.Tensor) for e in elements):
        kinds = ", ".join(type(e).__name__ for e in elements) or "nothing"
        raise SpecError(f"{where}: ref_kernel returned {type(result).__name__} "
                        f"({kinds}); gpubench checks a tensor or a tuple of tensors")

    @functools.cache
    def unread(index: int) -> bool:
        ones, twos = _clones(data), _clones(data)
        ones[index].fill_(1)
        twos[index].fill_(2)
        return _same_results(ref(ones), ref(twos))

    tensors = [i for i, item in enumerate(data) if isinstance(item, torch.Tensor)]
    slots: list[int | None] = [None] * len(elements)
    for j, element in enumerate(elements):  # filled and returned by ref_kernel
        mine = next((i for i in tensors if _same_memory(element, items[i])), None)
        if mine is not None and mine not in slots and unread(mine):
            slots[j] = mine
    for size in dict.fromkeys(e.numel() for e in elements):  # the others, size by size:
        waiting = [j for j, e in enumerate(elements)  # the last free slots, in order
                   if slots[j] is None and e.numel() == size]
        for i in reversed(tensors):
            if not waiting:
                break
            if i not in slots and data[i].numel() == size and unread(i):
                slots[waiting.pop()] = i
    return _layout(data, elements, slots, many, where)


def _layout(data: tuple, elements: list, slots: list, many: bool, where: str) -> Layout:
    dtypes = [data[s].dtype if s is not None else e.dtype
              for e, s in zip(elements, slots, strict=True)]
    if len(set(dtypes)) > 1:
        named = ", ".join(str(d).removeprefix("torch.") for d in dtypes)
        raise SpecError(f"{where}: ref_kernel returns tensors of dtypes {named}; gpubench "
                        "holds a problem's output in one buffer of one dtype")
    pieces, start = [], 0
    for element, slot in zip(elements, slots, strict=True):
        shape = tuple(data[slot].shape) if slot is not None else tuple(element.shape)
        pieces.append(Piece(slot, shape, start))
        start += math.prod(shape)
    return Layout(tuple(pieces), dtypes[0], many)


def _same_results(first, second) -> bool:
    import torch

    firsts = first if isinstance(first, tuple | list) else (first,)
    seconds = second if isinstance(second, tuple | list) else (second,)
    return len(firsts) == len(seconds) and all(
        isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)
        and torch.equal(a.cpu(), b.cpu()) for a, b in zip(firsts, seconds, strict=True))


def _clones(data: tuple) -> list:
    return [x.clone() if hasattr(x, "clone") else x for x in data]
