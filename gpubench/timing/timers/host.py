"""The host clock around each call: for CPU tensors, where every call is synchronous."""

from __future__ import annotations

from collections.abc import Callable

from gpubench.timing import pristine
from gpubench.timing.hostload import Snapshot, load_between
from gpubench.timing.settings import TimingSettings
from gpubench.timing.timers.base import Measurement, sample_until_stopped, warm_up
from gpubench.timing.timers.calls import TimedCalls, as_calls, once


class HostTimer:
    mode = "cpu"
    method = "host-clock (CPU; no cache flush)"

    def __init__(self, settings: TimingSettings,
                 clock: Callable[[], float] = pristine.perf_counter):
        self.settings, self.clock = settings, clock

    def measure(self, fn: Callable[[], object] | TimedCalls) -> Measurement:
        calls = as_calls(fn)
        warmup_calls, warmup_s = warm_up(once(calls), self.settings, clock=self.clock)

        def take(count: int) -> list[float]:
            samples = []
            for _ in range(count):
                calls.before()
                start = self.clock()
                calls()
                samples.append(self.clock() - start)
                calls.after()
            return samples

        before = Snapshot.now()
        calls.sampling()  # one sample per call from here on
        samples, reason, spent = sample_until_stopped(take, self.settings, self.clock)
        # Whether the host's other work was timed too: compare and the warnings read it.
        load = load_between(before, Snapshot.now(), len(samples))
        return Measurement(self.mode, self.method, samples, warmup_calls, warmup_s, reason, spent,
                           host_load=load)
