"""`gpubench ab` (issue 51): two versions of a family timed in pairs in one worker.

The statistics (timing/paired.py, analysis/ab.py) are tested on numbers; the command end to
end on the CPU, with a torch family whose NEW version does its work six times: SLOWER and
exit 13 under --fail-on-regression, the unchanged baseline never FASTER or SLOWER, and an
A/A (a version against itself) with no FASTER or SLOWER at all."""

from __future__ import annotations

import itertools
import json
import math
import random
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from gpubench.analysis.ab import FAILED, PairEntry, drift_notes, judge_pairs, regressions
from gpubench.analysis.comparison import FASTER, SAME, SLOWER, UNSURE
from gpubench.families.spec import Machine
from gpubench.families.versions import changed_variants, differing_files
from gpubench.records.ab import PairVerdict, pairs_of_run
from gpubench.records.result import FAIL, OK
from gpubench.records.worker_result import MalformedWorkerResult, WorkerResult
from gpubench.run.ab.calls import AlternatingCalls
from gpubench.timing.measurement import Measurement
from gpubench.timing.paired import (
    BASE,
    MIN_BLOCKS,
    NEW,
    PairedTiming,
    blocks_of,
    paired_interval,
    round_budgets,
)

# ---------------------------------------------------------------- the blocks


def synthetic_blocks(ratio: float, order_effect: float, blocks: int, noise: float = 0.01,
                     seed: int = 1) -> PairedTiming:
    """Blocks of four calls (ABBA or BAAB) of a 10 us BASE and a NEW `ratio` times it, the
    second call of every pair `order_effect` times faster (warm caches), with noise."""
    rng = random.Random(seed)
    base, new, new_first = [], [], 0
    for _ in range(blocks):
        first = NEW if rng.random() < 0.5 else BASE
        new_first += first == NEW
        order = [first, 1 - first, 1 - first, first]
        times = {BASE: [], NEW: []}
        for position, side in enumerate(order):
            t = 10e-6 * (ratio if side == NEW else 1.0) * (1 + rng.gauss(0, noise))
            if position in (1, 3):  # the second call of each pair
                t /= order_effect
            times[side].append(t)
        base += times[BASE]
        new += times[NEW]
    return PairedTiming("cold", tuple(base), tuple(new), new_first, 1)


def test_an_order_effect_cancels_inside_every_block():
    """With one order a pair, a 20% order effect made the ratios bimodal; in ABBA/BAAB
    blocks both orders meet before the median."""
    same = synthetic_blocks(1.0, 1.2, 400)
    ratio, low, high = same.interval()
    assert low <= 1.0 <= high and abs(ratio - 1) < 0.005
    slower = synthetic_blocks(1.02, 1.2, 400, seed=2)
    ratio, low, high = slower.interval()
    assert low > 1.01 and abs(ratio - 1.02) < 0.005


def test_a_verdict_needs_enough_blocks():
    few = synthetic_blocks(2.0, 1.0, MIN_BLOCKS - 1)
    assert all(math.isnan(x) for x in few.interval())
    assert not math.isnan(paired_interval([1.0] * MIN_BLOCKS)[1])


def test_blocks_line_up_with_the_last_samples_and_half_blocks_are_left_out():
    # warm-up: block 0 whole and block 1 half; the timer's samples: block 1's rest, 2, 3
    order = [(0, BASE), (0, NEW), (0, NEW), (0, BASE), (1, NEW), (1, BASE),
             (1, BASE), (1, NEW), (2, BASE), (2, NEW), (2, NEW), (2, BASE),
             (3, NEW), (3, BASE), (3, BASE), (3, NEW)]
    samples = [0.5, 0.6, 1.0, 2.0, 3.0, 1.1, 4.0, 1.2, 1.3, 5.0]
    base, new, new_first = blocks_of(order, samples)
    assert base == [1.0, 1.1, 1.2, 1.3] and new == [2.0, 3.0, 4.0, 5.0]
    assert new_first == 1
    with pytest.raises(ValueError):
        blocks_of(order[:2], samples)


def test_a_block_ratio_is_the_geometric_mean_of_its_pairs():
    timing = PairedTiming("cold", (1.0, 4.0), (2.0, 2.0))
    assert timing.ratios() == [pytest.approx(1.0)]
    assert PairedTiming("cold", (0.0, 1.0), (1.0, 1.0)).ratios() == []


