"""The rendered results table against golden text (regenerate: GPUBENCH_UPDATE_GOLDEN=1)."""

import math
import os
import random

from rich.console import Console

from conftest import REPO
from gpubench import results as R
from gpubench.report.table import group_notes, group_table

GOLDEN = REPO / "tests" / "golden"
CEILINGS = {"bandwidth_gbps": 3007.0, "tflops": {"float32": 51.6}}


def samples(seed: int, median: float, sigma: float, n: int) -> list[float]:
    rng = random.Random(seed)
    return [median * math.exp(rng.gauss(0, sigma)) for _ in range(n)]


def matmul_group() -> list[R.Result]:
    def row(variant, kind, status=R.OK, median=None, baseline=False, mode="cold", **extra):
        return R.Result(family="matmul", variant=variant, kind=kind, size=4096,
                        dtype="float32", status=status, mode=mode, baseline=baseline,
                        flops=2 * 4096**3, bytes_moved=3 * 4096**2 * 4,
                        samples_s=samples(len(variant), median, 0.004, 40) if median else [],
                        method="cuda-events minus empty-pair cost, L2 flushed by reads, "
                               "spin-queued launch" if median else None,
                        stop_reason="converged", target_rel_ci=0.005, **extra)

    return [
        row("torch", "torch", median=2.649e-3, baseline=True),
        row("naive", "cuda", median=24.82e-3, compile_s=21.0, compile_cached=False),
        row("tiled", "cuda", median=15.58e-3, compile_s=0.0, compile_cached=True),
        row("wrong", "cuda", status=R.FAIL, compile_s=0.0, compile_cached=True,
            check={"passed": False, "max_abs_err": 0.5, "worst_ratio": 4999.0,
                   "mismatches": 12, "nonfinite": 0, "total": 4096 * 4096, "atol": 1e-4,
                   "rtol": 1e-4, "note": ""}),
        row("broken", "triton", status=R.CRASHED, error="worker was killed by SIGSEGV"),
        row("tiled", "cuda", status=R.SKIPPED, error="needs a CUDA GPU", mode="wall"),
    ]


def render(group) -> str:
    with open(os.devnull, "w") as sink:
        console = Console(width=140, record=True, color_system=None, file=sink)
        console.print(group_table(group, "N", "NVIDIA H100 80GB HBM3"))
        for note in group_notes(group):
            console.print(f"  {note}", soft_wrap=True)
        return console.export_text()


def test_table_matches_golden_text():
    group = matmul_group()
    R.finish_group(group, CEILINGS)
    text = render(group)
    golden = GOLDEN / "matmul_table.txt"
    if os.environ.get("GPUBENCH_UPDATE_GOLDEN"):
        golden.write_text(text)
    assert text == golden.read_text()
