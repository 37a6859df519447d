"""`ab --explain` (issue 64): why a point moved, from both sides' ncu counters, ranked by
their share of the time change (tools/ncu/change.py). On the CPU from real reports: the
recorded H200 report of one square kernel launched on a full grid and on 4 blocks."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

FIXTURES = Path(__file__).parent / "fixtures" / "ncu" / "h200"
ncu_report = pytest.importorskip("ncu_report")


@pytest.fixture(scope="module")
def launches():
    from gpubench.tools.ncu.report import load_profiles

    return load_profiles(FIXTURES / "square_two_launches_full.ncu-rep", ncu_report)


def test_the_identity_holds_on_the_recorded_kernel(launches):
    """active cycles = instructions a scheduler x warp cycles per issue / active warps: the
    identity the shares rest on, on ncu's own counters (to 1%)."""
    from gpubench.tools.ncu import metrics as M

    raw = launches[0].raw_metrics
    schedulers = 4 * 132  # an H200's 132 SMs of four schedulers
    cycles = (raw[M.INSTRUCTIONS] / schedulers) * raw[M.WARP_CYCLES_PER_ISSUE] / \
        raw[M.ACTIVE_WARPS]
    assert cycles == pytest.approx(raw[M.SMSP_ACTIVE_CYCLES], rel=0.01)


def test_shares_add_up_to_the_duration_change_and_rank_by_time(launches):
    from gpubench.tools.ncu.change import kernel_change

    small, full = launches[1], launches[0]
    found = kernel_change(small, full, "cuda", "float32", "n=16777216")
    assert found.base_ns == small.duration_ns and found.new_ns == full.duration_ns
    factors = [c for c in found.counters if c.share_ns is not None and not c.via
               and not c.within]
    assert sum(c.share_ns for c in factors) == pytest.approx(found.delta_ns, rel=1e-9)
    toward = [c for c in factors if c.share_ns > 0]  # what made it slower, then offsets
    assert factors[:len(toward)] == toward
    for group in (toward, factors[len(toward):]):
        shares = [abs(c.share_ns) for c in group]
        assert shares == sorted(shares, reverse=True)  # ranked by time, not by percent
    assert factors[0].name == "instructions executed"  # 16 384x the work: the first cause
    # a stall reason sits under its factor, a context counter (no share) after the factors
    stalls = [c for c in found.counters if c.within]
    assert stalls and all(c.name.startswith("stall: ") for c in stalls)
    context = [c for c in found.counters if c.share_ns is None]
    assert found.counters[-len(context):] == tuple(context)
    assert any(c.name == "DRAM bytes" for c in context)


def test_registers_and_occupancy_explain_the_recorded_slowdown():
    """Real H100 reports of `benchmarks/bisect_acceptance.py explain`: a latency-bound
    pointer chase whose NEW keeps 96 values in registers (20 -> 128 a thread). ab read it
    +33.8% SLOWER; --explain must put occupancy and its cause, the registers, first,
    ahead of the cycles per issued instruction that fell as fewer warps contended."""
    from gpubench.tools.ncu.change import kernel_change
    from gpubench.tools.ncu.report import load_profiles

    h100 = FIXTURES.parent / "h100"
    base, new = (load_profiles(h100 / f"explain_chase_{side}.ncu-rep", ncu_report)[0]
                 for side in ("base", "new"))
    found = kernel_change(base, new, "chase", "float32", "n=1048576")
    first = [(c.name, c.base, c.new) for c in found.counters[:3]]
    assert [name for name, *_ in first] == ["achieved occupancy", "theoretical occupancy",
                                             "registers per thread"]
    assert first[2][1:] == (20.0, 128.0) and first[0][2] < first[0][1] / 3
    factors = [c for c in found.counters if c.share_ns is not None and not c.via
               and not c.within]
    assert sum(c.share_ns for c in factors) == pytest.approx(found.delta_ns, rel=1e-9)
    assert "Theoretical Occupancy" in found.hints_appeared