def test_paired_timing_crosses_the_pipe_whole():
    timing = synthetic_blocks(1.1, 1.0, 40)
    again = PairedTiming.from_dict(json.loads(json.dumps(timing.to_dict())))
    assert again == timing
    for bad in ({"mode": "cold", "base_s": [1.0, -1.0], "new_s": [1.0, 1.0]},
                {"mode": "cold", "base_s": [1.0], "new_s": [1.0]},
                {"mode": "cold", "base_s": "x", "new_s": []}):
        with pytest.raises(ValueError):
            PairedTiming.from_dict(bad)


def test_a_worker_result_carries_base_and_pairs_and_refuses_bad_ones():
    base = WorkerResult(OK, measurements={"cpu": Measurement("cpu", samples_s=(1.0, 2.0))})
    result = WorkerResult(OK, base=base, paired={"cpu": synthetic_blocks(1.0, 1.0, 31)})
    again = WorkerResult.from_dict(json.loads(json.dumps(result.to_dict())))
    assert again.base == base and again.paired == result.paired
    with pytest.raises(MalformedWorkerResult):
        WorkerResult.from_dict({**result.to_dict(), "paired": {"cpu": {"mode": "cpu",
                                                                       "base_s": [1.0]}}})


def test_rounds_double_until_the_time_is_spent():
    assert round_budgets(0.5, 0.05) == pytest.approx([0.05, 0.1, 0.2, 0.15])
    assert sum(round_budgets(1.0, 0.05)) == pytest.approx(1.0)
    assert round_budgets(0.01, 0.05) == [0.01]


class Side:
    def __init__(self):
        self.calls = []
        self.sets, self.next_set = [0, 1, 2], None

    def before(self):
        self.calls.append("before")

    def __call__(self):
        self.calls.append("call")

    def after(self):
        self.calls.append("after")

    def release_output(self):
        self.calls.append("release")

    def keep_outputs(self, capturing):
        pass


def test_the_calls_go_in_blocks_holding_one_pair_of_each_order():
    base, new = Side(), Side()
    calls = AlternatingCalls(base, new, random.Random(3))
    for _ in range(400):
        calls.before()
        calls()
        calls.after()
    sides = [side for _, side in calls.order]
    blocks = [sides[i:i + 4] for i in range(0, 400, 4)]
    assert all(b in ([BASE, NEW, NEW, BASE], [NEW, BASE, BASE, NEW]) for b in blocks)
    firsts = sum(b[0] == NEW for b in blocks)
    assert 30 < firsts < 70  # the order is drawn, not fixed
    assert calls.calls == [200, 200] and base.calls.count("call") == 200
    assert base.calls[:4] == ["before", "call", "after", "release"]  # its output let go


def test_in_every_block_each_side_makes_one_call_on_the_set_the_other_just_used():
    """The first two calls of a block share a set, the last two another, however the
    rotations draw: a call on a never-seen set (here NEW's only) draws no set, and left to
    their own draws the sides drifted apart, one making every call on the set the other
    had just warmed (-30% in a CPU A/A)."""
    import torch

    from gpubench.run.worker.rotation import InputSet, Rotation

    sets = [InputSet((torch.randn(8),), torch.empty(8)) for _ in range(3)]
    fresh = [InputSet((torch.randn(8),), torch.empty(8)) for _ in range(4)]
    used = []

    def side(name):
        def invoke(inputs, out):
            used.append((name, next((i for i, s in enumerate(sets) if s.inputs is inputs),
                                    "fresh")))
            return torch.mul(inputs[0], 2, out=out)
        return invoke

    seed = random.getrandbits(64)
    base = Rotation(side("base"), sets, lambda pairs: [], rng=random.Random(seed))
    new = Rotation(side("new"), sets, lambda pairs: [], rng=random.Random(seed), fresh=fresh)
    calls = AlternatingCalls(base, new, random.Random(5))
    calls.sampling()
    for _ in range(400):
        calls.before()
        calls()
        calls.after()
    assert sum(where == "fresh" for _, where in used) == 4
    blocks = [used[i:i + 4] for i in range(0, 400, 4)]
    whole = [b for b in blocks if all(where != "fresh" for _, where in b)]
    assert len(whole) >= 96
    assert all(b[0][1] == b[1][1] != b[2][1] == b[3][1] for b in whole)
    for name in ("base", "new"):
        mine = [where for who, where in used if who == name]
        assert all(a != b or a == "fresh" for a, b in itertools.pairwise(mine))


