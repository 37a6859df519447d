"""Rows of the Triton interpreter (no GPU) are correctness-only: checked, never benchmarks."""

from gpubench.records import result as R
from gpubench.records.point import PointKey
from gpubench.records.shape import Shape


def row(kind: str, device: str, variant: str = "v") -> R.Result:
    key = PointKey("square", variant, "float32", Shape({"n": 1024}), "cpu")
    return R.Result(key=key, kind=kind, status=R.OK, device=device)


def test_a_triton_row_without_a_gpu_is_correctness_only():
    assert R.correctness_only(row("triton", "cpu"))
    assert not R.correctness_only(row("triton", "cuda"))
    assert not R.correctness_only(row("cuda", "cpu"))  # a CPU build of the C++: its own time
    assert not R.correctness_only(row("torch", "cpu"))
    assert not R.correctness_only(row("triton", ""))  # skipped: no worker ran it


def test_the_rule_holds_for_a_row_read_back_from_results_json():
    again = R.Result.from_dict(row("triton", "cpu").to_dict())
    assert R.correctness_only(again)


def test_compare_gives_interpreter_rows_no_speed_verdict():
    """An interpreter row's time is the interpreter's: compare lists it and judges nothing
    (a real CPU run, compared with itself: every other point is SAME)."""
    import json
    from pathlib import Path

    from gpubench.analysis.comparison import compare_runs
    from gpubench.records.run import RunDocument

    path = Path(__file__).parent / "fixtures" / "run" / "cpu-softmax-vadd.json"
    run = RunDocument.from_dict(json.loads(path.read_text()))
    points = compare_runs(run, run).points
    interpreted = [p for p in points if p.key.variant == "triton"]
    assert interpreted and all(p.comparison is None and "not compared for speed" in p.note
                               for p in interpreted)
    assert all(p.comparison is not None for p in points if p.key.variant != "triton")
