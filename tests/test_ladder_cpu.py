"""The kernel ladder on a CPU, through the real command line: sgemm (every step), matmul's
tensor-core variants, vector_add's vectorized variant. Every variant that can run here
PASSes; the GPU-only ones are skipped with their reason. Two C++ builds in all (sgemm's
one extension for its seven steps, vector_add's), each once per test session."""

import pytest
from test_cli import FAST

pytestmark = pytest.mark.slow

SGEMM_STEPS = ("naive", "coalesced", "smem", "blocktile_1d", "blocktile_2d", "vectorized",
               "warptiling")


def statuses(done) -> dict[tuple[str, str], tuple[str, str]]:
    """(variant, dtype) -> (status, error) of every point of the run, per shape collapsed:
    each (variant, dtype) must have one status at every shape."""
    seen: dict[tuple[str, str], set] = {}
    for row in done.results()["results"]:
        seen.setdefault((row["variant"], row["dtype"]), set()).add(
            (row["status"], row.get("error") or ""))
    assert all(len(v) == 1 for v in seen.values()), seen
    return {key: next(iter(v)) for key, v in seen.items()}


def test_ladder_variants_pass_on_cpu_or_say_why_not(gpubench):
    listed = gpubench("list", "--device", "cpu")
    assert listed.code == 0, listed.output
    for name in ("sgemm", "cublas", *SGEMM_STEPS, "triton_tc", "wmma"):
        assert name in listed.stdout, name

    # sgemm: one build serves all seven steps; ragged and tile-sized shapes
    sgemm = gpubench("run", "sgemm", "--shape", "M=17,N=33,K=65", "--shape", "M=64,N=64,K=64",
                     *FAST, "--device", "cpu")
    assert sgemm.code == 0, sgemm.output
    rows = statuses(sgemm)
    assert set(rows) == {(v, "float32") for v in ("cublas", *SGEMM_STEPS)}
    assert all(status == "ok" for status, _ in rows.values()), rows
    # the seven steps share one extension: built (or found in the cache) once
    steps = [r["build"] for r in sgemm.results()["results"] if r["variant"] in SGEMM_STEPS]
    assert len({b["extension"] for b in steps if b.get("extension")}) == 1, steps
    assert sum(b["cached"] is False for b in steps) <= 1, steps

    # matmul's tensor-core step: Triton through the interpreter at fp16 and fp32 (TF32 on a
    # GPU, checked at its own tolerance); wmma needs a GPU and offers no fp32
    matmul = gpubench("run", "matmul", "--variants", "triton_tc,wmma", "--sizes", "64",
                      "--dtype", "fp16,fp32", *FAST, "--device", "cpu")
    assert matmul.code == 0, matmul.output
    rows = statuses(matmul)
    assert rows[("torch", "float16")][0] == rows[("torch", "float32")][0] == "ok"
    assert rows[("triton_tc", "float16")][0] == rows[("triton_tc", "float32")][0] == "ok"
    assert rows[("wmma", "float32")] == ("skipped", "supports float16, bfloat16 only")
    assert rows[("wmma", "float16")][0] == "skipped"
    assert "needs a CUDA GPU" in rows[("wmma", "float16")][1]

    # vector_add's vectorized step, at sizes with a scalar tail (n % 4, n % 8 != 0)
    vector = gpubench("run", "vector_add", "--variants", "vectorized", "--sizes", "1001,4099",
                      "--dtype", "fp32,fp16", *FAST, "--device", "cpu")
    assert vector.code == 0, vector.output
    rows = statuses(vector)
    assert set(rows) == {(v, d) for v in ("torch", "vectorized") for d in ("float32", "float16")}
    assert all(status == "ok" for status, _ in rows.values()), rows
