"""The functions the timers call, captured when gpubench starts, before any variant runs.

A variant runs in the worker process and can rebind anything it can name:
`torch.cuda.Event.elapsed_time`, `time.perf_counter`, `torch.cuda.synchronize`.
A timer that looks those names up at call time would then time with the
variant's clock. The worker imports this module first thing (gpubench/run/worker/process.py),
so the references below are the originals; the timers call them through here
(or through CudaSupport, which does) and never through the names a variant can reach.

The C-level event methods (torch._C._CudaEventBase) are captured rather than the
Python wrappers on torch.cuda.Event: the wrapper class is mutable, the C type is not.
On a CPU build of torch there is no C-level event: those references are None and
nothing CUDA is timed.

The seal (gpubench/run/worker/seal.py) still checks that the public names were not
replaced, since gpubench's checker and the rest of torch use them too.
"""

from __future__ import annotations

import time

import torch

perf_counter = time.perf_counter
perf_counter_ns = time.perf_counter_ns
monotonic = time.monotonic

Event = torch.cuda.Event
_event_base = torch.cuda.Event.__mro__[1]  # torch._C._CudaEventBase on a CUDA build
# The Python wrapper's __new__, captured: the class's own attribute can be rebound later.
_event_new = torch.cuda.Event.__new__
event_record = getattr(_event_base, "record", None)  # C-level record(event, stream)
event_elapsed_ms = getattr(_event_base, "elapsed_time", None)  # C-level, milliseconds
event_synchronize = getattr(_event_base, "synchronize", None)
cuda_synchronize = torch.cuda.synchronize
# torch.cuda.synchronize() with no device is this C function once CUDA is initialised.
_synchronize_c = getattr(torch._C, "_cuda_synchronize", None)
_cuda_initialized = torch.cuda.is_initialized
current_stream = torch.cuda.current_stream
cuda_sleep = torch.cuda._sleep


def timing_event():
    """A CUDA event with timing on, made through the captured constructor."""
    return _event_new(Event, enable_timing=True)


def record(event) -> None:
    """Record `event` on the current stream through the C-level method."""
    event_record(event, current_stream())


def synchronize() -> None:
    """Wait for the current device, through the C function when there is one."""
    if _synchronize_c is not None and _cuda_initialized():
        _synchronize_c()
    else:
        cuda_synchronize()


def elapsed_s(begin, end) -> float:
    """Seconds between two recorded events, by the C-level elapsed_time."""
    return event_elapsed_ms(begin, end) / 1e3


def captured() -> dict[str, object]:
    """Every reference held here by name: what the seal compares the public names with."""
    return {"time.perf_counter": perf_counter, "time.perf_counter_ns": perf_counter_ns,
            "time.monotonic": monotonic, "torch.cuda.Event": Event,
            "torch.cuda.Event.__new__": _event_new, "torch.cuda.synchronize": cuda_synchronize,
            "torch.cuda.current_stream": current_stream, "torch.cuda._sleep": cuda_sleep}
