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
