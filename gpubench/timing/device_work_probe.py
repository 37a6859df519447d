"""Finding what one call runs on the GPU (records/device_work.py), once per point.

First a CUDA graph capture of one call, whose nodes are counted through the
driver API: a few ms, nothing runs. A call that is one kernel and nothing else
is done there: its span is its kernel sum. Otherwise — several kernels, a memset
or a copy, or a call that cannot be captured (a launch on the legacy default
stream, a host sync) — CUPTI through torch.profiler times a few calls, each
after a flush outside its range, for counts, kernel sums and spans. CUPTI's
first use in a process costs ~4 s (on an H200), which is
why the capture comes first; it runs after the point's timing, which it does not
disturb (event windows before and after it agree within 0.2 us, same probe).
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable

from gpubench.timing.device_work import DeviceWork, from_graph_nodes, from_timelines
from gpubench.timing.timers.flush_spin import CudaSupport

CALL_RANGE = "gpubench::work"
PROFILED_CALLS = 10  # medians over 10 calls; each ~1 ms of profiler bookkeeping at most
# The profiler slows the host's launches; the spin that covers an unprofiled call's
# enqueue twice over (flush_spin.CudaSupport.SPIN_MARGIN) is stretched 4x more to cover them.
PROFILER_SLOWDOWN = 4
# CUgraphNodeType values (cuda.h): what a node of a captured call does.
NODE_KINDS = {0: "kernel", 1: "memcpy", 2: "memset", 4: "graph"}


def find_device_work(fn: Callable[[], object], support: CudaSupport) -> DeviceWork | None:
    """The call's DeviceWork; None when neither a capture nor CUPTI could see it."""
    kinds = captured_node_kinds(fn, support)
    if kinds is not None:
        work = from_graph_nodes(kinds)
        if work.single:
            return work
    return profiled_work(fn, support)


def captured_node_kinds(fn: Callable[[], object], support: CudaSupport) -> list[str] | None:
    """Node kinds of one captured call, child graphs opened; None when it cannot be captured
    or the driver's graph calls are not reachable."""
    torch = support.torch
    try:
        graph = support.capture(fn, keep_graph=True)
        raw = graph.raw_cuda_graph()
    except Exception:  # not capturable (legacy stream, host sync), or an older torch
        support.synchronize()
        return None
    try:
        return _node_kinds(ctypes.CDLL("libcuda.so.1"), raw)
    except (OSError, AttributeError, RuntimeError):
        return None
    finally:
        del graph
        torch.cuda.synchronize()


def _node_kinds(driver, graph: int) -> list[str]:
    count = ctypes.c_size_t(0)
    _ok(driver.cuGraphGetNodes(ctypes.c_void_p(graph), None, ctypes.byref(count)))
    nodes = (ctypes.c_void_p * count.value)()
    _ok(driver.cuGraphGetNodes(ctypes.c_void_p(graph), nodes, ctypes.byref(count)))
    kinds: list[str] = []
    for node in nodes:
        kind = ctypes.c_int(-1)
        _ok(driver.cuGraphNodeGetType(ctypes.c_void_p(node), ctypes.byref(kind)))
        name = NODE_KINDS.get(kind.value, "other")
        if name == "graph":
            child = ctypes.c_void_p()
            _ok(driver.cuGraphChildGraphNodeGetGraph(ctypes.c_void_p(node), ctypes.byref(child)))
            kinds.extend(_node_kinds(driver, child.value))
        else:
            kinds.append(name)
    return kinds


def _ok(status: int) -> None:
    if status != 0:
        raise RuntimeError(f"CUDA driver error {status}")


def profiled_work(fn: Callable[[], object], support: CudaSupport) -> DeviceWork | None:
    """Counts, kernel sum and span from CUPTI over PROFILED_CALLS calls, each queued behind a
    spin as cold samples are: launched one by one from a profiled host, a call's ops would
    wait on the host between them (a 2^24 sum's memset and kernel stood 10 us apart on an
    H200), gaps that a timed call does not have."""
    from gpubench.timing.timers.cupti import profile_calls

    cycles, _ = support.spin_cycles(fn)

    def prepare() -> None:
        support.flush()
        support.spin(cycles * PROFILER_SLOWDOWN)

    try:
        calls = profile_calls(fn, PROFILED_CALLS, CALL_RANGE, prepare, support.synchronize)
    except RuntimeError:  # the profiler could not start (another one holds CUPTI)
        return None
    return from_timelines([call.timeline for call in calls])
