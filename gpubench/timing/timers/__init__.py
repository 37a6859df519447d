"""Timers: how calls of a variant become time samples, one class per timing mode.

Every timer has `mode`, a `method` string that travels with every result (a
number always says how it was obtained), and `measure(fn) -> Measurement`. They share
the warmup and the stopping rule (base.py); they differ in what one sample is:

  cold   CUDA events around one call; L2 flushed by reads before it; the launch
         queued behind a spin kernel so host latency stays outside the events.
  warm   the same without the flush: inputs may sit in L2, as inside a model.
  graph  a CUDA graph of K x (flush, call) replayed; a graph of K flushes alone
         is replayed right after and subtracted, so the flush is not timed.
  cupti  kernel durations recorded by CUPTI (torch.profiler), summed per call;
         flush and spin kernels lie outside the per-call ranges and are excluded.
  wall   host-visible: flush, synchronize, then the host clock around call +
         synchronize. Launch overhead included: what a Python caller waits.
  cpu    machines without CUDA: the host clock around each call.
"""

from __future__ import annotations

from gpubench.timing.measurement import Measurement
from gpubench.timing.settings import GPU_MODES, TimingSettings

CPU_MODE = "cpu"
MODES = (*GPU_MODES, CPU_MODE)

__all__ = ["CPU_MODE", "GPU_MODES", "MODES", "Measurement", "TimingSettings", "make_timer",
           "modes_for_device"]


def modes_for_device(requested: tuple[str, ...], device: str) -> tuple[str, ...]:
    """The modes to run: as requested on a GPU; the host clock alone on a CPU."""
    return tuple(requested) if device == "cuda" else (CPU_MODE,)


def make_timer(mode: str, settings: TimingSettings, shared: dict | None = None):
    """A timer for `mode`. `shared` lets timers of one process share the flush buffer."""
    shared = {} if shared is None else shared
    if mode == CPU_MODE:
        from gpubench.timing.timers.host import HostTimer

        return HostTimer(settings)
    from gpubench.timing.timers.flush_spin import CudaSupport

    support = shared.get("cuda")
    if support is None:
        support = shared["cuda"] = CudaSupport()
    if mode in ("cold", "warm"):
        from gpubench.timing.timers.cuda_events import EventTimer

        return EventTimer(settings, support, flush=mode == "cold")
    if mode == "graph":
        from gpubench.timing.timers.graph import GraphTimer

        return GraphTimer(settings, support)
    if mode == "cupti":
        from gpubench.timing.timers.cupti import CuptiTimer

        return CuptiTimer(settings, support)
    if mode == "wall":
        from gpubench.timing.timers.wall import WallTimer

        return WallTimer(settings, support)
    raise ValueError(f"unknown timing mode '{mode}'; known: {', '.join(MODES)}")
