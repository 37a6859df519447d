"""gpubench tune's pure logic: config spaces, the racing schedule, ties, the tie-break, the
pinned file, occupancy and what `compare` says of two tune records (synthetic samples)."""

from __future__ import annotations

import random

import pytest

from gpubench.records.point import PointKey
from gpubench.records.result import Result
from gpubench.records.run import RunDocument
from gpubench.records.shape import Shape
from gpubench.timing.measurement import Measurement
from gpubench.tune import pinned as P
from gpubench.tune.occupancy import SmLimits, occupancy
from gpubench.tune.racing import DROPPED, FAILED, RACING, Race, choose, tie_break
from gpubench.tune.space import (
    TuneConfig,
    autotuners,
    config_name,
    declared_space,
    define_flags,
    space_problem,
    split_name,
    triton_space,
)
from gpubench.tune.summary import best_change, tune_meta


def samples(median: float, spread: float = 0.003, n: int = 400, seed: int = 0) -> list[float]:
    """n times around `median` with a relative normal spread (a steady GPU kernel's)."""
    rng = random.Random(seed)
    return [median * (1 + rng.gauss(0, spread)) for _ in range(n)]


def configs(count: int) -> list[TuneConfig]:
    return [TuneConfig(i, {"BLOCK": 64 * (i + 1)}, 4, 3) for i in range(count)]


# ---------------------------------------------------------------- spaces


def test_config_names_round_trip_and_plain_names_stay_plain():
    assert split_name(config_name("triton_tc", 12)) == ("triton_tc", 12)
    assert split_name("triton_tc") == ("triton_tc", None)
    assert split_name("odd@name") == ("odd@name", None)


class FakeConfig:
    def __init__(self, kwargs, num_warps, num_stages):
        self.kwargs, self.num_warps, self.num_stages = kwargs, num_warps, num_stages


class Autotuner:  # Triton's class name: what is_autotuner recognises, without triton
    def __init__(self, configs):
        self.configs, self.fn = configs, None


def test_triton_space_is_the_autotuners_own_list_in_order():
    tuner = Autotuner([FakeConfig({"BLOCK_M": 64, "BLOCK_N": 128}, 4, 3),
                       FakeConfig({"BLOCK_M": 128, "BLOCK_N": 64}, 8, 4)])
    found = autotuners({"helper": len, "kernel": tuner, "CONFIGS": tuner.configs})
    assert found == [("kernel", tuner)]
    space = triton_space(tuner)
    assert [c.label for c in space] == ["BLOCK_M=64 BLOCK_N=128 w4 s3",
                                        "BLOCK_M=128 BLOCK_N=64 w8 s4"]
    assert [c.index for c in space] == [0, 1]


def test_declared_space_is_the_product_first_name_slowest_with_its_flags():
    space = declared_space({"BLOCK": (128, 256), "ITEMS": (1, 2)})
    assert [dict(c.params) for c in space] == [
        {"BLOCK": 128, "ITEMS": 1}, {"BLOCK": 128, "ITEMS": 2},
        {"BLOCK": 256, "ITEMS": 1}, {"BLOCK": 256, "ITEMS": 2}]
    assert define_flags(space[1]) == ("-DBLOCK=128", "-DITEMS=2")


@pytest.mark.parametrize("space, fragment", [
    ({}, "non-empty dict"),
    ({"2BAD": (1,)}, "not a C identifier"),
    ({"BLOCK": ()}, "non-empty tuple"),
    ({"BLOCK": "256"}, "non-empty tuple"),
    ({"BLOCK": ("1; rm -rf",)}, "not an int or an identifier"),
    ({"BLOCK": (True,)}, "not an int or an identifier"),
])
def test_a_bad_declared_space_is_refused_with_the_reason(space, fragment):
    assert fragment in space_problem(space)


def test_a_good_declared_space_has_no_problem():
    assert space_problem({"BLOCK": (128, 256), "KIND": ("fast", "safe")}) is None


# ---------------------------------------------------------------- racing


def race_of(medians: list[float], **options) -> Race:
    race = Race(configs(len(medians)), **options)
    for index, median in enumerate(medians):
        race.add(index, samples(median, seed=index))
    return race


def test_a_round_stops_the_clearly_slower_and_the_slower_half_keeps_the_tied():
    # 0 and 1 are 0.2% apart (tied); 2 is 1% behind (unsure: not clearly slower, not tied);
    # 3 is 30% behind (clearly slower).
    race = race_of([100e-6, 100.2e-6, 101e-6, 130e-6])
    stopped = race.end_round()
    states = {i: c.state for i, c in race.contenders.items()}
    assert states == {0: RACING, 1: RACING, 2: DROPPED, 3: DROPPED}
    assert sorted(stopped) == [2, 3]
    assert "clearly behind" in race.contenders[3].reason
    assert "slower half" in race.contenders[2].reason