def test_a_sides_returned_output_is_poisoned_and_dropped_before_the_next_call():
    """An allocating variant's output is retired when its call ends, not at its side's next
    call: kept, each side's outputs would sit in a block of their own for the whole run
    (one placement per side), and the next call of either side could not reuse it."""
    import torch

    from gpubench.run.worker.rotation import InputSet, Rotation

    sets = [InputSet((torch.randn(64),), torch.empty(64)) for _ in range(3)]
    outputs = []

    def invoke(inputs, out):
        outputs.append(inputs[0] * 2)  # allocates its own, as F.layer_norm does
        return outputs[-1]

    seed = random.getrandbits(64)
    sides = [Rotation(invoke, sets, lambda pairs: [], rng=random.Random(seed))
             for _ in range(2)]
    calls = AlternatingCalls(*sides, random.Random(3))
    calls.sampling()
    for _ in range(12):
        calls.before()
        calls()
        assert outputs[-1].isfinite().all()  # the answer, while the call is timed
        calls.after()
        assert all(side.produced is None for side in sides)  # neither side holds one
        last = outputs[-1]  # poisoned before it was let go: NaN, or the finite poison
        assert last.isnan().all() or (last == -torch.finfo(last.dtype).max).all(), last
    assert len(outputs) == 12
    drawn = [d for side in sides for d in side.drawn]  # the re-checks' copies: answers
    assert drawn and all(d.output.isfinite().all() for d in drawn)


# ---------------------------------------------------------------- the verdicts


def entry(variant: str, ratio: float, control: bool = False, **kwargs) -> PairEntry:
    return PairEntry(variant, "float32", "n=1024", "cold", control,
                     synthetic_blocks(ratio, 1.0, 200, noise=0.002, seed=len(variant)),
                     **kwargs)


def test_a_change_beyond_the_threshold_is_slower_and_within_it_same():
    found = {v.variant: v for v in judge_pairs([entry("slow", 1.03), entry("fast", 0.97),
                                                entry("same", 1.0), entry("edge", 1.005)])}
    assert found["slow"].verdict == SLOWER and found["fast"].verdict == FASTER
    assert found["same"].verdict == SAME
    assert found["edge"].verdict == UNSURE and "threshold" in found["edge"].reason


def preempted_blocks(ratio: float, share: float, blocks: int = 200,
                     seed: int = 5) -> PairedTiming:
    """Blocks of 10 us calls on a busy host: each call, on either side, loses a 4 ms
    scheduler slice with probability `share` (a preemption inside that one call)."""
    rng = random.Random(seed)
    clean = synthetic_blocks(ratio, 1.0, blocks, noise=0.002, seed=seed)
    hit = lambda t: t + (4e-3 if rng.random() < share else 0.0)  # noqa: E731
    return replace(clean, base_s=tuple(map(hit, clean.base_s)),
                   new_s=tuple(map(hit, clean.new_s)))


def test_on_a_busy_host_the_pairs_decide_and_uneven_preemption_does_not():
    """Issue 63: the pairs cancel load both sides share, so a 3x slowdown beside two busy
    processes is SLOWER (it read "UNSURE (host busy)" when the guard was the load's size);
    what pairing does not cancel, a preemption inside one side's call, widens the blocks'
    spread, and a change within that spread is not decided."""
    busy = {"busy": math.inf, "busy_why": "preempted 0.60 times per call"}
    three = replace(entry("three", 1.0), paired=preempted_blocks(3.0, 0.05), **busy)
    tight = replace(entry("tight", 1.03), **busy)  # load that hit both sides alike
    found = {v.variant: v for v in judge_pairs([three, tight])}
    assert found["three"].verdict == SLOWER, found["three"]
    assert found["tight"].verdict == SLOWER  # the size of the load is no excuse
    uneven = replace(entry("uneven", 1.0), paired=preempted_blocks(1.03, 0.3), **busy)
    said = judge_pairs([uneven])[0]
    assert said.verdict == UNSURE and "the pairs' own spread" in said.reason, said


def test_the_uneven_load_spread_is_half_the_blocks_interquartile_range():
    from gpubench.analysis.ab import uneven_load_spread

    assert uneven_load_spread([1.0, 1.0, 1.2, 1.2]) == pytest.approx(0.1 / 1.1)
    assert uneven_load_spread([1.0, 2.0]) == math.inf  # too few blocks to know


