"""Graph mode's never-seen sets (timers/graph.py), on a CPU: a fake device whose graphs
replay the costs the variant chose while it was captured. A variant decides what a graph
holds at capture time, so a half-work cache of inputs it has seen shows only beside a
graph captured on inputs it never saw; and those calls' outputs are checked."""

from __future__ import annotations

import pytest
import torch

from gpubench.families.check import compare
from gpubench.run.worker.rotation import InputSet, Rotation
from gpubench.timing.settings import TimingSettings
from gpubench.timing.timers.graph import FRESH_REPLAYS, GraphTimer

FULL_S, FLUSH_S = 60e-6, 40e-6


class Graph:
    def __init__(self, device, costs):
        self.device, self.costs = device, costs

    def replay(self):
        self.device.clock += sum(self.costs)


class Event:
    t = 0.0


class FakeDevice:
    """The parts of CudaSupport a graph timer uses; time passes only in replays."""

    def __init__(self):
        self.clock, self.recording = 0.0, None

    def spend(self, seconds):  # a kernel launched now: captured when a capture is on
        if self.recording is not None:
            self.recording.append(seconds)

    def flush(self):
        self.spend(FLUSH_S)

    def capture(self, body, keep_graph=False, eager=None):
        (eager or body)()
        self.recording = []
        body()
        graph, self.recording = Graph(self, self.recording), None
        graph.replay()
        return graph

    def warm_up(self, calls, settings):
        for _ in range(5):
            calls.before()
            calls()
            calls.after()
        return 5, 0.0

    def event(self):
        return Event()

    def record(self, event):
        event.t = self.clock

    @staticmethod
    def elapsed_s(begin, end):
        return end.t - begin.t

    def spin(self, cycles):
        pass

    def spin_cycles(self, fn):
        return 0, 0.0

    def synchronize(self):
        pass

    def flush_details(self):
        return {}


def variant(device, halves_seen: bool, stale: bool = False):
    """Doubles its input; with `halves_seen`, costs half on inputs it has seen (a cache
    of half the work); with `stale`, also answers never-seen inputs with its last answer."""
    seen, last = set(), {}

    def invoke(inputs, out):
        known = inputs[0].data_ptr() in seen
        seen.add(inputs[0].data_ptr())
        device.spend(FULL_S / 2 if halves_seen and known else FULL_S)
        if stale and not known and device.recording is not None and "out" in last:
            out.copy_(last["out"])
        else:
            torch.mul(inputs[0], 2, out=out)
        last["out"] = out.clone()
        return out

    return invoke


def measured(halves_seen: bool, stale: bool = False, fresh_sets: int = 4):
    device = FakeDevice()
    made = [InputSet((torch.randn(64),), torch.empty(64)) for _ in range(3 + fresh_sets)]
    judged = []

    def judge(pairs):
        judged.extend(chosen for chosen, _ in pairs)
        return [compare(out, 2 * chosen.inputs[0].double(), 1e-5, 1e-5) for chosen, out in pairs]

    calls = Rotation(variant(device, halves_seen, stale), made[:3], judge, fresh=made[3:])
    settings = TimingSettings(min_time_s=0.005, max_time_s=0.02, warmup_s=0.0)
    timing = GraphTimer(settings, device).measure(calls)
    return timing, calls.verdict(), judged, made[3:]


def test_a_graph_on_never_seen_sets_shows_a_half_work_cache():
    timing, (_, failure), judged, fresh = measured(halves_seen=True)
    evidence = timing.fresh_in_loop
    assert failure is None
    assert len(evidence.fresh_s) == FRESH_REPLAYS == len(evidence.repeat_s)
    assert min(evidence.fresh_s) == pytest.approx(FULL_S)
    assert max(evidence.repeat_s) == pytest.approx(FULL_S / 2)
    assert timing.details["fresh_calls_per_graph"] == len(fresh)
    assert all(any(chosen is s for chosen in judged) for s in fresh)  # every one checked


def test_an_honest_variant_takes_as_long_on_never_seen_sets():
    timing, (check, failure), _, _ = measured(halves_seen=False)
    evidence = timing.fresh_in_loop
    assert failure is None and check.passed
    assert min(evidence.fresh_s) == pytest.approx(FULL_S) == max(evidence.repeat_s)


def test_a_stale_answer_on_never_seen_sets_fails_the_re_check():
    _, (_, failure), _, _ = measured(halves_seen=True, stale=True)
    assert failure is not None and "never seen" in failure


def test_without_never_seen_sets_there_is_no_evidence_and_no_second_graph():
    timing, (_, failure), _, _ = measured(halves_seen=True, fresh_sets=0)
    assert failure is None and timing.fresh_in_loop is None
    assert timing.details["fresh_calls_per_graph"] == 0