def test_the_race_ends_when_one_is_left_or_after_max_rounds():
    race = race_of([100e-6, 150e-6])
    assert not race.done
    race.end_round()
    assert race.racing() == [0] and race.done
    tied = race_of([100e-6, 100.3e-6, 100.1e-6], max_rounds=2)
    while not tied.done:
        for index in tied.racing():
            tied.add(index, samples(tied.contenders[index].median, seed=10 + index))
        tied.end_round()
    assert tied.round <= 2


def test_budgets_double_each_round():
    race = Race(configs(2))
    first = race.budget_s(0.02)
    race.round = 3
    assert race.budget_s(0.02) == pytest.approx(first * 8)


def test_exhaustive_drops_nothing_and_ends_after_one_round():
    race = race_of([100e-6, 130e-6, 170e-6], exhaustive=True)
    assert race.end_round() == []
    assert race.done and all(c.state == RACING for c in race.contenders.values())
    assert choose(race, {}).best == 0


def test_the_tied_are_marked_and_fewest_registers_breaks_the_tie():
    race = race_of([100e-6, 100.2e-6, 130e-6])
    choice = choose(race, {0: 128, 1: 96, 2: 40})
    assert choice.fastest == 0
    assert choice.tied == (0, 1)
    assert choice.best == 1  # tied with the fastest, fewer registers
    assert "tied" in choice.why and "fewest registers" in choice.why


def test_without_register_counts_the_first_declared_of_the_tied_wins():
    race = race_of([100.2e-6, 100e-6])
    assert choose(race, {}).best == 0
    assert tie_break([3, 1, 2], {1: None, 2: 64, 3: 64}) == 2  # unknown counts go last


def test_a_failed_config_is_never_chosen_even_if_fastest():
    race = race_of([50e-6, 100e-6])
    race.fail(0, "fail", "output differs from the reference")
    assert race.contenders[0].state == FAILED
    assert choose(race, {}).best == 1


def test_no_choice_when_every_config_failed():
    race = Race(configs(2))
    for index in (0, 1):
        race.fail(index, "fail", "half of the output unwritten")
    choice = choose(race, {})
    assert choice.best is None and "no config passed its check (2 failed)" in choice.why


# ---------------------------------------------------------------- pinned file, occupancy


def test_pinned_file_round_trips_and_finds_its_config_by_label():
    config = TuneConfig(2, {"BLOCK": 256}, 4, 3)
    pinned = P.Pinned("square", "triton", "float32", "n=1048576", "NVIDIA H200", config,
                      "profiles/x", "the fastest", ("BLOCK=128 w4 s3",))
    back = P.Pinned.from_json(pinned.to_json())
    assert back == pinned
    moved = [TuneConfig(0, {"BLOCK": 256}, 4, 3), TuneConfig(1, {"BLOCK": 512}, 4, 3)]
    assert P.find_config(back, moved).index == 0
    assert P.find_config(back, moved[1:]) is None


@pytest.mark.parametrize("text", ["[]", "{}", "not json", '{"format": 99}'])
def test_a_foreign_pinned_file_is_refused_with_a_reason(text):
    with pytest.raises(ValueError):
        P.Pinned.from_json(text)


def test_pinned_path_is_per_gpu_variant_dtype_and_shape(tmp_path):
    path = P.pinned_path(tmp_path, "NVIDIA H200", "triton_tc", "float16", "M4096_N4096_K4096")
    assert path == tmp_path / "tuned" / "nvidia-h200" / "triton_tc" / \
        "float16-M4096_N4096_K4096.json"
    assert P.gpu_slug("") == "cpu"


def test_occupancy_napkin_math():
    h100 = SmLimits(registers=65536, shared_bytes=228 * 1024, threads=2048)
    assert occupancy(h100, 256, 128, 0) == pytest.approx(0.25)  # registers bound: 2 blocks
    assert occupancy(h100, 128, 32, 100 * 1024) == pytest.approx(2 * 128 / 2048)  # shared
    assert occupancy(h100, 256, None, 0) is None


# ---------------------------------------------------------------- compare of tune records


def tune_record(medians: list[float], seed: int, registers=None) -> RunDocument:
    race = race_of(medians)
    for index, median in enumerate(medians):
        race.contenders[index].samples = samples(median, seed=seed + index)
    race.end_round()
    choice = choose(race, registers or {})
    results = tuple(
        Result(PointKey("mm", config_name("tc", i), "float16", Shape({"n": 64}), "cold"),
               "triton", "ok", measurement=Measurement("cold", samples_s=tuple(c.samples)))
        for i, c in race.contenders.items())
    return RunDocument({"tune": tune_meta("tc", race, choice, 1.0, "")}, {}, results)