def test_a_control_that_moved_is_the_runs_drift_and_raises_the_bar():
    found = {v.variant: v for v in judge_pairs([entry("control", 1.02, control=True),
                                                entry("changed", 1.025)])}
    assert found["control"].verdict == SLOWER and found["control"].moved
    assert found["changed"].verdict == UNSURE  # 2.5% is within the 0.5% bar over 2% drift
    assert found["changed"].bar > 0.02
    assert "drift: control control" in drift_notes(found.values())[0]


def test_a_side_that_failed_is_a_regression_and_named():
    failed = PairEntry("broken", "float32", "n=1024", "cold", False, status=FAILED,
                       why="new FAIL: output differs")
    verdicts = judge_pairs([failed, entry("same", 1.0)])
    assert verdicts[0].verdict == FAILED and "new FAIL" in verdicts[0].reason
    assert [v.variant for v in regressions(verdicts)] == ["broken"]


def test_a_verdict_crosses_the_run_record_with_its_nans():
    verdict = PairVerdict("v", "float32", "n=1", "cold", False, UNSURE, reason="no pairs")
    meta = {"ab": {"verdicts": [json.loads(json.dumps(verdict.to_dict()))]}}
    (again,) = pairs_of_run(meta)
    assert again.variant == "v" and math.isnan(again.ratio) and pairs_of_run({}) == ()


# ---------------------------------------------------------------- which variants changed

SPEC = '''import torch
from gpubench import CudaVariant, Family, TorchVariant

CALLS = [0]


def writes_its_input_once_timed(a, b, out):
    """Right on its first call (the check), then it adds to `a` once: a timer-gaming
    kernel that the timed calls' input check must catch."""
    CALLS[0] += 1
    if CALLS[0] == 3:
        a.add_(1.0)
    return torch.add(a, b, out=out)

family = Family(
    reference=lambda a, b: a + b,
    make_inputs=lambda n, dtype, device: (torch.randn(n, device=device, dtype=dtype),
                                          torch.randn(n, device=device, dtype=dtype)),
    flops=lambda n: n,
    bytes_moved=lambda n, itemsize: 3 * n * itemsize,
    sizes=(2**12,),
    cpu_sizes=(2**16,),
    variants=(
        TorchVariant("torch", fn=lambda a, b, out: torch.add(a, b, out=out), baseline=True),
        TorchVariant("work", fn={work}),{cuda}
    ),
)
'''


REPEATED = "lambda a, b, out: [torch.add(a, b, out=out) for _ in range({repeats})][-1]"


CUDA_VARIANT = '''
        CudaVariant("kernel", function="add", cuda=("add.cu",), cpp=("add.cpp",)),'''


def write_version(folder, repeats: int = 1, kernel: str = "// add", work: str = REPEATED,
                  cuda: bool = True, flops: str = "n") -> None:
    """A version of the family `pair` (tests/test_history.py's too): torch.add, `work`
    doing it `repeats` times, and a CUDA variant unless `cuda` is False; `flops`: the
    family's FLOP count of size n."""
    folder.mkdir(parents=True, exist_ok=True)
    spec = SPEC.replace("{work}", work).replace("{repeats}", str(repeats))
    spec = spec.replace("{cuda}", CUDA_VARIANT if cuda else "")
    spec = spec.replace("flops=lambda n: n,", f"flops=lambda n: {flops},")
    (folder / "spec.py").write_text(spec)
    (folder / "add.cu").write_text(kernel)
    (folder / "add.cpp").write_text("// binding")


def test_a_changed_cuda_file_changes_its_variant_alone_and_spec_py_all(tmp_path):
    from gpubench.families.discovery import load_family

    base, new = tmp_path / "base" / "pair", tmp_path / "new" / "pair"
    write_version(base)
    write_version(new, kernel="// add, faster")
    family = load_family("pair", new)
    cpu = Machine(has_cuda=False, has_triton=False)
    assert differing_files(base, new) == {new / "add.cu"}
    assert changed_variants("pair", base, new, family, cpu) == frozenset({"kernel"})
    write_version(new, repeats=6)
    assert changed_variants("pair", base, new, load_family("pair", new, fresh=True),
                            cpu) is None
    write_version(new)
    assert changed_variants("pair", base, new, family, cpu) == frozenset()


# ---------------------------------------------------------------- end to end, CPU

FAST = ("--warmup", "20", "--max-time", "400", "--device", "cpu")


def verdicts_of(run_dir) -> dict[str, dict]:
    meta = json.loads((run_dir / "results.json").read_text())["meta"]
    return {v["variant"]: v for v in meta["ab"]["verdicts"]}


