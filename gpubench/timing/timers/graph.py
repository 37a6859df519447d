"""Mode `graph`: CUDA-graph replay, with the flush inside the graph and subtracted.

Two graphs are captured: K x (before, flush, call) and K x (before, flush), where
`before` is the harness's hook (timers/calls.py: the next input set, its output
poisoned), so the difference is the calls alone. Per sample, both are
replayed back to back between three events; (t_both - t_flush) / K is one call
with a cold L2 and no launch overhead at all. K is chosen so that a replay
lasts ~2 ms: long enough to dwarf the event resolution (~0.5 us), short
enough for many samples.

A variant decides what a graph holds while it is captured, and it may tell a capture
from its other calls (its callers' frames) and capture half the work on inputs it has
seen. So where the harness holds never-seen input sets (TimedCalls.capture_fresh), a
second pair of graphs is captured on them, one call a set, and replayed beside the first
FRESH_REPLAYS samples: its per-call times against those samples are the mode's in-loop
evidence (Measurement.fresh_in_loop, read by verdicts/behaviour.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from gpubench.timing.measurement import FreshEvidence
from gpubench.timing.timers.base import Measurement, sample_until_stopped
from gpubench.timing.timers.calls import TimedCalls, as_calls
from gpubench.timing.timers.flush_spin import CudaTimer

REPLAY_TARGET_S = 2e-3
MAX_CALLS_PER_GRAPH = 100
# Replays of the never-seen sets' graphs, one beside each of the first timed samples: 8
# per-call times against the 8 samples beside them; each costs (sets, at most 4) calls.
FRESH_REPLAYS = 8


@dataclass(frozen=True)
class _Graphs:
    """K x (before, flush, call) and K x (before, flush), replayed as a pair."""

    calls: object
    flushes: object
    per_graph: int


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
        timed = _Graphs(gpu.capture(lambda: [call() for _ in range(count)]),
                        gpu.capture(lambda: [flush_only() for _ in range(count)]), count)
        fresh = self._fresh_graphs(calls, call, flush_only)
        cycles, spin_us = gpu.spin_cycles(timed.calls.replay)
        fresh_s: list[float] = []
        seen_s: list[float] = []

        def take(batch: int) -> list[float]:
            reads, fresh_reads = [], []
            for _ in range(batch):
                gpu.spin(cycles)
                reads.append(self._replay(timed))
                if fresh and len(fresh_s) + len(fresh_reads) < FRESH_REPLAYS:
                    fresh_reads.append(self._replay(fresh))
            gpu.synchronize()
            samples = [read() for read in reads]
            seen_s.extend(samples[:len(fresh_reads)])
            fresh_s.extend(read() for read in fresh_reads)
            return samples

        samples, reason, spent = sample_until_stopped(take, self.settings)
        timed.calls.replay()  # the flush graph poisons the outputs: leave the calls' in them
        gpu.synchronize()
        calls.keep_outputs(False)
        return Measurement(self.mode, self.method, samples, warmup_calls, warmup_s, reason, spent,
                           {"calls_per_graph": count, "spin_us": spin_us,
                            "fresh_calls_per_graph": fresh.per_graph if fresh else 0,
                            **gpu.flush_details()},
                           fresh_in_loop=FreshEvidence(tuple(fresh_s), tuple(seen_s))
                           if fresh_s else None)

    def _fresh_graphs(self, calls: TimedCalls, call: Callable[[], None],
                      flush_only: Callable[[], None]) -> _Graphs | None:
        """The pair of graphs captured on the never-seen sets, one call a set; None where
        the harness holds none. The eager run that a capture
        makes first goes to the timed sets, so the captured calls are the first the
        variant ever makes on these inputs."""
        count = calls.capture_fresh(False)
        if not count:
            return None

        def on_fresh_sets() -> None:
            calls.capture_fresh(True)
            try:
                for _ in range(count):
                    call()
            finally:
                calls.capture_fresh(False)

        capture = self.support.capture
        return _Graphs(capture(on_fresh_sets, eager=lambda: [call() for _ in range(count)]),
                       capture(lambda: [flush_only() for _ in range(count)]), count)

    def _replay(self, graphs: _Graphs) -> Callable[[], float]:
        """The pair replayed back to back between three events; returns what reads one
        call's time, (t_calls - t_flushes) / K, once they completed."""
        gpu = self.support
        first, middle, last = gpu.event(), gpu.event(), gpu.event()
        gpu.record(first)
        graphs.calls.replay()
        gpu.record(middle)
        graphs.flushes.replay()
        gpu.record(last)
        return lambda: (gpu.elapsed_s(first, middle) - gpu.elapsed_s(middle, last)) \
            / graphs.per_graph

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