def test_compare_says_the_same_pick():
    line = best_change(tune_record([100e-6, 130e-6], 0), tune_record([100e-6, 131e-6], 50),
                       0.01)
    assert line.startswith("tune: the same config was chosen in both")


def test_compare_calls_a_change_between_tied_configs_not_real():
    # BASE: config 1 clearly slower; NEW: the two tied, and 1 has fewer registers
    line = best_change(tune_record([100e-6, 130e-6], 0),
                       tune_record([100.2e-6, 100e-6], 50, {0: 128, 1: 64}), 0.01)
    assert "changed" in line and "not a real change" in line


def test_compare_calls_a_clear_change_real():
    line = best_change(tune_record([100e-6, 120e-6], 0), tune_record([120e-6, 100e-6], 50),
                       0.01)
    assert "changed" in line and "; real:" in line


def test_compare_of_plain_runs_says_nothing_about_tuning():
    assert best_change(RunDocument({}, {}, ()), RunDocument({}, {}, ()), 0.01) is None


# ---------------------------------------------------------------- cuobjdump's resources


def test_resource_usage_lines_are_read_per_kernel():
    """Real cuobjdump output, recorded on the H200 (tests/fixtures/cuobjdump/README.md)."""
    from conftest import FIXTURES
    from gpubench.tools.cuobjdump import parse_resource_usage

    text = (FIXTURES / "cuobjdump" / "square-h200-resource-usage.txt").read_text()
    assert parse_resource_usage(text) == {
        "_Z13square_kernelI13__nv_bfloat16EvPKT_PS1_l": {"REG": 8, "SHARED": 0, "LOCAL": 0},
        "_Z13square_kernelI6__halfEvPKT_PS1_l": {"REG": 8, "SHARED": 0, "LOCAL": 0},
        "_Z13square_kernelIfEvPKT_PS0_l": {"REG": 10, "SHARED": 0, "LOCAL": 0}}


# ---------------------------------------------------------------- the worker's side


def test_a_cuda_config_resolves_to_its_flags_and_a_pin_by_gpu_name(tmp_path, monkeypatch):
    """tune_apply without a GPU: 'cuda@1' builds with -DSQUARE_THREADS=128 (and still
    exports its function); the plain name runs the config pinned for this GPU's name."""
    import shutil

    from conftest import REPO
    from gpubench.families.discovery import load_family
    from gpubench.families.sources import build_request
    from gpubench.families.spec import Machine
    from gpubench.records.point import Task
    from gpubench.run.worker import tune_apply

    monkeypatch.setattr(tune_apply, "_device_name", lambda: "NVIDIA H200")
    shutil.copytree(REPO / "kernels" / "square", tmp_path / "square")
    family = load_family("square", tmp_path / "square")
    machine = Machine(has_cuda=True, has_triton=False)
    shape = Shape({"n": 1024})
    tuned = tune_apply.Tuning(machine).resolve(
        family, Task(1, "square", str(tmp_path / "square"), "cuda@1", "float32", shape, 0))
    assert tuned.source == "tune" and tuned.config.label == "SQUARE_THREADS=128"
    request = build_request(family, tuned.variant, machine)
    assert "-DSQUARE_THREADS=128" in request.cuda_flags and request.functions == ("square",)

    path = P.pinned_path(tmp_path / "square", "NVIDIA H200", "cuda", "float32", shape.slug())
    path.parent.mkdir(parents=True)
    config = TuneConfig(3, {"SQUARE_THREADS": 512})
    path.write_text(P.Pinned("square", "cuda", "float32", shape.text(), "NVIDIA H200",
                             config).to_json())
    plain = Task(2, "square", str(tmp_path / "square"), "cuda", "float32", shape, 0)
    tuned = tune_apply.Tuning(machine).resolve(family, plain)
    assert tuned.source == "pinned" and "-DSQUARE_THREADS=512" in tuned.variant.cuda_flags
    assert "ran the pinned config SQUARE_THREADS=512" in tuned.build().note
    other = tune_apply.Tuning(machine)
    other.device_name = "NVIDIA H100 80GB HBM3"  # another GPU model reads no pin
    assert other.resolve(family, plain).config is None


def test_comparisons_are_remembered():
    race = race_of([100e-6, 100.2e-6])
    first = race.versus(0, 1)
    assert race.versus(0, 1) is first  # no second bootstrap for the same samples
    race.add(1, samples(100.2e-6, seed=99))
    assert race.versus(0, 1) is not first
