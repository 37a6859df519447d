"""Mode `wall`: what a Python caller waits for, launch overhead and synchronisation included.

Per sample: flush, synchronize, then host clock around (call + synchronize).
Compared with `cold`, the difference is the host side of a call: when it is
large, the kernel is launch-bound and a CUDA graph or fusion is the remedy.
"""

from __future__ import annotations

from collections.abc import Callable

from gpubench.timing import pristine
from gpubench.timing.timers.base import Measurement, sample_until_stopped
from gpubench.timing.timers.calls import TimedCalls, as_calls
from gpubench.timing.timers.flush_spin import CudaTimer


class WallTimer(CudaTimer):
    mode = "wall"
    method = "host clock around call + synchronize, L2 flushed before (launch included)"

    def measure(self, fn: Callable[[], object] | TimedCalls) -> Measurement:
        gpu, calls = self.support, as_calls(fn)

        warmup_calls, warmup_s = gpu.warm_up(calls, self.settings)

        def take(count: int) -> list[float]:
            samples = []
            for _ in range(count):
                calls.before()
                gpu.flush()
                gpu.synchronize()
                start = pristine.perf_counter()
                calls()
                gpu.synchronize()
                samples.append(pristine.perf_counter() - start)
                calls.after()
            return samples

        calls.sampling()  # one sample per call from here on
        samples, reason, spent = sample_until_stopped(take, self.settings)
        return Measurement(self.mode, self.method, samples, warmup_calls, warmup_s, reason, spent,
                      gpu.flush_details())
