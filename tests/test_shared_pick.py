"""One autotune pick for both sides of an A/B pair whose Triton kernel is the same
(run/ab/shared_pick.py), and the verdict's reason naming a pick that moved with a changed
kernel (run/ab/rows.with_config_moves). Triton's Autotuner and JIT function are stood in
for by classes of their names and attributes: the real ones cannot tune without a GPU;
on the GPU, benchmarks/aa_false_alarms.py runs the matmul family's autotuned kernel
against itself (journal, issue 63)."""

from test_autotune_pick import tuned_call

from gpubench.analysis.comparison import FASTER, SAME
from gpubench.records.ab import PairVerdict, base_name
from gpubench.records.build_info import BuildInfo
from gpubench.records.point import PointKey
from gpubench.records.result import OK, Result
from gpubench.records.shape import Shape
from gpubench.records.worker_result import WorkerResult
from gpubench.run.ab.rows import with_config_moves
from gpubench.run.ab.shared_pick import jointly_fastest, same_kernel, share_pick
from gpubench.run.worker import tune_apply


class Config:
    def __init__(self, block: int):
        self.kwargs, self.num_warps, self.num_stages = {"BLOCK": block}, 4, 3

    def __str__(self) -> str:
        return f"BLOCK: {self.kwargs['BLOCK']}"


class JITFunction:
    def __init__(self, key: str):
        self.cache_key = key


class Heuristics:  # Triton's heuristics wrapper: the JIT function under `.fn`
    def __init__(self, fn):
        self.fn = fn


class Autotuner:
    """Triton's tuning as the worker sees it: a pick per call, and a new timings dict
    each time the list is benchmarked."""

    def __init__(self, key: str, blocks=(64, 128, 256)):
        self.configs = [Config(b) for b in blocks]
        self.fn = Heuristics(JITFunction(key))

    def tune(self, times_ms: list[float]):
        self.configs_timings = {c: [t, t * 0.9, t * 1.1]
                                for c, t in zip(self.configs, times_ms, strict=True)}
        self.best_config = min(self.configs_timings, key=self.configs_timings.get)

    def reuse(self):  # a key tuned before: the pick again, no benchmark
        self.best_config = self.configs[0]


def test_one_kernel_with_two_picks_runs_the_config_fastest_in_both_tunings():
    base_tuner, new_tuner = Autotuner("k1"), Autotuner("k1")
    base = tuned_call(base_tuner, lambda: base_tuner.tune([9.0, 9.2, 12.0]))  # keeps 64
    new = tuned_call(new_tuner, lambda: new_tuner.tune([9.6, 7.6, 12.0]))  # keeps 128
    shared = share_pick(base, new)
    assert shared is not None
    assert shared.config.label == "BLOCK=128 w4 s3"  # 9.2 + 7.6 < 9.0 + 9.6
    assert (shared.base_pick.index, shared.new_pick.index) == (0, 1)
    # each autotuner now runs its own config object of that label, untuned
    for tuner in (base_tuner, new_tuner):
        assert tuner.configs == [getattr(tuner, tune_apply.ALL_CONFIGS)[1]]


def test_the_shared_pick_goes_to_both_sides_build_facts_and_the_verdicts_reason():
    base_tuner, new_tuner = Autotuner("k1"), Autotuner("k1")
    base = tuned_call(base_tuner, lambda: base_tuner.tune([9.0, 9.2, 12.0]))
    new = tuned_call(new_tuner, lambda: new_tuner.tune([9.2, 7.6, 12.0]))
    shared = share_pick(base, new)
    checked = WorkerResult(OK, build=new.build(BuildInfo(note="slow build")))
    build = shared.applied(checked).build
    assert build.note == "slow build"
    assert (build.config["label"], build.config["index"]) == ("BLOCK=128 w4 s3", 1)
    assert build.config["source"] == "autotune" and build.config["kept"] == {"base": 0,
                                                                             "new": 1}
    shape = Shape({"M": 1024}).text()
    verdict = PairVerdict("tc", "bfloat16", shape, "cold", True, SAME, reason="")
    rows = [row("tc", 1, build.config), row(base_name("tc"), 1, build.config)]
    assert with_config_moves([verdict], rows)[0].reason == (
        "one Triton kernel on both sides: both ran config #1, the faster in both tunings; "
        "their autotuners kept #0 in BASE, #1 in NEW")


def test_a_changed_kernel_keeps_each_sides_own_pick():
    base_tuner, new_tuner = Autotuner("k1"), Autotuner("k2")
    base = tuned_call(base_tuner, lambda: base_tuner.tune([9.0, 9.2, 12.0]))
    new = tuned_call(new_tuner, lambda: new_tuner.tune([9.6, 7.6, 12.0]))
    assert share_pick(base, new) is None
    assert len(base_tuner.configs) == len(new_tuner.configs) == 3


def test_another_config_list_or_an_unreadable_kernel_key_shares_nothing():
    base_tuner, new_tuner = Autotuner("k1"), Autotuner("k1", blocks=(64, 128, 512))
    base = tuned_call(base_tuner, lambda: base_tuner.tune([9.0, 9.2, 12.0]))
    new = tuned_call(new_tuner, lambda: new_tuner.tune([9.6, 7.6, 12.0]))
    assert share_pick(base, new) is None
    base_tuner, new_tuner = Autotuner("k1"), Autotuner("k1")
    base_tuner.fn = new_tuner.fn = Heuristics(object())  # no cache_key anywhere
    base = tuned_call(base_tuner, lambda: base_tuner.tune([9.0, 9.2, 12.0]))
    new = tuned_call(new_tuner, lambda: new_tuner.tune([9.6, 7.6, 12.0]))
    assert share_pick(base, new) is None


