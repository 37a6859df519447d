"""Work skipped on repeated calls: each variant computes when it thinks it is checked and
skips (or halves) the work when it thinks it is timed. Each relies on timed calls being
told apart from checked ones: the same buffers, the same values, or a poison written once
per timing loop rather than before every call."""

from __future__ import annotations

import hashlib
import sys
import time
from collections import OrderedDict

import torch

# Caches keep at most this many answers: with fresh input values on every call a result
# cache would otherwise grow without bound (16 MiB an entry at n = 2048 fp32).
CACHE_ENTRIES = 8


def _remember(cache: OrderedDict, key, value) -> None:
    cache[key] = value
    while len(cache) > CACHE_ENTRIES:
        cache.popitem(last=False)


_by_pointer: set = set()


def memo_ptr_version(a, b, out):
    """Memoises by (data_ptr, _version) of the inputs and out's address: a repeat call on the
    same buffers, unmodified since, returns at once and leaves the last answer in `out`."""
    key = (a.data_ptr(), a._version, b.data_ptr(), b._version, out.data_ptr())
    if key in _by_pointer:
        return
    torch.matmul(a, b, out=out)
    _by_pointer.add(key)


_by_content: OrderedDict = OrderedDict()


def _content_key(*tensors) -> object:
    """A key from the values: a hash of the bytes on a CPU; on a GPU, reductions read back
    (O(n^2) reads against the matmul's O(n^3) work)."""
    if tensors[0].is_cuda:
        weights = [t.double() for t in tensors]
        return tuple(v for w in weights for v in (w.sum().item(), (w * w).sum().item()))
    digest = hashlib.blake2b()
    for t in tensors:
        digest.update(t.contiguous().numpy().tobytes())
    return digest.hexdigest()


def memo_content(a, b, out):
    """Memoises by input *content*: new buffers holding values seen before get the cached
    answer copied in. Fresh pointers alone do not catch it; fresh values do."""
    key = _content_key(a, b)
    if key in _by_content:
        out.copy_(_by_content[key])
        return
    torch.matmul(a, b, out=out)
    _remember(_by_content, key, out.clone())


_by_fingerprint: OrderedDict = OrderedDict()
# Flat positions sampled for the fingerprint: eight elements, O(1) work whatever n is.
_SAMPLED = (0, 1, 7, 31, 127, 511, 2047, 8191)


def fingerprint_memo(a, b, out):
    """(Invented.) Memoises by a fingerprint of eight sampled input values and the shape:
    content caching without reading the content, so even a hash's cost is saved. Only
    values that change between calls (everywhere, not only at a few places) defeat it."""
    flat_a, flat_b = a.reshape(-1), b.reshape(-1)
    picks = [i % flat_a.numel() for i in _SAMPLED]
    index = torch.tensor(picks, device=a.device)
    key = (tuple(a.shape), tuple(torch.cat([flat_a[index], flat_b[index]]).tolist()))
    if key in _by_fingerprint:
        out.copy_(_by_fingerprint[key])
        return
    torch.matmul(a, b, out=out)
    _remember(_by_fingerprint, key, out.clone())


_first: dict = {}


def first_answer(a, b, out):
    """Computes once and replays its first answer whatever the inputs."""
    if "answer" not in _first:
        _first["answer"] = a @ b
    out.copy_(_first["answer"])


_warmup_calls = {"seen": 0}
# Calls that do the work: the checked call and the first two warm-up calls, which leave the
# timed inputs' answer in `out` for every later call to "return".
WORKING_CALLS = 3


def warmup_detect(a, b, out):
    """Works on its first calls only (the check and the start of the warm-up), then returns
    at once: `out` still holds the answer from the last call that worked."""
    _warmup_calls["seen"] += 1
    if _warmup_calls["seen"] <= WORKING_CALLS:
        torch.matmul(a, b, out=out)


_half_write_calls = {"seen": 0}


def half_write_later(a, b, out):
    """After its first few calls writes only the top half of the rows; the bottom half
    keeps what an earlier call wrote there."""
    _half_write_calls["seen"] += 1
    rows = a.shape[0] if _half_write_calls["seen"] <= WORKING_CALLS else a.shape[0] // 2
    torch.matmul(a[:rows], b, out=out[:rows])


_seen_inputs: set = set()


def half_on_repeat(a, b, out):
    """The "plausible 2x": the first call on given buffers computes everything; a repeat on
    the same (pointer, version) computes the top half only. A 2x a reader believes."""
    key = (a.data_ptr(), a._version, b.data_ptr(), b._version, out.data_ptr())
    rows = a.shape[0] // 2 if key in _seen_inputs else a.shape[0]
    _seen_inputs.add(key)
    torch.matmul(a[:rows], b, out=out[:rows])