def test_hints_that_came_and_went(launches):
    from gpubench.tools.ncu.change import kernel_change

    found = kernel_change(launches[0], launches[1], "cuda", "float32", "n")
    small_grid = {h.heading for h in launches[1].hints()} - {h.heading for h in
                                                              launches[0].hints()}
    assert "Small Grid" in found.hints_appeared and set(found.hints_appeared) == small_grid
    assert not set(found.hints_gone) & {h.heading for h in launches[1].hints()}


def test_registers_show_beside_occupancy_when_they_limit_it(launches):
    """A cause carries its factor's share: registers per thread, where they bound the
    blocks an SM holds, right under achieved occupancy."""
    from dataclasses import replace

    from gpubench.tools.ncu.change import kernel_change

    base = launches[0]
    raw = {**base.raw_metrics, "smsp__warps_active.avg.per_cycle_active":
           base.raw_metrics["smsp__warps_active.avg.per_cycle_active"] / 4,
           "launch__occupancy_limit_registers": 2.0,
           "smsp__cycles_active.avg": base.raw_metrics["smsp__cycles_active.avg"] * 4}
    metrics = {**base.metrics, "achieved_occupancy_pct": base.metrics[
        "achieved_occupancy_pct"] / 4, "theoretical_occupancy_pct": 25.0}
    heavy = replace(base, raw_metrics=raw, metrics=metrics, registers_per_thread=128,
                    duration_ns=base.duration_ns * 4)
    found = kernel_change(base, heavy, "cuda", "float32", "n")
    names = [c.name for c in found.counters]
    occupancy = names.index("achieved occupancy")
    assert names[occupancy + 1:occupancy + 3] == ["theoretical occupancy",
                                                  "registers per thread"]
    registers = found.counters[occupancy + 2]
    assert (registers.base, registers.new) == (16.0, 128.0)
    assert registers.share_ns == found.counters[occupancy].share_ns > 0


def test_the_record_keeps_it_and_the_view_shows_it(launches):
    from rich.console import Console

    from gpubench.records.kernel_change import explanations
    from gpubench.report.explain_view import explain_view
    from gpubench.tools.ncu.change import kernel_change

    found = kernel_change(launches[1], launches[0], "cu\x1b[31mda", "float32", "n")
    meta = json.loads(json.dumps({"ab": {"explain": [found.to_dict()]}}))
    assert explanations(meta) == (found,) and explanations({}) == ()
    console = Console(width=120, record=True)
    console.print(explain_view(explanations(meta)))
    text = console.export_text()
    assert "instructions executed" in text and "share of the time change" in text
    assert "\x1b[31m" not in text  # a variant's name is the user's: shown escaped
    assert "ncu hints gone from NEW: Small Grid" in text or "Small Grid" in text


def test_without_ncu_each_moved_point_says_so_and_the_verdicts_stand(monkeypatch, tmp_path):
    from gpubench import errors
    from gpubench.commands import explain
    from gpubench.records.ab import PairVerdict

    def missing(name, explicit=None):
        raise errors.EnvironmentProblem("ncu profiles CUDA kernels, and this machine has "
                                        "no CUDA GPU")

    monkeypatch.setattr(explain, "find_gpu_tool", missing)
    verdicts = [PairVerdict("work", "float32", "n=1", "cold", False, "SLOWER", 4.0),
                PairVerdict("work", "float32", "n=1", "warm", False, "SLOWER", 4.0),
                PairVerdict("torch", "float32", "n=1", "cold", True, "SAME", 1.0)]
    found = explain.explain_pairs("pair", tmp_path, [], verdicts, tmp_path)
    assert [(c.variant, c.shape) for c in found] == [("work", "n=1")]  # once a point
    assert "no CUDA GPU" in found[0].error and "verdicts stand" in found[0].error
    assert math.isnan(found[0].base_ns)
    assert explain.explain_pairs("pair", tmp_path, [], verdicts[2:], tmp_path) == []
