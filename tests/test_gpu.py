"""On a CUDA GPU only (skipped elsewhere): the real timing path, builds and fault isolation."""

import pytest

from conftest import TEST_KERNELS

pytestmark = [pytest.mark.gpu, pytest.mark.slow]


def test_square_on_the_gpu_passes_and_is_timed_with_cold_l2_events(gpubench):
    done = gpubench("run", "square", "--sizes", "2^20", "--dtype", "fp32,fp16,bf16")
    assert done.code == 0, done.output
    rows = done.results()["results"]
    assert {r["status"] for r in rows} == {"ok"} and len(rows) == 9
    assert all("cuda-events cold-L2" in r["method"] for r in rows)
    assert all(r["timing_details"]["flush_bytes"] > 0 for r in rows)
    env = done.results()["env"]
    assert env["device"] == "cuda" and env["sm_count"] > 0 and env["gpu"]


def test_illegal_address_crashes_one_variant_and_the_next_runs(gpubench):
    done = gpubench("run", "gpufaulty", "--kernels-dir", str(TEST_KERNELS))
    assert done.code == 1, done.output
    status = {v: r["status"] for v, r in done.by_variant().items()}
    assert status == {"torch": "ok", "illegal": "crashed", "after_fault": "ok"}
    assert "illegal" in done.by_variant()["illegal"]["error"].lower()


def test_no_flush_gives_warm_cache_times_labelled_as_such(gpubench):
    done = gpubench("run", "vector_add", "--variants", "torch", "--sizes", "2^20", "--no-flush")
    assert done.code == 0, done.output
    row = done.results()["results"][0]
    assert row["timing_details"]["flush_bytes"] == 0
