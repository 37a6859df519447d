"""The pieces behind SUSPECT and the re-checks: trust.py's verdicts on recorded evidence,
finish_group's spreading of a behavioural doubt to every mode of a variant, and the
Rotation's calls (sets, poison, reservoir draws) on CPU tensors."""

from __future__ import annotations

import itertools
import json
import statistics

import pytest
import torch

from gpubench.families.check import compare
from gpubench.records import result as R
from gpubench.records.point import PointKey
from gpubench.records.shape import Shape
from gpubench.run.worker.rotation import RECHECKS, InputSet, Rotation, set_count
from gpubench.timing.device_work import DeviceWork
from gpubench.timing.measurement import Measurement
from gpubench.verdicts import behaviour as trust
from gpubench.verdicts.derive import finish_group


def row(variant="v", mode="cold", median=100e-6, details=None, work=None, baseline=False):
    """A passing row; the fresh-probe keys of `details` (fresh_s, repeat_s,
    fresh_host_load, as files before Measurement.fresh held them) become its evidence."""
    key = PointKey("fam", variant, "float32", Shape({"n": 1024}), mode)
    measurement = Measurement.from_dict({
        "mode": mode, "method": "fake", "samples_s": [median] * 20, "details": details or {},
        "target_rel_ci": 0.005, "stop_reason": "converged"})
    return R.Result(key=key, kind="torch", status=R.OK, baseline=baseline,
                    measurement=measurement, device_work=work)


def test_fresh_calls_as_fast_as_repeated_ones_are_trusted():
    honest = row(details={"fresh_s": [104e-6] * 9, "repeat_s": [100e-6] * 9})
    assert trust.repeat_shortcut(honest) is None


def test_fresh_calls_slower_than_repeated_ones_are_a_shortcut():
    cached = row(details={"fresh_s": [300e-6] * 9, "repeat_s": [100e-6] * 9})
    found = trust.repeat_shortcut(cached)
    assert found is not None and "3.0x" in found.message and "inputs it had seen" in found.message


def test_the_fastest_call_decides_so_load_spikes_do_not_accuse():
    # a loaded host: most single calls slow, but the fastest of each side agree
    spiky = {"fresh_s": [9e-3, 50e-3, 1.2e-3, 800e-3] * 2 + [1.2e-3],
             "repeat_s": [1.2e-3, 20e-3, 640e-3] * 3}
    noisy = row(mode="cpu", median=1.2e-3, details=spiky)
    assert trust.repeat_shortcut(noisy) is None


def test_a_variant_that_behaves_in_the_probe_is_caught_against_its_median():
    # fresh and repeated calls alike (it detects an isolated call), the timed loop 2x faster
    sly = row(median=100e-6, details={"fresh_s": [200e-6] * 9, "repeat_s": [200e-6] * 9})
    assert trust.repeat_shortcut(sly) is not None
    warm = row(mode="warm", median=100e-6, details={"fresh_s": [200e-6] * 9,
                                                    "repeat_s": [200e-6] * 9})
    assert trust.repeat_shortcut(warm) is None  # L2 may serve a warm loop


def test_a_call_that_waits_on_the_host_gets_the_cpus_bar_and_a_cache_is_still_caught():
    # pmpp_v2 grayscale's reference (a pageable copy each call): fresh 199 us against a
    # 119 us loop, the GPU busy ~12 us of it; a cheat's fresh call does its 1 ms of work.
    waiting = DeviceWork(kernels=2, other_ops=1, kernel_us=9.0, span_us=121.9,
                         busy_us=12.0, source="cupti")
    assert trust.waits_on_host(row(median=119.3e-6, work=waiting))
    honest = row(median=119.3e-6, work=waiting, details={"fresh_s": [199e-6] * 9,
                                                          "repeat_s": [130e-6] * 9})
    assert trust.repeat_shortcut(honest) is None
    cache = row(median=30e-6, work=DeviceWork(kernels=1, kernel_us=2.0, span_us=2.0,
                                              busy_us=2.0, source="cupti"),
                details={"fresh_s": [1e-3] * 9, "repeat_s": [30e-6] * 9})
    assert trust.repeat_shortcut(cache) is not None
    # the same 1.7x on a call the device fills is still a shortcut
    busy = DeviceWork(kernels=2, kernel_us=110.0, span_us=115.0, busy_us=110.0,
                      source="cupti")
    tight = row(median=119.3e-6, work=busy, details={"fresh_s": [199e-6] * 9,
                                                      "repeat_s": [120e-6] * 9})
    assert trust.repeat_shortcut(tight) is not None


