"""Mode `graph`: CUDA-graph replay, with the flush inside the graph and subtracted.

Two graphs are captured: K x (before, flush, call) and K x (before, flush), where
`before` is the harness's hook (timers/calls.py: the next input set, its output
poisoned), so the difference is the calls alone. Per sample, both are
replayed back to back between three events; (t_both - t_flush) / K is one call
with a cold L2 and no launch overhead at all. K is chosen so that a replay
lasts ~2 ms: long enough to dwarf the event resolution (~0.5 us), short
enough for many samples.
"""

from __future__ import annotations

from collections.abc import Callable

from gpubench.timing.timers.base import Measurement, sample_until_stopped
from gpubench.timing.timers.calls import TimedCalls, as_calls
from gpubench.timing.timers.flush_spin import CudaTimer

REPLAY_TARGET_S = 2e-3
MAX_CALLS_PER_GRAPH = 100


class GraphTimer(CudaTimer):
    mode = "graph"
    method = "CUDA graph replay of K x (flush, call) minus K x flush"

    def measure(self, fn: Callable[[], object] | TimedCalls) -> Measurement:
        gpu, calls = self.support, as_calls(fn)

        def call() -> None:
            calls.before()
            gpu.flush()
            calls()
            calls.after()

        def flush_only() -> None:
            calls.before()  # the same poisoning as `call`, so the difference is the call
            gpu.flush()

        warmup_calls, warmup_s = gpu.warm_up(calls, self.settings)
        count = self._calls_per_graph(call)
        calls.keep_outputs(True)  # a capture cannot copy outputs out
        both = gpu.capture(lambda: [call() for _ in range(count)])
        flushes = gpu.capture(lambda: [flush_only() for _ in range(count)])
        cycles, spin_us = gpu.spin_cycles(both.replay)

        def take(batch: int) -> list[float]:
            marks = [(gpu.event(), gpu.event(), gpu.event()) for _ in range(batch)]
            for first, middle, last in marks:
                gpu.spin(cycles)
                gpu.record(first)
                both.replay()
                gpu.record(middle)
                flushes.replay()
                gpu.record(last)
            gpu.synchronize()
            return [(gpu.elapsed_s(a, b) - gpu.elapsed_s(b, c)) / count for a, b, c in marks]

        samples, reason, spent = sample_until_stopped(take, self.settings)
        both.replay()  # the flush graph poisons the outputs: leave the calls' outputs in them
        gpu.synchronize()
        calls.keep_outputs(False)
        return Measurement(self.mode, self.method, samples, warmup_calls, warmup_s, reason, spent,
                           {"calls_per_graph": count, "spin_us": spin_us,
                            **gpu.flush_details()})

    def _calls_per_graph(self, call: Callable[[], None]) -> int:
        gpu = self.support
        begin, end = gpu.event(), gpu.event()
        gpu.record(begin)
        for _ in range(3):
            call()
        gpu.record(end)
        gpu.synchronize()
        per_call_s = max(gpu.elapsed_s(begin, end) / 3, 1e-7)
        return max(1, min(MAX_CALLS_PER_GRAPH, round(REPLAY_TARGET_S / per_call_s)))
