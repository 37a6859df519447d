"""The pure parts of scale-out: the order workers take points in, group completion,
the interference verdict, speedups and compare only within one device model."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest
from test_results_and_timing import result

from gpubench.analysis.comparison import compare_runs
from gpubench.families.discovery import family_dirs, load_family
from gpubench.families.spec import Machine
from gpubench.records.run import RunDocument
from gpubench.records.shape import ShapeChoice
from gpubench.run.interference.reference import assess
from gpubench.run.lanes.lane import choose_gpus
from gpubench.run.plan import plan_points
from gpubench.run.schedule import (
    EMPTY,
    GroupTracker,
    LaneState,
    SharedQueue,
    build_identity,
    build_parallelism,
    builds_first,
    estimated_cost,
    kind_of,
    order_for_workers,
    pick_for_lane,
)
from gpubench.verdicts.derive import speedups

GPU = Machine(has_cuda=True, has_triton=True, device_name="cuda")


def planned():
    dirs = family_dirs()
    families = [load_family(name, dirs[name]) for name in ("matmul", "square")]
    choices = {"matmul": ShapeChoice(sizes=(1024, 4096)), "square": ShapeChoice(sizes=(2**20,))}
    return plan_points(families, GPU, choices, ("float32",))


def test_one_worker_keeps_the_plan_order():
    points = planned()
    assert order_for_workers(points, 1) == points


def test_several_workers_take_builds_first_then_unbuilt_then_built_points_largest_first():
    points = planned()
    order = order_for_workers(points, 2)
    assert sorted(map(id, order)) == sorted(map(id, points))  # every point, once
    builds = {build_identity(p) for p in points} - {None}
    assert len(builds) == 2  # matmul's naive+tiled share one build; square's cuda is one
    skipped = [p for p in order if p.skip]  # wmma has no fp32: skipped points go first
    assert order[:len(skipped)] == skipped
    order = order[len(skipped):]
    head = order[:len(builds)]
    assert {build_identity(p) for p in head} == builds
    assert head[0].family.name == "matmul"  # the larger build point first
    rest = order[len(builds):]
    kinds = [build_identity(p) is None for p in rest]
    assert kinds == sorted(kinds, reverse=True)  # nothing-to-build points before built ones
    unbuilt = [p for p in rest if build_identity(p) is None]
    costs = [estimated_cost(p) for p in unbuilt]
    assert costs == sorted(costs, reverse=True)


def test_a_worker_keeps_to_the_kinds_it_has_run_then_claims_new_ones():
    points = [p for p in planned() if not p.skip]
    queued = list(enumerate(points))
    first = pick_for_lane(queued, set(), set())
    assert first == 0  # nothing run, nothing claimed: the queue's first
    mine = kind_of(points[3])
    assert pick_for_lane(queued, {mine}, {mine}) == next(
        i for i, p in enumerate(points) if kind_of(p) == mine)  # the first of its own kind
    taken = {kind_of(p) for p in points[:5]}
    fresh = next(i for i, p in enumerate(points) if kind_of(p) not in taken)
    assert pick_for_lane(queued, set(), taken) == fresh  # a kind no worker has run yet
    everything = {kind_of(p) for p in points}
    assert pick_for_lane(queued, set(), everything) == 0  # else the queue's first
    assert pick_for_lane([], set(), set()) is None
    urgent = frozenset({id(points[1])})  # a build the workers make: it starts now
    assert pick_for_lane(queued[1:], {kind_of(points[-1])}, everything, urgent) == 1


def test_the_shared_queue_gives_every_point_once_and_keeps_groups_on_their_worker():
    points = planned()
    shared = SharedQueue(points, 2, prebuilt=True)
    lanes = [LaneState(), LaneState()]
    taken: list[list] = [[], []]
    lane = 0
    while (item := shared.take(lanes[lane], lambda point: True)) is not EMPTY:
        taken[lane].append(item)
        lane = 1 - lane  # the workers take turns
    indices = sorted(index for items in taken for index, _ in items)
    assert indices == list(range(len(points)))  # every point once, by its plan index
    groups = [{p.group for _, p in items if not p.skip} for items in taken]
    # A group's variants are measured in one process; taking strict turns, the workers
    # share only the last group begun (the tail: nothing fresh was left to begin).
    begun_last = [p.group for items in taken for _, p in items if not p.skip][-1]
    assert groups[0] & groups[1] <= {begun_last}
    assert [lane.kinds for lane in lanes] == [{kind_of(p) for _, p in items if not p.skip}
                                              for items in taken]  # skipped: never run
    waiting = SharedQueue(points, 2, prebuilt=True)
    assert waiting.take(LaneState(), lambda point: False) is None  # none ready yet: wait
    one = SharedQueue(points, 1, prebuilt=False)
    assert [one.take(LaneState(), lambda p: True)[1] for _ in points] == points  # plan order
    assert builds_first(points, 1, False) == [] and builds_first(points, 2, True) == []
    assert builds_first(points, 2, False)


def test_a_worker_finishes_its_groups_then_begins_fresh_ones_then_helps_others():
    points = [p for p in planned() if not p.skip]
    queued = list(enumerate(points))
    mine = points[4].group
    first_mine = next(i for i, p in enumerate(points) if p.group == mine)
    begun = {p.group for p in points[:3]} | {mine}
    assert pick_for_lane(queued, set(), set(), frozenset(), {mine}, begun) == first_mine
    fresh = next(i for i, p in enumerate(points) if p.group not in begun)
    assert pick_for_lane(queued, set(), set(), frozenset(), set(), begun) == fresh
    # a fresh group's point of a kind this worker has run (its first use paid) comes first
    ran = {kind_of(points[-1])}
    same_kind = next(i for i, p in enumerate(points) if p.group not in begun and
                     kind_of(p) in ran)
    assert same_kind > fresh
    assert pick_for_lane(queued, ran, ran, frozenset(), set(), begun) == same_kind
    everyone = {p.group for p in points}  # only others' groups are left: the tail is shared
    assert pick_for_lane(queued, set(), set(), frozenset(), set(), everyone) == 0
    assert pick_for_lane(queued, ran, ran, frozenset(), set(), everyone) == next(
        i for i, p in enumerate(points) if kind_of(p) in ran)


def test_a_group_completes_with_its_last_point_in_any_order():
    points = planned()
    tracker = GroupTracker(points)
    shuffled = random.Random(3).sample(points, len(points))
    completed = [p.group for p in shuffled if tracker.done(p)]
    assert len(completed) == len(set(completed)) and set(completed) == {p.group for p in points}
    tracker = GroupTracker(points)
    for index, point in enumerate(shuffled):  # complete exactly at its group's last point
        last = max(i for i, p in enumerate(shuffled) if p.group == point.group)
        assert tracker.done(point) == (index == last)
    assert tracker.open_groups() == []


def test_interference_is_a_warning_only_beyond_the_noise():
    rng = random.Random(1)
    alone = [1e-3 * (1 + rng.gauss(0, 0.002)) for _ in range(50)]
    same = [1e-3 * (1 + rng.gauss(0, 0.002)) for _ in range(50)]
    slower = [1.1e-3 * (1 + rng.gauss(0, 0.002)) for _ in range(50)]
    quiet = assess({("cuda:0", "ref"): alone}, {("cuda:0", "ref"): same}, 2)
    assert quiet.warning() is None and "SAME" in quiet.summary()
    loud = assess({("cuda:0", "ref"): alone, ("cuda:1", "ref"): alone},
                  {("cuda:0", "ref"): same, ("cuda:1", "ref"): slower}, 2)
    assert [s.device_id for s in loud.slowed] == ["cuda:1"]
    assert "cuda:1 ref +10.0%" in loud.warning() and "fewer devices" in loud.warning()
    assert loud.to_dict()["warning"] == loud.warning()
    missing = assess({("cuda:0", "ref"): alone}, {}, 2)
    assert missing.problem and "not measured" in missing.summary()


def test_speedups_and_compare_only_between_results_of_one_device_model():
    base = replace(result("base", samples=(2e-3,) * 10, baseline=True), device_name="H200")
    same = replace(result("fast", samples=(1e-3,) * 10), device_name="H200")
    other = replace(result("other", samples=(1e-3,) * 10), device_name="H100")
    old = replace(result("old", samples=(1e-3,) * 10))  # a record without a device name
    assert speedups([base, same, other, old]) == [1.0, 2.0, None, 2.0]
    compared = compare_runs(RunDocument({}, {}, (same,)),
                            RunDocument({}, {}, (replace(same, device_name="H100"),)))
    point = compared.points[0]
    assert point.comparison is None and "H200 in BASE, H100 in NEW" in point.note


def test_devices_are_chosen_among_the_visible_ones():
    assert choose_gpus("all", ["0", "1", "2"]) == ["0", "1", "2"]
    assert choose_gpus("2, 0,2", ["0", "1", "2"]) == ["2", "0"]
    for spec, visible, message in (("3", ["0", "1"], "no GPU 3 here; visible: 0, 1"),
                                   ("all", [], "none is visible"), (",", ["0"], "none named")):
        try:
            choose_gpus(spec, visible)
        except Exception as exc:
            assert message in str(exc)
        else:
            raise AssertionError(f"{spec} was accepted")


def test_with_a_build_phase_no_point_is_put_first_to_build():
    points = planned()
    order = [p for p in order_for_workers(points, 2, prebuilt=True) if not p.skip]
    kinds = [build_identity(p) is None for p in order]
    assert kinds == sorted(kinds, reverse=True)  # torch/Triton points first, built ones after


@pytest.mark.parametrize(("builds", "cores", "lanes", "expected"), [
    (7, 32, 2, (7, 4)),  # the 2-GPU host: every build at once, the 29 free cores shared
    (7, 16, 1, (7, 2)),  # one GPU's host: 14 free cores, 2 compiler jobs each
    (3, 64, 4, (3, 19)),  # few builds, many cores: each ninja gets more jobs
    (20, 16, 1, (7, 2)),  # more builds than pairs of free cores: builders queue them
    (3, 2, 2, (1, 2)),  # the CI machine: one builder, which still runs 2 jobs
])
def test_build_parallelism_shares_the_free_cores(builds, cores, lanes, expected):
    assert build_parallelism(builds, cores, lanes) == expected


def _replay_script():
    from conftest import load_script

    return load_script("benchmarks/replay_schedule.py")


def test_replaying_a_real_run_keeping_kinds_and_groups_together():
    """On the 4-H200 run's own points (worker logs, tests/fixtures/scale_out): the queue's
    order paid a kind's first use far more often than one GPU did; kinds kept together pay
    about what one GPU pays, and the workers still end together."""
    from pathlib import Path

    replay = _replay_script()
    fixtures = Path(__file__).resolve().parent / "fixtures" / "scale_out"
    one_gpu = replay.run_tasks(fixtures / "1gpu-warm")
    parallel = replay.run_tasks(fixtures / "all-warm")
    assert len(one_gpu) == 174 and len(parallel) == 174  # the interference tasks left out
    seconds = {label: spent for _, label, spent in one_gpu}
    queue = [label for _, label, _ in sorted(parallel)]
    kinds_on_one_gpu = len({kind_of(replay.as_point(label)) for label in queue})
    queued = replay.replay(queue, seconds, 4, "queue", 0.7, 0.013)
    kept = replay.replay(queue, seconds, 4, "kinds kept", 0.7, 0.013)
    assert queued[2] > 2 * kinds_on_one_gpu  # each of 4 workers paid most kinds again
    assert kept[2] <= kinds_on_one_gpu + 4
    assert kept[0] < queued[0]  # the run ends sooner
    assert kept[0] - kept[1] < 0.5  # and its workers end within half a second
    alone = replay.replay(queue, seconds, 1, "kinds kept", 0.7, 0.013)
    assert alone[2] == kinds_on_one_gpu
    # Groups kept (what the runner does): almost no group split over workers, at a tail
    # within 1% of kinds kept, paying fewer first uses than the queue's order.
    groups = len({replay.as_point(label).group for label in queue})
    together = replay.replay(queue, seconds, 4, "groups kept", 0.7, 0.013)
    assert queued[3] == groups and together[3] <= 2
    assert together[0] < 1.01 * kept[0] and together[0] - together[1] < 0.5
    assert together[2] < queued[2]


def test_the_replay_reads_only_whole_point_lines(tmp_path):
    """A log cut short, or a label that is no point, is no task: never a traceback."""
    log = tmp_path / "worker-1.log"
    log.write_text("[gpubench worker] 10:00:00.000 task 1: weird\x1b[2J\n"
                   "[gpubench worker] 10:00:00.500 task 1 done\n"
                   "[gpubench worker] 10:00:01.000 task 2: square/torch/n=1024/float32\n"
                   "[gpubench worker] 10:00:01.250 task 2 done\n"
                   "[gpubench worker] 10:00:02.000 task 3: square/torch/n=2048/float32\n")
    tasks = _replay_script().read_tasks(log)
    assert [(label, round(spent, 3)) for _, label, spent in tasks] == [
        ("square/torch/n=1024/float32", 0.25)]