@pytest.fixture
def versions(tmp_path):
    base, slow = tmp_path / "v1" / "pair", tmp_path / "v2" / "pair"
    write_version(base)
    write_version(slow, repeats=6)
    return base, slow


def test_six_times_the_work_is_slower_with_exit_13_and_the_baseline_never_moves(
        gpubench, versions, tmp_path):
    base, slow = versions
    done = gpubench("ab", "pair", "--base", str(base.parent), "--new", str(slow),
                    "--fail-on-regression", "--out", str(tmp_path / "ab"), *FAST)
    assert done.code == 13, done.output
    found = verdicts_of(tmp_path / "ab")
    assert found["work"]["verdict"] == SLOWER and found["work"]["ratio"] > 3, found["work"]
    assert found["torch"]["verdict"] in (SAME, UNSURE), found["torch"]
    assert "kernel" not in found  # no CUDA on a CPU: not paired
    rows = {r["variant"]: r for r in done.results(tmp_path / "ab")["results"]}
    assert rows["work"]["status"] == rows["work@base"]["status"] == "ok"
    assert rows["work"]["median_s"] > 3 * rows["work@base"]["median_s"]
    assert "SLOWER" in done.stdout and "saved:" in done.stdout
    shown = gpubench("compare", str(tmp_path / "ab"), "--fail-on-regression")
    assert shown.code == 13 and "work n=65536 float32 cpu (SLOWER)" in shown.stderr
    assert gpubench("compare", str(tmp_path / "ab"), "--markdown", "-").code == 0


def test_compare_of_one_run_needs_an_ab_run(gpubench, tmp_path):
    (tmp_path / "plain").mkdir()
    document = {"schema": 1, "meta": {"run_id": "plain"}, "env": {}, "results": []}
    (tmp_path / "plain" / "results.json").write_text(json.dumps(document))
    done = gpubench("compare", str(tmp_path / "plain"))
    assert done.code == 2 and "not an A/B run" in done.output, done.output


def test_a_version_against_itself_is_never_faster_or_slower(gpubench, versions, tmp_path):
    base, _ = versions
    done = gpubench("ab", "pair", "--base", str(base), "--new", str(base), "--out",
                    str(tmp_path / "aa"), "--fail-on-regression", *FAST)
    assert done.code == 0, done.output
    found = verdicts_of(tmp_path / "aa")
    assert {v["verdict"] for v in found.values()} <= {SAME, UNSURE}
    assert all(v["control"] for v in found.values())


def git_repo_with_one_version(repo):
    """A repository whose one commit holds `pair` (work done once); the working tree
    then does the work six times (NEW). The commit's hash."""
    write_version(repo / "pair")
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git[:3], "init", "-q"], check=True)
    subprocess.run([*git, "add", "."], check=True)
    subprocess.run([*git, "commit", "-qm", "v1"], check=True)
    write_version(repo / "pair", repeats=6)  # the working tree: NEW
    return subprocess.run([*git[:3], "rev-parse", "HEAD"], check=True, capture_output=True,
                          text=True).stdout.strip()


def test_base_rev_takes_the_folder_at_a_git_revision_and_a_tampered_export_is_made_again(
        gpubench, tmp_path, build_cache):
    """Issue 60: the export is gpubench's cache, plain files anyone can edit; an export
    edited to NEW's code made ab read -65.7% for code identical to HEAD. A reused export is
    checked against the commit's tree, and one that differs is made again, said in a line:
    the verdict is the one the commit gives."""
    repo = tmp_path / "repo"
    commit = git_repo_with_one_version(repo)
    done = gpubench("ab", "pair", "--kernels-dir", str(repo), "--base-rev", "HEAD",
                    "--variants", "work", "--out", str(tmp_path / "rev"), *FAST)
    assert done.code == 0, done.output
    meta = json.loads((tmp_path / "rev" / "results.json").read_text())["meta"]["ab"]
    assert meta["base"].startswith("HEAD (") and meta["new"] == "working tree"
    assert verdicts_of(tmp_path / "rev")["work"]["verdict"] == SLOWER
    assert "exported again" not in done.output  # a reused export that matches is kept

    export = build_cache / "extensions" / "ab-base" / commit / "pair"
    write_version(export, repeats=6)  # BASE edited into NEW: the pairs would read SAME
    again = gpubench("ab", "pair", "--kernels-dir", str(repo), "--base-rev", "HEAD",
                     "--variants", "work", "--out", str(tmp_path / "rev2"), *FAST)
    assert again.code == 0, again.output
    assert "differs from its git tree (spec.py): exported again" in again.output
    assert verdicts_of(tmp_path / "rev2")["work"]["verdict"] == SLOWER