def test_device_work_beyond_the_window_is_outside_it():
    escaped = DeviceWork(kernels=40, kernel_us=240.0, span_us=250.0, source="cupti")
    assert trust.work_outside_window(row(median=3.1e-6, work=escaped)) is not None
    # busy time decides where it is known: a side stream's 240 us still escapes...
    escaped = DeviceWork(kernels=40, kernel_us=240.0, span_us=250.0, busy_us=240.0,
                         source="cupti")
    assert trust.work_outside_window(row(median=3.1e-6, work=escaped)) is not None
    # ...while a call that waits on the host in the middle (a pageable copy) has a long
    # profiled span of idle gaps and little busy time (pmpp_v2 grayscale's reference)
    waiting = DeviceWork(kernels=2, other_ops=1, kernel_us=9.0, span_us=121.9,
                         busy_us=11.0, source="cupti")
    assert trust.work_outside_window(row(median=58.6e-6, work=waiting)) is None
    joined = DeviceWork(kernels=2, kernel_us=95.0, span_us=101.0, source="cupti")
    assert trust.work_outside_window(row(median=100e-6, work=joined)) is None
    counted = DeviceWork(kernels=1, source="graph")  # a capture's count has no span
    assert trust.work_outside_window(row(median=3.1e-6, work=counted)) is None


def test_a_shortcut_seen_in_one_mode_makes_every_mode_suspect_and_costs_the_speedup():
    evidence = {"fresh_s": [300e-6] * 9, "repeat_s": [100e-6] * 9}
    base = row("torch", baseline=True)
    cold = row("cheat", median=50e-6, details=evidence)
    warm = row("cheat", mode="warm", median=50e-6)
    base_warm = row("torch", mode="warm", baseline=True)
    done = {(r.variant, r.mode): r for r in finish_group([base, cold, base_warm, warm], None)}
    assert done[("cheat", "cold")].status == R.SUSPECT
    assert done[("cheat", "warm")].status == R.SUSPECT
    assert "(cold mode)" in done[("cheat", "warm")].error
    assert done[("cheat", "cold")].speedup is None and done[("torch", "cold")].speedup == 1.0
    assert R.exit_code(list(done.values())) == 15


def rotation(invoke, sets=3, **kwargs):
    made = [InputSet((torch.randn(64),), torch.empty(64)) for _ in range(sets)]
    def judge(pairs):
        return [compare(output, 2 * chosen.inputs[0].double(), 1e-5, 1e-5)
                for chosen, output in pairs]

    return Rotation(invoke, made, judge, **kwargs), made


def drive(calls, count):
    for _ in range(count):
        calls.before()
        calls()
        calls.after()


def test_an_honest_variant_passes_its_re_checks_and_sets_never_repeat_in_a_row():
    seen = []

    def honest(inputs, out):
        seen.append(id(out))
        torch.mul(inputs[0], 2, out=out)
        return out

    calls, _ = rotation(honest)
    drive(calls, 500)
    check, failure = calls.verdict()
    assert failure is None and check.passed
    assert all(a != b for a, b in itertools.pairwise(seen))
    assert len(calls.drawn) == RECHECKS
    assert max(d.call for d in calls.drawn) > 100  # late calls get drawn too


def test_a_variant_that_stops_working_after_its_first_calls_fails_the_re_check():
    done = {"calls": 0}

    def lazy(inputs, out):
        done["calls"] += 1
        if done["calls"] <= 3:
            torch.mul(inputs[0], 2, out=out)
        return out

    calls, _ = rotation(lazy)
    drive(calls, 300)
    _, failure = calls.verdict()
    assert failure is not None and "differs from the reference" in failure