_throttle = {"last": float("-inf")}
# Back-to-back calls come within microseconds of each other in a timing loop; a check, a
# new input set or a probe comes after setup work. 2 ms tells the two apart on a CPU and a GPU.
THROTTLE_S = 2e-3


def time_throttle(a, b, out):
    """(Invented.) Does the work only when 2 ms have passed since it last did: calls in a
    tight timing loop skip, a call after a pause (the check, a probe) computes."""
    now = time.perf_counter()
    if now - _throttle["last"] < THROTTLE_S:
        return
    torch.matmul(a, b, out=out)
    _throttle["last"] = time.perf_counter()


def _called_from(words: tuple[str, ...], depth: int = 16) -> bool:
    """Whether a caller within `depth` frames has one of `words` in its function name."""
    frame = sys._getframe(2)
    for _ in range(depth):
        if frame is None:
            return False
        if any(word in frame.f_code.co_name for word in words):
            return True
        frame = frame.f_back
    return False


def stack_sniffer(a, b, out):
    """(Invented.) Reads its callers' function names: called from anything named like a
    check it computes every row; from anywhere else (a timing loop, a probe) the top half
    only, a plausible 2x. Beaten only when the calls whose output is re-checked are timed
    calls, made through the same code as every other timed call."""
    checked = _called_from(("check", "verify", "compare", "reference"))
    rows = a.shape[0] if checked else a.shape[0] // 2
    torch.matmul(a[:rows], b, out=out[:rows])


_halves: OrderedDict = OrderedDict()
# The halves' cache keeps the sets it serves: least recently used out first, and room for
# the rotation's sets (run/worker/rotation.py: MAX_SETS) beside every fresh set, probe set
# and check that passes through (~20 distinct buffers a point). With CACHE_ENTRIES (8) and
# first-in-first-out, those evicted the rotation's own sets, so that its timed calls missed
# and did the full work: a trick that cheats now and then, not the one this stands for.
HALVES_ENTRIES = 32  # 2 MiB an entry at 1024^2 fp32 on a GPU: 64 MiB


def _timed_by(is_timer_frame) -> bool:
    """Whether any frame above the variant passes `is_timer_frame`. The whole stack: a
    graph's capture sits further up than a sampling loop (the capture's lambda and the
    graph's own call wrapper come between), and a bounded walk let its calls escape."""
    frame = sys._getframe(2)
    while frame is not None:
        if is_timer_frame(frame):
            return True
        frame = frame.f_back
    return False


def _cached_halves(a, b, out, timed: bool) -> None:
    """On a timed call of inputs seen before, the top half computed and the bottom half
    served from what an earlier call left; any other call (a miss included) does all."""
    key = (a.data_ptr(), b.data_ptr(), out.data_ptr())
    half = a.shape[0] // 2
    if timed and key in _halves:
        _halves.move_to_end(key)
        torch.matmul(a[:half], b, out=out[:half])
        out[half:].copy_(_halves[key])
        return
    torch.matmul(a, b, out=out)
    _halves[key] = out[half:].clone()
    _halves.move_to_end(key)
    while len(_halves) > HALVES_ENTRIES:
        _halves.popitem(last=False)


def sniffs_the_caller(a, b, out):
    """(Issue 60's third trick.) Reads the frame that calls the harness's calling
    convention: the timing loop's `__call__` (run/worker/rotation.py) means a timed call,
    served half from a cache of earlier answers; anything else (the check, the probe) gets
    the full work. Beaten by the checked call and the probe coming through that same
    `__call__`: the probe's seen calls then take the shortcut and its fresh ones cannot."""
    caller = sys._getframe(2)  # 0: this, 1: the calling convention, 2: who called it
    _cached_halves(a, b, out, caller.f_code.co_name == "__call__"
                   and caller.f_code.co_filename.endswith("rotation.py"))


def sniffs_the_timer(a, b, out):
    """(Issue 60's third trick, deeper.) Walks up to a timer's sampling loop or a graph's
    capture (frames of gpubench/timing/timers/): only the samples (and the captured calls a
    graph replays) take the shortcut; every other call (the check, the warm-up, the probe,
    whatever path it comes by) does the full work. Beaten by timed calls on never-seen
    inputs inside the loop itself: a miss there costs the full work, slower than the loop's
    other calls, or a wrong answer if served stale; in graph mode, which has none, by the
    probe's full-work calls against the replays' median."""
    _cached_halves(a, b, out, _timed_by(
        lambda frame: "timing/timers" in frame.f_code.co_filename.replace("\\", "/")
        and frame.f_code.co_name in ("take", "capture")))
