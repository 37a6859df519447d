"""The rendered results table against golden text (regenerate: GPUBENCH_UPDATE_GOLDEN=1)."""

import math
import os
import random

import pytest
from rich.console import Console

from conftest import REPO
from gpubench.records import result as R
from gpubench.records.build_info import BuildInfo
from gpubench.records.point import PointKey
from gpubench.records.shape import Shape
from gpubench.report.table import group_notes, group_table
from gpubench.timing.check_result import CheckResult
from gpubench.timing.measurement import Measurement
from gpubench.verdicts.derive import finish_group

GOLDEN = REPO / "tests" / "golden"
CEILINGS = {"bandwidth_gbps": 3007.0, "tflops": {"float32": 51.6}}


def samples(seed: int, median: float, sigma: float, n: int) -> list[float]:
    rng = random.Random(seed)
    return [median * math.exp(rng.gauss(0, sigma)) for _ in range(n)]


def matmul_group() -> list[R.Result]:
    def row(variant, kind, status=R.OK, median=None, baseline=False, mode="cold", **extra):
        measurement = Measurement(
            mode, "cuda-events minus window cost (null-kernel fit), L2 flushed by reads, "
                  "spin-queued launch",
            samples(len(variant), median, 0.004, 40), stop_reason="converged",
            target_rel_ci=0.005) if median else None
        shape = Shape({"M": 4096, "N": 4096, "K": 4096})
        return R.Result(key=PointKey("matmul", variant, "float32", shape, mode), kind=kind,
                        status=status, baseline=baseline, flops=2 * 4096**3,
                        bytes_moved=3 * 4096**2 * 4, measurement=measurement, **extra)

    built = BuildInfo(compile_s=0.0, cached=True)
    return [
        row("torch", "torch", median=2.649e-3, baseline=True),
        row("naive", "cuda", median=24.82e-3, build=BuildInfo(compile_s=21.0, cached=False)),
        row("tiled", "cuda", median=15.58e-3, build=built),
        row("wrong", "cuda", status=R.FAIL, build=built,
            check=CheckResult(False, max_abs_err=0.5, worst_ratio=4999.0, mismatches=12,
                              nonfinite=0, total=4096 * 4096, atol=1e-4, rtol=1e-4)),
        row("broken", "triton", status=R.CRASHED, error="worker was killed by SIGSEGV"),
        row("tiled", "cuda", status=R.SKIPPED, error="needs a CUDA GPU", mode="wall"),
    ]


def render(group) -> str:
    with open(os.devnull, "w") as sink:
        console = Console(width=140, record=True, color_system=None, file=sink)
        console.print(group_table(group, "NVIDIA H100 80GB HBM3"))
        for note in group_notes(group):
            console.print(f"  {note}", soft_wrap=True)
        return console.export_text()


def test_table_matches_golden_text():
    text = render(finish_group(matmul_group(), CEILINGS))
    golden = GOLDEN / "matmul_table.txt"
    if os.environ.get("GPUBENCH_UPDATE_GOLDEN"):
        golden.write_text(text)
    assert text == golden.read_text()


def render_at(group, width: int) -> str:
    with open(os.devnull, "w") as sink:
        console = Console(width=width, record=True, color_system=None, file=sink)
        console.print(group_table(group, "NVIDIA H100 80GB HBM3", width=width))
        return console.export_text()


@pytest.mark.parametrize("width", [80, 160])
def test_table_fits_the_terminal_without_cutting_a_cell(width):
    text = render_at(finish_group(matmul_group(), CEILINGS), width)
    golden = GOLDEN / f"matmul_table_{width}.txt"
    if os.environ.get("GPUBENCH_UPDATE_GOLDEN"):
        golden.write_text(text)
    assert text == golden.read_text()
    assert "…" not in text  # rich's ellipsis: a cut cell
    assert all(len(line) <= width for line in text.splitlines())
    if width == 80:
        assert "Not shown at 80 columns: kind" in " ".join(text.split())
        assert ("PASS" in text and "us" in text) or "ms" in text
    else:
        assert "Not shown" not in text


def test_markdown_matches_golden_text():
    from gpubench.report.table import group_markdown

    text = group_markdown(finish_group(matmul_group(), CEILINGS), "NVIDIA H100 80GB HBM3")
    golden = GOLDEN / "matmul_table.md"
    if os.environ.get("GPUBENCH_UPDATE_GOLDEN"):
        golden.write_text(text)
    assert text == golden.read_text()
    table = [line for line in text.splitlines() if line.startswith("|")]
    header, rule, *rows = table
    assert {line.count(" | ") for line in rows} == {header.count(" | ")}  # every column
    assert rule.count("|") == header.count("|") and "---:" in rule


def test_a_warning_of_several_rows_is_one_note_and_a_suspect_reason_is_said_once():
    """Issue 52 item 7: 44 notes under command 1's tables, 22 the same sentence, and each
    SUSPECT reason twice (the row's reason, then the same words as a warning)."""
    from gpubench.records.point import PointKey
    from gpubench.records.shape import Shape
    from gpubench.records.warning import TimingWarning
    from gpubench.report.table import group_notes

    def row(variant, status=R.OK, error=None, warnings=()):
        key = PointKey("demo", variant, "float32", Shape({"n": 1}), "cold")
        return R.Result(key=key, kind="torch", status=status, error=error,
                        warnings=tuple(warnings))

    noisy = TimingWarning("noisy", "IQR is 7% of the median", "raise --max-time")
    busy = [TimingWarning("host_busy", f"the host clock timed other work too: {n} CPUs busy",
                    "time on an idle machine") for n in (1, 2)]
    suspect = TimingWarning("suspect", "2300% of the measured roofline", "check the cost model")
    notes = group_notes([row("a", warnings=[noisy, busy[0]]), row("b", warnings=[noisy, busy[1]]),
                         row("c", R.SUSPECT, suspect.message, [suspect])])
    assert "a, b: IQR is 7% of the median — raise --max-time" in notes
    assert ("a, b: the host clock timed other work too (a: 1 CPUs busy; b: 2 CPUs busy) — "
            "time on an idle machine") in notes
    assert sum("2300%" in n for n in notes) == 1