def test_a_returned_subclass_or_an_input_is_not_an_output():
    class Lazy(torch.Tensor):
        pass

    calls, _ = rotation(lambda inputs, out: (2 * inputs[0]).as_subclass(Lazy))
    drive(calls, 20)
    assert "tensor subclass" in calls.verdict()[1]
    calls, _ = rotation(lambda inputs, out: inputs[0].mul_(2))
    drive(calls, 20)
    assert "memory of input 0" in calls.verdict()[1]


def test_the_previous_returned_output_is_poisoned_before_it_is_dropped():
    kept = []

    def returning(inputs, out):
        kept.append(2 * inputs[0])
        return kept[-1]

    calls, _ = rotation(returning)
    drive(calls, 3)
    assert torch.isnan(kept[0]).all() and torch.isnan(kept[1]).all()
    assert not torch.isnan(kept[2]).any()  # the last one is retired by close()
    calls.close()
    assert torch.isnan(kept[2]).all()


@pytest.mark.parametrize(("set_bytes", "free", "count"), [
    (3 << 26, 80 << 30, 4), (40 << 30, 80 << 30, 2), (1 << 20, None, 4), (1 << 31, None, 2)])
def test_as_many_sets_as_fit(set_bytes, free, count):
    assert set_count(set_bytes, free) == count


def test_a_probe_on_a_busy_host_is_not_judged():
    busy = {"preempted_per_call": 0.0, "preempted_per_s": 0.0, "others_cpus": 1.5}
    cached = row(mode="cpu", details={"fresh_s": [300e-6] * 9, "repeat_s": [100e-6] * 9,
                                      "fresh_host_load": busy})
    assert trust.repeat_shortcut(cached) is None
    idle = {**busy, "others_cpus": 0.1}
    evidence = cached.measurement.fresh
    calm = row(mode="cpu", details={"fresh_s": evidence.fresh_s,
                                    "repeat_s": evidence.repeat_s, "fresh_host_load": idle})
    assert trust.repeat_shortcut(calm) is not None


def looped(result: R.Result, fresh_s, seen_s, fresh_at=()) -> R.Result:
    """`result` whose mode timed `fresh_s` on never-seen inputs inside its loop, beside
    `seen_s` (run/worker/rotation.py's evidence), the fresh calls at `fresh_at` among them."""
    from dataclasses import replace

    from gpubench.timing.measurement import FreshEvidence

    evidence = FreshEvidence(tuple(fresh_s), tuple(seen_s), fresh_at=tuple(fresh_at))
    return replace(result, measurement=result.measurement.completed(fresh_in_loop=evidence))


def test_fresh_calls_in_the_loop_far_slower_than_their_neighbours_are_a_shortcut():
    """Issue 60: a variant that does less work on timed calls of inputs it has seen,
    however it tells them apart, is slower on the loop's never-seen inputs."""
    sniffer = looped(row(median=40e-6), [64e-6, 66e-6, 65e-6], [40e-6] * 20)
    found = trust.timed_shortcut(sniffer)
    assert found is not None and "timed inside the loop" in found.message
    honest = looped(row(median=60e-6), [61e-6, 75e-6, 62e-6], [60e-6] * 20)
    assert trust.timed_shortcut(honest) is None
    one = looped(row(median=40e-6), [64e-6], [40e-6] * 20)  # one call is one draw of noise
    assert trust.timed_shortcut(one) is None


def test_on_a_cpu_a_loaded_stretch_does_not_hide_the_shortcut():
    """On a CPU load slows any share of the seen calls; their floor is the work alone. A
    half-work cache whose neighbours a hog slowed past half still meets its floor (1.5x
    the median would pass it); honest floors that agree stay trusted."""
    seen = [360e-6] * 10 + [560e-6] * 12  # over half of the stretch beside a hog
    sniffer = looped(row(mode="cpu", median=480e-6), [780e-6, 800e-6], seen)
    found = trust.timed_shortcut(sniffer)
    assert found is not None and "the fastest of its timed calls" in found.message
    honest = looped(row(mode="cpu", median=800e-6), [690e-6, 900e-6],
                    [680e-6] * 10 + [900e-6] * 12)
    assert trust.timed_shortcut(honest) is None