def test_a_reused_export_is_checked_file_by_file(tmp_path, monkeypatch):
    """Changed, added, made executable, or a planted __pycache__: each differs from the
    tree (bytecode is removed, never compared); the export made again matches."""
    from gpubench.run.ab.export import export_revision

    monkeypatch.setenv("GPUBENCH_CACHE_DIR", str(tmp_path / "cache"))
    repo = tmp_path / "repo"
    git_repo_with_one_version(repo)
    first = export_revision(repo / "pair", "HEAD")
    assert first.note == "" and (first.folder / "spec.py").is_file()
    planted = first.folder / "__pycache__" / "spec.cpython-312.pyc"
    planted.parent.mkdir()
    planted.write_bytes(b"not bytecode")
    reused = export_revision(repo / "pair", "HEAD")
    assert reused == first and not planted.parent.exists()
    original = (first.folder / "spec.py").read_text()
    for tamper, named in ((lambda f: (f / "spec.py").write_text("x = 1"), "spec.py"),
                          (lambda f: (f / "helpers.py").write_text(""), "helpers.py"),
                          (lambda f: (f / "add.cu").chmod(0o755), "add.cu"),
                          (lambda f: (f / "add.cpp").unlink(), "add.cpp")):
        tamper(first.folder)
        remade = export_revision(repo / "pair", "HEAD")
        assert f"({named}): exported again" in remade.note, remade.note
        assert (remade.folder / "spec.py").read_text() == original
        assert export_revision(repo / "pair", "HEAD").note == ""


@pytest.mark.parametrize("args, message", [
    (("pair",), "give BASE"),
    (("pair", "--base", "X", "--base-rev", "HEAD"), "give BASE"),
    (("pair", "--base", "nowhere"), "no spec.py"),
    (("pair", "--base", "{base}", "--base-rev", "HEAD"), "give BASE"),
    (("pair", "--base", "{base}", "--variants", "nothing"), "no variant of pair to pair"),
])
def test_bad_input_is_one_line_and_exit_2(gpubench, versions, args, message):
    base, slow = versions
    args = [a.replace("{base}", str(base)) for a in args]
    done = gpubench("ab", *args, "--new", str(slow), "--device", "cpu")
    assert done.code == 2, done.output
    assert "Traceback" not in done.output and message in done.output


def test_an_unpaired_mode_is_refused():
    from gpubench.errors import UsageError
    from gpubench.run.ab.pair import paired_timing
    from gpubench.timing.settings import TimingSettings

    with pytest.raises(UsageError, match="graph"):
        paired_timing(TimingSettings(modes=("graph",)), "cuda", 0.005, points=3)
    paired = paired_timing(TimingSettings(modes=("cold", "warm")), "cuda", 0.005, points=3)
    assert paired.decisions == 6 and paired.target_rel_ci == 0.005  # points x modes


def test_a_failed_side_fails_the_pair_and_is_named():
    from gpubench.run.ab.pair import _pair_result

    base = WorkerResult(FAIL, error="output differs")
    result = _pair_result(base, WorkerResult(OK), {})
    assert result.status == FAIL and result.error == "base: output differs"
    assert result.base is base


def test_an_input_written_while_timed_fails_the_pair_naming_both_sides(gpubench, versions,
                                                                       tmp_path):
    """The timed calls of both sides share one set of inputs, so a write found after them
    cannot be pinned on one side: the pair fails, and says so."""
    base, _ = versions
    sneaky = tmp_path / "v3" / "pair"
    write_version(sneaky, work="writes_its_input_once_timed")
    done = gpubench("ab", "pair", "--base", str(base), "--new", str(sneaky), "--variants",
                    "work", "--fail-on-regression", "--out", str(tmp_path / "ab"), *FAST)
    assert done.code == 13, done.output
    found = verdicts_of(tmp_path / "ab")["work"]
    assert found["verdict"] == FAILED, found
    rows = {r["variant"]: r for r in done.results(tmp_path / "ab")["results"]}
    assert rows["work"]["status"] == FAIL
    assert "base or new" in rows["work"]["error"] and "input" in rows["work"]["error"]


# ---------------------------------------------------------------- one helper, two versions

# SPEC's family with `work` from a helper module imported by its plain name (the trick: a
# plain name, found in the spec's folder, once per process).
HELPER_SPEC = ("import sys\nfrom pathlib import Path\n\n"
               "sys.path.insert(0, str(Path(__file__).parent))\nimport helpers\n\n"
               + SPEC.replace("{work}", "helpers.work").replace("{cuda}", ""))


