"""Several runs a side (gpubench/analysis/repeats.py): the t interval over the runs'
medians, and `compare` on six fresh H200 processes of one unchanged run
(tests/fixtures/compare/h200-processes/README.md)."""

import itertools
import json
import math

import pytest

from conftest import FIXTURES
from gpubench.analysis import comparison as C
from gpubench.analysis.repeats import runs_interval, t_975
from gpubench.api import compare as api_compare
from gpubench.store.folder import read_run

PROCESSES = FIXTURES / "compare" / "h200-processes"
H200 = FIXTURES / "compare" / "h200"


def test_the_interval_is_students_t_over_the_runs_log_medians():
    base, new = [1.0, 1.1, 0.9], [2.0, 2.2, 1.8]
    interval = runs_interval(base, new)
    logs_b, logs_n = [math.log(x) for x in base], [math.log(x) for x in new]
    shift = sum(logs_n) / 3 - sum(logs_b) / 3
    squares = sum((x - sum(logs_b) / 3) ** 2 for x in logs_b) * 2  # both sides alike
    half = 2.776 * math.sqrt(squares / 4) * math.sqrt(2 / 3)  # t(4 df) = 2.776
    assert interval.ratio == pytest.approx(math.exp(shift))
    assert (interval.low, interval.high) == pytest.approx((math.exp(shift - half),
                                                           math.exp(shift + half)))
    assert interval.runs == (3, 3)
    assert interval.base_median_s == pytest.approx(math.exp(sum(logs_b) / 3))


def test_one_run_a_side_or_a_missing_side_gives_no_interval():
    assert runs_interval([1.0], [1.1]) is None  # no spread to pool: the bootstrap decides
    assert runs_interval([], [1.0, 1.1, 1.2]) is None
    assert runs_interval([1.0, 0.0], [1.1]) is None
    assert runs_interval([1.0, 1.0], [2.0]).low == pytest.approx(2.0)  # no spread: exact


def test_t_quantiles_fall_to_the_normal():
    assert t_975(1) == pytest.approx(12.706) and t_975(4) == pytest.approx(2.776)
    assert t_975(29) > t_975(30) > t_975(31) == 1.96


def processes() -> list:
    return [read_run(PROCESSES / f"run{i}") for i in range(1, 7)]


def false_verdicts(result: C.RunComparison) -> list[str]:
    return [p.key.text() for p in result.points if p.verdict in (C.FASTER, C.SLOWER)]


def test_one_process_a_side_calls_unchanged_code_faster_or_slower():
    """What the repeats are for: the samples' bootstrap and IQR do not see the process."""
    runs = processes()
    wrong = [name for a, b in itertools.permutations(runs, 2)
             for name in false_verdicts(C.compare_runs(a, b))]
    assert len(wrong) >= 5, wrong


def test_three_processes_a_side_call_unchanged_code_nothing():
    runs = processes()
    for split in itertools.combinations(range(6), 3):
        base = [runs[i] for i in split]
        new = [runs[i] for i in range(6) if i not in split]
        result = C.compare_runs(base[0], new[0], base_repeats=base[1:], new_repeats=new[1:])
        assert result.points and not false_verdicts(result), split
        assert {p.comparison.runs for p in result.points if p.comparison} == {(3, 3)}


def test_repeats_still_see_a_real_change():
    """32-thread blocks made the CUDA square ~4x slower (tests/fixtures/compare/h200). Two
    BASE runs and one NEW leave one degree of freedom: at 95% t is 12.7 and the change
    shows; decided with the other 5 points at their family level (99.17%) t is 76, and
    the interval (0.41x to 40x) says nothing: what so few runs cost."""
    def said(level=None) -> dict:
        result = C.compare_runs(read_run(H200 / "square-a2"), read_run(H200 / "square-b32"),
                                base_repeats=[read_run(H200 / "square-a4")], level=level)
        return {p.key.variant: p.verdict for p in result.points
                if p.key.shape.text() == "n=1048576"}

    alone = said(0.95)
    assert alone["cuda"] == C.SLOWER and alone["torch"] != C.SLOWER
    assert said()["cuda"] == C.UNSURE


