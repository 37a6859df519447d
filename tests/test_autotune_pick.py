"""Which config Triton's autotuner ran a point with, kept in the result's build facts
(run/worker/tune_apply.py), and `compare` naming it when two runs ran other configs
(analysis/config_change.py). Triton's Autotuner is stood in for by a class of its name:
it cannot benchmark without a GPU (no driver under TRITON_INTERPRET); the real one is
tested on the GPU in tests/test_gpu.py
(test_the_triton_autotuners_pick_is_kept_with_the_point)."""

from gpubench.analysis import comparison as C
from gpubench.analysis.config_change import config_change
from gpubench.families.spec import Machine, TritonVariant
from gpubench.records.build_info import BuildInfo
from gpubench.records.point import PointKey
from gpubench.records.result import OK, Result
from gpubench.records.run import RunDocument
from gpubench.records.shape import Shape
from gpubench.run.worker import tune_apply
from gpubench.timing.measurement import Measurement


class Config:
    def __init__(self, block: int, warps: int):
        self.kwargs, self.num_warps, self.num_stages = {"BLOCK": block}, warps, 3

    def __str__(self) -> str:
        return f"BLOCK: {self.kwargs['BLOCK']}, num_warps: {self.num_warps}"


class Autotuner:  # the name is_autotuner knows; run() keeps the pick as Triton's does,
    def __init__(self, configs):  # with no best_config before the first call
        self.configs, self.fn = configs, None

    def run(self, choice: int):
        self.best_config = self.configs[choice]


def tuned_call(tuner, call) -> tune_apply.Tuned:
    variant = TritonVariant("tc", module="k.py", function="f")
    tuned = tune_apply.Tuned(variant, autotuner=tuner)
    with tune_apply.Tuning(Machine(has_cuda=False, has_triton=True)).first_call(_Family(),
                                                                           tuned):
        call()
    return tuned


class _Family:
    directory = "kernels/demo"


def test_the_first_call_of_a_process_has_its_pick_read_too():
    tuner = Autotuner([Config(64, 4), Config(128, 8)])
    tuned = tuned_call(tuner, lambda: tuner.run(1))
    assert tuned.build().config["index"] == 1


def test_the_autotuners_pick_for_the_call_goes_to_the_build_facts():
    tuner = Autotuner([Config(64, 4), Config(128, 8), Config(256, 8)])
    tuner.run(0)  # an earlier point's pick must not be read as this one's
    tuned = tuned_call(tuner, lambda: tuner.run(2))
    config = tuned.build(BuildInfo(compile_s=0.1)).config
    assert (config["index"], config["label"], config["source"]) == (2, "BLOCK=256 w8 s3",
                                                                     "autotune")


def test_a_call_that_never_went_through_the_autotuner_records_no_pick():
    tuner = Autotuner([Config(64, 4), Config(128, 8)])
    tuner.run(1)
    tuned = tuned_call(tuner, lambda: None)
    assert tuned.build().config is None


def test_a_list_of_one_config_is_no_choice_and_records_nothing():
    tuner = Autotuner([Config(64, 4)])
    tuned = tuned_call(tuner, lambda: tuner.run(0))
    assert tuned.build().config is None


def result_with(config: dict | None, median: float) -> Result:
    key = PointKey("matmul", "triton_tc", "float16", Shape({"n": 1024}), "cold")
    samples = tuple(median * (1 + 0.001 * (i % 7)) for i in range(200))
    build = BuildInfo(config=config) if config else BuildInfo()
    return Result(key=key, kind="triton", status=OK, device="cuda", build=build,
                  measurement=Measurement("cold", "test", samples))


def pick(index: int) -> dict:
    return {"index": index, "label": f"BLOCK={64 << index}", "source": "autotune"}


def compared(base: Result, new: Result):
    runs = [RunDocument(meta={"run_id": "r"}, env={"gpu": "G"}, results=(r,))
            for r in (base, new)]
    return C.compare_runs(*runs).points[0].comparison


def test_compare_names_another_pick_and_keeps_the_measured_verdict():
    comparison = compared(result_with(pick(0), 10e-6), result_with(pick(2), 8e-6))
    assert comparison.verdict == C.FASTER
    assert comparison.reason == "autotune picked config #0 in BASE, #2 in NEW"


def test_compare_says_nothing_of_configs_when_the_pick_is_the_same_or_unknown():
    assert compared(result_with(pick(1), 10e-6), result_with(pick(1), 10e-6)).reason == ""
    assert config_change(result_with(None, 1e-6), result_with(pick(1), 1e-6)) == ""


def test_a_tuned_or_pinned_config_against_another_is_said_as_ran():
    pinned = {"index": 3, "label": "BLOCK=512", "source": "pinned"}
    tuned = {"index": 1, "label": "BLOCK=128", "source": "tune"}
    assert config_change(result_with(pinned, 1e-6), result_with(tuned, 1e-6)) == \
        "ran config #3 in BASE, #1 in NEW"


class Hostile:
    """A kernel module's own class named like Triton's, whose pick cannot be read."""

    def __str__(self) -> str:
        raise RuntimeError("no")


def test_a_pick_that_cannot_be_read_records_nothing_and_fails_nothing():
    tuner = Autotuner([Config(64, 4), Config(128, 8)])

    def call():
        tuner.best_config = Hostile()  # neither of the list's configs, and str() raises

    tuned = tuned_call(tuner, call)
    assert tuned.build().config is None
