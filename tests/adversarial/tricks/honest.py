"""Honest variants: every call does the whole work on the caller's stream, or joins back to
it. Each must stay PASS under every defence (no false alarm on an honest kernel)."""

import torch


def honest_out(a, b, out):
    """Destination-passing: writes the product into the harness's buffer."""
    torch.matmul(a, b, out=out)


def honest_return(a, b):
    """Returning: allocates its output each call (the row is marked `(alloc)`)."""
    return a @ b


_plans: dict = {}


def honest_plan(a, b, out):
    """Caches a *plan* keyed on shape, dtype and device (a row-block size, as a tuned kernel
    caches its launch configuration), never a result: every call computes every row."""
    key = (tuple(a.shape), tuple(b.shape), a.dtype, a.device)
    rows = _plans.get(key)
    if rows is None:
        rows = _plans[key] = max(1, (a.shape[0] + 1) // 2)  # two row blocks
    for start in range(0, a.shape[0], rows):
        torch.matmul(a[start:start + rows], b, out=out[start:start + rows])


_side_streams: dict = {}


def honest_side_stream(a, b, out):
    """GPU: does its work on a side stream that first waits for the caller's stream and is
    then joined back into it, so the caller's stream (and its events) covers the work."""
    caller = torch.cuda.current_stream(a.device)
    side = _side_streams.setdefault(a.device, torch.cuda.Stream(a.device))
    side.wait_stream(caller)
    with torch.cuda.stream(side):
        torch.matmul(a, b, out=out)
    caller.wait_stream(side)


def honest_double(x, out):
    """The memory-bound family's honest variant: y = 2x, one read and one write."""
    torch.mul(x, 2, out=out)


def honest_nan(x, out):
    """The NaN-reference family's honest variant: computes sqrt(-(x^2) - 1), NaN everywhere."""
    torch.sqrt(-(x * x) - 1, out=out)