def test_the_python_api_takes_lists_of_runs():
    result = api_compare([PROCESSES / "run1", PROCESSES / "run2"],
                         [PROCESSES / "run3", PROCESSES / "run4"])
    assert {p.comparison.runs for p in result.points if p.comparison} == {(2, 2)}


def test_cli_repeats_in_json_and_a_bad_repeat_exits_2(gpubench):
    args = ["compare", str(PROCESSES / "run1"), str(PROCESSES / "run4"), "--json",
            "--base-repeat", str(PROCESSES / "run2"), "--base-repeat", str(PROCESSES / "run3"),
            "--new-repeat", str(PROCESSES / "run5"), "--new-repeat", str(PROCESSES / "run6")]
    done = gpubench(*args)
    assert done.code == 0, done.output
    points = json.loads(done.stdout)["points"]
    assert points and all(p["runs"] == [3, 3] for p in points if "runs" in p)
    assert sum("runs" in p for p in points) == len(points)
    assert not [p for p in points if p["verdict"] in ("FASTER", "SLOWER")]
    table = gpubench(*[a for a in args if a != "--json"])
    assert "Runs: 3 BASE and 3 NEW" in " ".join(table.stdout.split())
    bad = gpubench("compare", str(PROCESSES / "run1"), str(PROCESSES / "run2"),
                   "--new-repeat", "nowhere")
    assert bad.code == 2 and "no run results at nowhere" in bad.stderr
    assert "Traceback" not in bad.output


def test_a_repeat_from_another_machine_marks_every_verdict():
    from dataclasses import replace

    runs = processes()
    elsewhere = replace(runs[1], env={**runs[1].env, "gpu": "NVIDIA H100"})
    result = C.compare_runs(runs[0], runs[3], base_repeats=[elsewhere, runs[2]],
                            new_repeats=[runs[4], runs[5]])
    assert result.env_differences == ("BASE repeat 2: gpu: NVIDIA H200 -> NVIDIA H100",)
    assert all(p.comparison.marked for p in result.points if p.comparison)


def test_the_group_shift_is_read_over_the_runs_too():
    """A two-variant group's common move (the witness) comes from the ratios the verdicts
    use: with runs a side, the geometric means, not the first pair's medians."""
    runs = processes()
    pooled = C.compare_runs(runs[0], runs[3], base_repeats=runs[1:3], new_repeats=runs[4:6])
    group = {p.key.variant: p.comparison for p in pooled.points
             if p.comparison and p.key.family == "matmul" and p.key.shape.text().startswith(
                 "M=1024")}
    assert set(group) == {"torch", "wmma"}
    for name, other in (("torch", "wmma"), ("wmma", "torch")):
        mine, theirs = math.log(group[name].ratio), math.log(group[other].ratio)
        direction = math.copysign(1.0, mine)
        common = math.expm1(max(0.0, min(direction * mine, direction * theirs)))
        assert group[name].allowances.group == pytest.approx(common)


def test_a_run_given_twice_on_one_side_is_refused():
    """The same run as its own repeat has no spread: it would narrow the interval on
    nothing (run1 against run2 with run1 again as BASE's repeat: 4 false verdicts)."""
    from gpubench.errors import UsageError

    runs = processes()
    with pytest.raises(UsageError, match="run old1 is given twice for BASE"):
        C.compare_runs(runs[0], runs[1], base_repeats=[runs[0]])
    with pytest.raises(UsageError, match="given twice for NEW"):
        C.compare_runs(runs[0], runs[1], new_repeats=[runs[2], runs[2]])
    # The same run on both sides is a comparison of a run with itself, not a repeat.
    assert C.compare_runs(runs[0], runs[0], base_repeats=[runs[1]]).points
    with pytest.raises(UsageError, match="each side needs a run"):
        api_compare([], [PROCESSES / "run1"])


def test_cli_a_repeat_of_base_itself_exits_2(gpubench):
    again = gpubench("compare", str(PROCESSES / "run1"), str(PROCESSES / "run2"),
                     "--base-repeat", str(PROCESSES / "run1"))
    assert again.code == 2 and "is given twice for BASE" in again.stderr
    assert "Traceback" not in again.output
