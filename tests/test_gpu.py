"""On a CUDA GPU only (skipped elsewhere): the real timing path, builds and fault isolation."""

import pytest

from conftest import TEST_KERNELS

pytestmark = [pytest.mark.gpu, pytest.mark.slow]


def test_square_on_the_gpu_passes_and_is_timed_with_cold_l2_events(gpubench):
    done = gpubench("run", "square", "--sizes", "2^20", "--dtype", "fp32,fp16,bf16")
    assert done.code == 0, done.output
    rows = done.results()["results"]
    assert {r["status"] for r in rows} == {"ok"} and len(rows) == 9
    assert all(r["mode"] == "cold" and "L2 flushed by reads" in r["method"] for r in rows)
    assert all(r["measurement"]["details"]["flush_bytes"] > 0 for r in rows)
    env = done.results()["env"]
    assert env["device"] == "cuda" and env["sm_count"] > 0 and env["gpu"]


def test_illegal_address_crashes_one_variant_and_the_next_runs(gpubench):
    done = gpubench("run", "gpufaulty", "--kernels-dir", str(TEST_KERNELS))
    assert done.code == 1, done.output
    status = {v: r["status"] for v, r in done.by_variant().items()}
    assert status == {"torch": "ok", "illegal": "crashed", "after_fault": "ok"}
    assert "illegal" in done.by_variant()["illegal"]["error"].lower()


def test_every_mode_times_every_variant(gpubench):
    done = gpubench("run", "vector_add", "--sizes", "2^20", "--mode", "all")
    assert done.code == 0, done.output
    rows = done.results()["results"]
    assert {(r["variant"], r["mode"]) for r in rows} == {
        (v, m) for v in ("torch", "cuda", "triton")
        for m in ("cold", "warm", "graph", "cupti", "wall")}
    assert all(r["status"] == "ok" and r["median_s"] > 0 for r in rows)
    warm = next(r for r in rows if r["mode"] == "warm")
    assert warm["measurement"]["details"]["flush_bytes"] == 0
    assert all(r["roof_fraction"] and r["bound"] == "memory" for r in rows)


def test_shapes_on_the_gpu_every_variant_passes(gpubench):
    matmul = gpubench("run", "matmul", "--shape", "M=16,N=512,K=256", "--dtype", "fp32,bf16")
    assert matmul.code == 0, matmul.output
    assert {r["status"] for r in matmul.results()["results"]} == {"ok"}
    softmax = gpubench("run", "softmax", "--axis", "cols=1000,32768", "--dtype", "fp32,bf16")
    assert softmax.code == 0, softmax.output
    rows = softmax.results()["results"]
    assert {r["status"] for r in rows} == {"ok"} and len(rows) == 2 * 2 * 3
    assert {r["shape"]["rows"] for r in rows} == {4096}  # the GPU default of the other axis