def test_the_same_pick_on_both_sides_is_left_alone():
    base_tuner, new_tuner = Autotuner("k1"), Autotuner("k1")
    base = tuned_call(base_tuner, lambda: base_tuner.tune([9.0, 9.2, 12.0]))
    new = tuned_call(new_tuner, lambda: new_tuner.tune([8.0, 9.6, 12.0]))
    assert share_pick(base, new) is None and len(new_tuner.configs) == 3


def test_a_reused_pick_has_no_times_and_the_pair_runs_news_pick():
    base_tuner, new_tuner = Autotuner("k1"), Autotuner("k1")
    new_tuner.tune([9.6, 7.6, 12.0])  # an earlier point's tuning: stale times
    new = tuned_call(new_tuner, lambda: new_tuner.tune([9.6, 7.6, 12.0]))
    base_tuner.tune([1.0, 9.0, 9.0])
    base = tuned_call(base_tuner, base_tuner.reuse)  # tuned before: this call timed nothing
    assert base.autotune_times == {} and set(new.autotune_times) == {
        "BLOCK=64 w4 s3", "BLOCK=128 w4 s3", "BLOCK=256 w4 s3"}
    shared = share_pick(base, new)
    assert shared is not None and shared.config.label == new.picked.label == "BLOCK=128 w4 s3"


def test_jointly_fastest_sums_only_the_configs_both_timed():
    assert jointly_fastest({"a": 10.0, "b": 8.0}, {"a": 7.0, "b": 10.0}) == "a"
    assert jointly_fastest({"a": 10.0}, {"b": 1.0, "a": 20.0}) == "a"
    assert jointly_fastest({}, {"b": 1.0}) is None


def row(variant: str, index: int, config: dict | None = None) -> Result:
    key = PointKey("matmul", variant, "bfloat16", Shape({"M": 1024}), "cold")
    config = config or {"index": index, "label": f"BLOCK={64 << index}", "source": "autotune"}
    return Result(key=key, kind="triton", status=OK, device="cuda",
                  build=BuildInfo(config=config))


def test_a_verdict_whose_sides_ran_other_picks_says_so_and_keeps_its_verdict():
    shape = Shape({"M": 1024}).text()
    verdict = PairVerdict("tc", "bfloat16", shape, "cold", False, FASTER, reason="")
    rows = [row("tc", 0), row(base_name("tc"), 1)]
    moved = with_config_moves([verdict], rows)[0]
    assert moved.verdict == FASTER
    assert moved.reason == "autotune picked config #1 in BASE, #0 in NEW"
    same = with_config_moves([verdict], [row("tc", 1), row(base_name("tc"), 1)])
    assert same[0].reason == ""


class Raising(Autotuner):
    """A kernel module's own class named like Triton's, whose attributes raise."""

    @property
    def configs_timings(self):
        raise RuntimeError("no")

    def tune(self, times_ms: list[float]):
        self.best_config = self.configs[times_ms.index(min(times_ms))]


class RaisingKey:
    @property
    def cache_key(self):
        raise RuntimeError("no")


def test_a_hostile_autotuner_shares_nothing_and_fails_nothing():
    base_tuner, new_tuner = Raising("k1"), Raising("k1")
    base_tuner.fn = new_tuner.fn = Heuristics(RaisingKey())
    base = tuned_call(base_tuner, lambda: base_tuner.tune([9.0, 9.2, 12.0]))
    new = tuned_call(new_tuner, lambda: new_tuner.tune([9.6, 7.6, 12.0]))
    assert base.autotune_times == {} and base.picked.label == "BLOCK=64 w4 s3"
    assert share_pick(base, new) is None


def _autotuner_of(folder, monkeypatch):
    """The autotuner of a copy of the shipped tensor-core matmul in `folder`, made by
    the real Triton (compiled, not interpreted: the interpreter keeps no cache key, and
    the module lists one config there). Making it needs no GPU; nothing is launched."""
    from gpubench.families.discovery import import_kernel_file
    from gpubench.tune.space import autotuners

    monkeypatch.setenv("TRITON_INTERPRET", "0")
    return autotuners(vars(import_kernel_file(folder / "matmul_tc_triton.py",
                                              "gpubench_triton")))[0][1]


def test_the_real_triton_tells_a_copy_of_a_kernel_from_an_edited_one(tmp_path, monkeypatch):
    from conftest import REPO

    source = (REPO / "kernels" / "matmul" / "matmul_tc_triton.py").read_text()
    edited = source.replace("acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)",
                            "acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32) + 0")
    assert edited != source
    tuners = []
    for name, text in (("a", source), ("b", source), ("c", edited)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "matmul_tc_triton.py").write_text(text)
        tuners.append(_autotuner_of(tmp_path / name, monkeypatch))
    first, copy, changed = tuners
    assert first is not copy and len(tune_apply.declared(first)) > 1
    assert same_kernel(first, copy) and not same_kernel(first, changed)
    assert tune_apply.pin(copy, tune_apply.declared(first)[2].label)
    assert copy.configs == [getattr(copy, tune_apply.ALL_CONFIGS)[2]]