def test_two_versions_importing_one_helper_by_its_plain_name_are_refused(gpubench, tmp_path):
    """Issue 60: BASE's helpers.py does the work six times, NEW's once, each imported as
    `helpers`; the second import found the first in sys.modules, and 330 us against 143 us
    read SAME. ab refuses before timing anything (exit 4), naming the module and the fix."""
    for version, repeats in (("v1", 6), ("v2", 1)):
        folder = tmp_path / version / "pair"
        folder.mkdir(parents=True)
        (folder / "spec.py").write_text(HELPER_SPEC)
        (folder / "helpers.py").write_text(
            "import torch\n\n\ndef work(a, b, out):\n"
            f"    return [torch.add(a, b, out=out) for _ in range({repeats})][-1]\n")
    done = gpubench("ab", "pair", "--base", str(tmp_path / "v1"), "--new",
                    str(tmp_path / "v2"), "--out", str(tmp_path / "ab"), *FAST)
    assert done.code == 4, done.output
    assert "Traceback" not in done.output
    assert "share module 'helpers'" in done.output and "v1/pair/helpers.py" in done.output
    assert "spec_from_file_location" in done.output  # the fix
    assert not (tmp_path / "ab" / "results.json").exists()


def fake_module(name: str, path, **values):
    from types import ModuleType

    module = ModuleType(name)
    module.__file__ = str(path)
    vars(module).update(values)
    return module


def helper_of(folder, name: str = "helpers"):
    """A helpers.py of `folder` as the import system would hold it, with a function."""
    module = fake_module(name, folder / "helpers.py")
    exec("def work(a, b, out):\n    return out\n", vars(module))
    return module


def test_a_module_is_shared_when_one_object_serves_both_or_a_side_uses_the_others():
    from dataclasses import dataclass
    from pathlib import Path

    from gpubench.run.ab.modules import shared_modules

    @dataclass(frozen=True)
    class Variant:
        fn: object

    base, new = Path("/versions/v1/pair"), Path("/versions/v2/pair")
    base_helpers = helper_of(base)

    def specs(base_values: dict, new_values: dict):
        return (fake_module("gpubench_family_pair_1", base / "spec.py", **base_values),
                fake_module("gpubench_family_pair_2", new / "spec.py", **new_values))

    # `import helpers` in both: BASE's module serves NEW too
    (found,) = shared_modules(*specs({"helpers": base_helpers}, {"helpers": base_helpers}),
                              base, new)
    assert (found.name, found.owner, found.users) == ("helpers", "BASE", ("BASE", "NEW"))
    # `from helpers import work`, reached through NEW's Family's variants only
    (found,) = shared_modules(*specs({}, {"family": (Variant(base_helpers.work),)}),
                              base, new)
    assert found.users == ("NEW",) and found.path == base / "helpers.py"
    # each side's own helper (loaded by path, under a name of its own): nothing shared
    assert shared_modules(*specs({"helpers": base_helpers},
                                 {"helpers": helper_of(new, "pair_2_helpers")}),
                          base, new) == []
    # an A/A run: one folder is one version
    assert shared_modules(*specs({"helpers": base_helpers}, {"helpers": base_helpers}),
                          base, base) == []


# ---------------------------------------------------------------- a side judged as `run` does


def test_a_row_run_calls_suspect_is_suspect_in_ab_and_never_faster(gpubench, tmp_path):
    """Issue 60: a torch row that `run` called SUSPECT (314-818% of the roofline: the
    family's FLOP count does not fit it) read SAME in ab, which derived its rows without
    the ceilings. On a CPU the bar is 20x the roof; a million FLOPs an element is far
    beyond it. Every variant gets in ab the verdict `run` gives it, the side and the rule
    named; --fail-on-regression exits 13."""
    base, new = tmp_path / "v1" / "pair", tmp_path / "v2" / "pair"
    write_version(base, repeats=6, flops="n * 10**6")  # BASE slower: NEW would be FASTER
    write_version(new, flops="n * 10**6")
    alone = gpubench("run", "pair", "--kernels-dir", str(new.parent), "--out",
                     str(tmp_path / "run"), "--variants", "torch,work", *FAST)
    rows = {r["variant"]: r for r in alone.results(tmp_path / "run")["results"]}
    assert {v: r["status"] for v, r in rows.items()} == {"torch": "suspect",
                                                         "work": "suspect"}, alone.output
    done = gpubench("ab", "pair", "--base", str(base), "--new", str(new), "--out",
                    str(tmp_path / "ab"), "--fail-on-regression", *FAST)
    assert done.code == 13, done.output
    verdicts = verdicts_of(tmp_path / "ab")
    assert set(verdicts) == {"torch", "work"}  # the control too, as `run` rules it alone
    for found in verdicts.values():
        assert found["verdict"] == "SUSPECT", found
        reason = found["reason"]  # both sides named; one reason once when they agree
        assert "new and base SUSPECT: " in reason or (
            "new SUSPECT: " in reason and "base SUSPECT: " in reason), found
        assert "of the measured roofline" in found["reason"], found