def test_on_an_overloaded_cpu_slowed_fresh_calls_beside_slowed_neighbours_are_trusted():
    """Beyond the cores' count of load, every fresh call of an honest row can be slowed
    while one seen call of dozens ran alone: its floor is far below, but the median of
    the seen calls, slowed alike, is not. A shortcut clears both."""
    seen = [400e-6] + [650e-6] * 30
    honest = looped(row(mode="cpu", median=650e-6), [700e-6, 720e-6], seen)
    assert trust.timed_shortcut(honest) is None
    cached = looped(row(mode="cpu", median=650e-6), [900e-6, 950e-6], seen)
    assert trust.timed_shortcut(cached) is not None


def test_a_cpu_row_preempted_in_most_calls_is_not_read_for_a_shortcut():
    """Where the OS preempted most timed calls, 2-4 fresh calls are not evidence either way:
    not judged (the row already says the host was busy)."""
    from dataclasses import replace

    from gpubench.timing.hostload import HostLoad

    seen = [360e-6] * 22
    cached = looped(row(mode="cpu", median=360e-6), [780e-6, 800e-6], seen)
    assert trust.timed_shortcut(cached) is not None
    busy = replace(cached.measurement, host_load=HostLoad(preempted_per_call=0.8))
    assert trust.timed_shortcut(replace(cached, measurement=busy)) is None


def test_a_small_cpu_op_s_first_use_of_a_fresh_set_is_not_a_shortcut():
    """An honest 15 us torch.add read 34 us at best on its fresh calls beside another test
    worker: a fresh set's first use (TLB entries, cache lines) is within the slack."""
    seen = [14.6e-6] * 10 + [15.5e-6] * 20
    honest = looped(row(mode="cpu", median=15.5e-6), [34.2e-6, 36e-6], seen)
    assert trust.timed_shortcut(honest) is None


# An honest torch x*x*x over 64K floats, timed on the 2-core CPU machine beside two
# memory-copy hogs (rotation.fresh_samples's stretch, us, in call order; fresh calls at 2,
# 4, 9 and 29): the loop settles from ~60 us to ~30 us over its first calls.
SETTLING_LOOP_US = [
    168.1, 422.4, 68.2, 72.7, 66.0, 377.6, 54.1, 35.7, 29.1, 57.3, 52.6, 46.5, 34.9, 154.6,
    432.6, 231.7, 39.4, 42.2, 288.9, 58.0, 47.2, 71.4, 49.1, 38.8, 41.7, 34.0, 28.5, 70.2,
    28.0, 64.9, 161.7, 54.0, 72.4, 42.3, 43.3, 37.8, 42.7, 352.5, 61.9, 63.2, 50.8, 29.6,
    27.3, 28.1, 38.4, 24.4, 24.6, 27.6, 34.6, 28.6, 26.1, 24.8, 19.9, 34.8, 34.1, 22.6,
    40.5, 31.3, 28.5, 31.2]
SETTLING_FRESH_AT = (2, 4, 9, 29)


def settling(loop_us, fresh_at) -> R.Result:
    calls = [t * 1e-6 for t in loop_us]
    fresh = [calls[i] for i in fresh_at]
    seen = [t for i, t in enumerate(calls) if i not in fresh_at]
    return looped(row(mode="cpu", median=statistics.median(seen)), fresh, seen, fresh_at)


