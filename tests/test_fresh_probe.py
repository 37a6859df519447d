"""The fresh-input probe's second round (run/worker/fresh_probe.py): a first round that accuses
is drawn again, and the verdict (verdicts/behaviour.py) reads both rounds' floors.

The calls are real CPU tensor calls; only the clock each call reads is scripted, so that
a round's noise and a shortcut's signature are the same on every machine."""

from __future__ import annotations

import torch

from gpubench.families.check import compare
from gpubench.records import result as R
from gpubench.records.point import PointKey
from gpubench.records.shape import Shape
from gpubench.run.worker import fresh_probe
from gpubench.run.worker.rotation import InputSet
from gpubench.timing.measurement import FreshEvidence, Measurement
from gpubench.verdicts import behaviour as trust


def square(inputs, out):
    return torch.mul(inputs[0], inputs[0], out=out)


def make_set(_index):
    return InputSet((torch.randn(64),), torch.empty(64))


def run_probe(monkeypatch, seconds_of):
    """probe_fresh over `square`, each call's time from seconds_of(call_number, is_fresh)."""
    seen = [make_set(0)]
    calls = []

    def scripted(invoke, chosen, support, finite):
        produced = invoke(chosen.inputs, chosen.out)
        calls.append(chosen)
        is_fresh = chosen is not seen[0]
        return seconds_of(len(calls), is_fresh), produced

    monkeypatch.setattr(fresh_probe, "_timed_call", scripted)
    def judge(chosen, output):
        return compare(output, chosen.inputs[0].double() ** 2, 1e-5, 1e-5)

    return fresh_probe.probe_fresh(square, make_set, seen, judge)


def probe_row(probe, median):
    """verdicts/behaviour.py's verdict on a CPU row holding the probe's times (the host's load
    is left out: these tests script the clock, not the machine)."""
    key = PointKey("sq", "v", "float32", Shape({"n": 64}), "cpu")
    measurement = Measurement("cpu", "fake", [median] * 20, target_rel_ci=0.005,
                              stop_reason="converged",
                              fresh=FreshEvidence(probe.fresh_s, probe.repeat_s))
    result = R.Result(key=key, kind="torch", status=R.OK, measurement=measurement)
    return trust.repeat_shortcut(result)


def test_an_honest_first_round_ends_the_probe(monkeypatch):
    probe = run_probe(monkeypatch, lambda call, fresh: 1.0e-3)
    assert len(probe.fresh_s) == fresh_probe.FRESH_CALLS and probe.failure is None


def test_one_noisy_round_is_drawn_again_and_accuses_no_one(monkeypatch):
    # the first round's fresh calls all 1.3x (the CI host, 2026-11-27), the second's not
    first_round = 2 * fresh_probe.FRESH_CALLS
    probe = run_probe(monkeypatch, lambda call, fresh: 1.3e-3 if fresh and call <= first_round
                      else 1.0e-3)
    assert len(probe.fresh_s) == 2 * fresh_probe.FRESH_CALLS
    assert probe_row(probe, median=1.0e-3) is None


def test_a_shortcut_is_accused_after_both_rounds(monkeypatch):
    probe = run_probe(monkeypatch, lambda call, fresh: 1.0e-3 if fresh else 0.2e-3)
    assert len(probe.fresh_s) == 2 * fresh_probe.FRESH_CALLS
    found = probe_row(probe, median=0.2e-3)
    assert found is not None and "inputs it had seen" in found.message