# ---------------------------------------------------------------- timed calls told apart

SNIFFING_SPEC = '''
import sys
from pathlib import Path

from gpubench import Axis, Family, TorchVariant
from gpubench.families.discovery import import_kernel_file

load = import_kernel_file(Path({tricks!r}) / "load.py", "gpubench_adversarial")
caching, honest = load.trick("caching"), load.trick("honest")
family = load.trick("problems").matmul_family(description="mm", cpu_n=320, gpu_n=1024,
                                              variants=(
    TorchVariant("torch", fn=honest.honest_out, baseline=True),
    TorchVariant("mm", fn={fn}),
))
'''


def test_a_side_that_skips_work_on_timed_calls_only_is_suspect_in_ab(gpubench, tmp_path):
    """Issue 60: a variant that finds a timer's loop up its stack and serves half of each
    timed call from a cache read -35% in ab. Each side's loop times calls on never-seen
    values too: NEW, keyed by pointer, serves them stale halves (a CPU's never-seen values
    go into buffers it has used) and FAILs; keyed otherwise it would do the full work there
    and read SUSPECT. Never FASTER."""
    tricks = Path(__file__).parent / "adversarial" / "tricks"
    for name, fn in (("base", "honest.honest_out"), ("new", "caching.sniffs_the_timer")):
        folder = tmp_path / name / "mm"
        folder.mkdir(parents=True)
        (folder / "spec.py").write_text(SNIFFING_SPEC.format(tricks=str(tricks), fn=fn))
    done = gpubench("ab", "mm", "--base", str(tmp_path / "base"), "--new",
                    str(tmp_path / "new"), "--variants", "mm", "--out", str(tmp_path / "ab"),
                    *FAST)
    found = verdicts_of(tmp_path / "ab")["mm"]
    assert found["verdict"] in ("SUSPECT", "FAILED"), (found, done.output)
    assert found["reason"].startswith(("new SUSPECT", "new FAIL")), found
    assert "seen" in found["reason"], found


def test_many_points_widen_each_interval_so_a_false_verdict_stays_rare():
    """Issue 63: the verdicts of one `ab` are decided together. A +1.2% change whose 99%
    interval clears the 0.5% threshold at one point is not decided among 200 (each
    interval at family_z(200) ~ 4.06); a +3% change still is."""
    from gpubench.timing.paired import Z_SEQUENTIAL, family_z

    assert family_z(1) == Z_SEQUENTIAL and 4.0 < family_z(200) < 4.1
    near = PairEntry("near", "float32", "n=1024", "cold", False,
                     synthetic_blocks(1.012, 1.0, 60, noise=0.015, seed=3))
    far = replace(near, variant="far", paired=synthetic_blocks(1.03, 1.0, 60, noise=0.004))
    alone = {v.variant: v.verdict for v in judge_pairs([near, far])}
    among = {v.variant: v.verdict for v in judge_pairs([near, far], decisions=200)}
    assert alone == {"near": SLOWER, "far": SLOWER}
    assert among == {"near": UNSURE, "far": SLOWER}


def test_an_aa_of_many_points_has_no_false_verdict():
    """200 unchanged points of noisy pairs, a threshold near 0: at one point's z (a 1%
    chance each) two read FASTER or SLOWER by chance; decided together, none does."""
    entries = [PairEntry(f"v{i}", "float32", "n=1024", "cold", False,
                         synthetic_blocks(1.0, 1.0, 40, noise=0.02, seed=i))
               for i in range(200)]
    false = lambda verdicts: sum(v.verdict in (FASTER, SLOWER) for v in verdicts)  # noqa: E731
    assert false(judge_pairs(entries, threshold=1e-4, decisions=1)) > 0
    assert false(judge_pairs(entries, threshold=1e-4)) == 0