def test_on_a_cpu_each_fresh_call_is_read_beside_its_neighbours():
    """The recorded settling loop: every fresh call sits among its neighbours, but its
    fastest is 1.6x the stretch's median (mostly later, settled calls): read against the
    stretch it was accused, beside its neighbours it is trusted. The same loop with every
    fresh call doubled (a shortcut's seen calls at half the work) is still caught."""
    honest = settling(SETTLING_LOOP_US, SETTLING_FRESH_AT)
    assert trust.timed_shortcut(honest) is None
    unordered = looped(honest, honest.measurement.fresh_in_loop.fresh_s,
                       honest.measurement.fresh_in_loop.repeat_s)
    assert trust.timed_shortcut(unordered) is not None  # the stretch's median alone
    doubled = [t * 2 if i in SETTLING_FRESH_AT else t for i, t in enumerate(SETTLING_LOOP_US)]
    found = trust.timed_shortcut(settling(doubled, SETTLING_FRESH_AT))
    assert found is not None and "timed inside the loop" in found.message


def test_a_cpu_loop_s_fresh_calls_keep_their_places_and_their_drawn_sets_live_on():
    """rotation.fresh_samples puts each fresh call where it ran among the stretch's calls;
    on a CPU the drawn set whose values went into a rotation buffer is held until close(),
    so its pages are not given back right before the call that uses them."""
    def twice(inputs, out):
        return torch.mul(inputs[0], 2, out=out)

    spin, _ = rotation(twice, sets=4, on_cpu=True,
                       fresh=[InputSet((torch.randn(64),), torch.empty(64)) for _ in range(3)])
    spin.sampling()
    drive(spin, 40)
    times = [float(i) for i in range(40)]
    found = spin.fresh_samples(times)
    assert found.fresh_at == tuple(i for i, fresh in enumerate(spin.tags) if fresh)
    assert [t for t, _ in found.calls()] == times[:len(found.calls())]
    assert len(spin.spent) == 3 and not spin.fresh
    spin.close()
    assert not spin.spent


def test_a_zero_seen_time_in_a_record_does_not_break_the_reading():
    """A file read back may hold seen calls of no time: calls that take 30 us where their
    neighbours take none read as a shortcut, not as a ZeroDivisionError."""
    loop = [30.0 if i in SETTLING_FRESH_AT else 0.0 for i in range(60)]
    assert trust.beside_neighbours(settling(loop, SETTLING_FRESH_AT)
                                   .measurement.fresh_in_loop) == float("inf")
    assert trust.timed_shortcut(settling(loop, SETTLING_FRESH_AT)) is not None


def test_fresh_evidence_keeps_its_order_across_rounds_and_files():
    from gpubench.timing.measurement import FreshEvidence

    first = FreshEvidence((5.0,), (1.0, 2.0), fresh_at=(1,))
    second = FreshEvidence((6.0, 7.0), (3.0,), fresh_at=(0, 2))
    both = first.then(second)
    assert both.calls() == [(1.0, False), (5.0, True), (2.0, False), (6.0, True),
                            (3.0, False), (7.0, True)]
    assert FreshEvidence.from_dict(json.loads(json.dumps(both.to_dict()))) == both
    assert FreshEvidence((5.0,), (1.0,)).calls() is None  # an older record: no order
    for places in ((0, 0), (0, 5), (-1, 1)):  # a record read back whose places cannot be
        assert FreshEvidence((5.0, 6.0), (1.0, 2.0), fresh_at=places).calls() is None


def test_the_loop_s_own_fresh_calls_stand_for_the_probe_against_the_median():
    """An isolated probe call of a multi-kernel op ran 1.5x its loop on an H100, honest;
    the loop's fresh calls, in the loop's condition, sit at its median: trusted. A loop
    that skips work after its fresh calls still meets full-work fresh calls: SUSPECT."""
    isolated = {"fresh_s": [110e-6] * 9, "repeat_s": [120e-6] * 9}
    assert trust.repeat_shortcut(row(median=74e-6, details=isolated)) is not None
    honest = looped(row(median=74e-6, details=isolated), [80e-6, 73e-6, 81e-6], [74e-6] * 9)
    assert trust.repeat_shortcut(honest) is None
    late = looped(row(median=40e-6, details=isolated), [80e-6, 73e-6, 81e-6], [74e-6] * 9)
    assert trust.repeat_shortcut(late) is not None
