"""On a CUDA GPU only (skipped elsewhere): the real timing path, builds and fault isolation."""

import json

import pytest

from conftest import TEST_KERNELS

pytestmark = [pytest.mark.gpu, pytest.mark.slow]


def test_square_on_the_gpu_passes_and_is_timed_with_cold_l2_events(gpubench):
    done = gpubench("run", "square", "--sizes", "2^20", "--dtype", "fp32,fp16,bf16")
    assert done.code == 0, done.output
    rows = done.results()["results"]
    assert {r["status"] for r in rows} == {"ok"} and len(rows) == 9  # no compiled: conftest
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
    variants = {r["variant"] for r in rows}  # the family's, whatever the ladder adds
    assert {"torch", "cuda", "triton"} <= variants
    assert {(r["variant"], r["mode"]) for r in rows} == {
        (v, m) for v in variants for m in ("cold", "warm", "graph", "cupti", "wall")}
    assert all(r["status"] == "ok" and r["median_s"] > 0 for r in rows)
    warm = next(r for r in rows if r["mode"] == "warm")
    assert warm["measurement"]["details"]["flush_bytes"] == 0
    assert all(r["roof_fraction"] and r["bound"] == "memory" for r in rows)


def test_shapes_on_the_gpu_every_variant_passes(gpubench):
    matmul = gpubench("run", "matmul", "--shape", "M=16,N=512,K=256", "--dtype", "fp32,bf16")
    assert matmul.code == 0, matmul.output
    # Every variant passes where it runs; one that declares dtypes (wmma: 16-bit only) is
    # skipped, with that reason, at the others.
    for row in matmul.results()["results"]:
        assert row["status"] == "ok" or (row["status"] == "skipped"
                                         and row["error"].startswith("supports ")), row
    softmax = gpubench("run", "softmax", "--axis", "cols=1000,32768", "--dtype", "fp32,bf16")
    assert softmax.code == 0, softmax.output
    rows = softmax.results()["results"]
    # naive, online, block_reduce, triton and torch: 32768 columns take block_reduce's
    # longest register path (1024 threads x 32 floats)
    assert {r["status"] for r in rows} == {"ok"} and len(rows) == 2 * 2 * 5
    assert {r["shape"]["rows"] for r in rows} == {4096}  # the GPU default of the other axis


def test_the_compiled_variant_passes_on_the_gpu_and_reads_cached_the_second_time(gpubench):
    """Issue 29: torch.compile of softmax's reference, checked and timed; its build is the
    first call (Triton's compile in it), cached in the second run (Inductor's FX-graph cache
    under GPUBENCH_CACHE_DIR, which both runs share)."""
    runs = [gpubench("run", "softmax", "--shape", "rows=1024,cols=1000", "--variants",
                     "compiled", "--compiled") for _ in range(2)]
    for done in runs:
        assert done.code == 0, done.output
        assert done.by_variant()["compiled"]["status"] == "ok"
    assert runs[0].by_variant()["compiled"]["build"]["compile_s"] > 0
    assert runs[1].by_variant()["compiled"]["build"]["cached"] is True


def test_window_cost_is_fitted_and_kernels_are_counted(gpubench):
    """Issue 11: cold samples lose the fitted window cost (a null-kernel line, not the empty
    pair), and every passing point says how many kernels a call runs."""
    done = gpubench("run", "square", "--sizes", "2^20")
    assert done.code == 0, done.output
    for row in done.results()["results"]:
        details = row["measurement"]["details"]
        assert details["window_cost_method"] == "null-kernel fit", details
        assert details["window_cost_us"] > details["empty_pair_us"] > 0
        assert 0.5 < details["null_kernel_us"] < 5
        assert row["kernels_per_call"] >= 1
        assert row["kernel_sum_s"] is not None and row["span_s"] == row["median_s"]


def test_a_multi_kernel_call_carries_sum_and_span():
    import torch

    import gpubench

    values = torch.randn(1 << 20, device="cuda")
    result = gpubench.measure(lambda: torch.sort(values), name="sort")
    work = result.device_work
    assert work.source == "cupti" and work.kernels >= 2
    assert result.span_s == result.median_s
    assert 0 < result.kernel_sum_s < result.span_s
    single = gpubench.measure(torch.add, values, values)
    assert single.device_work.single and single.kernel_sum_s == single.median_s


def test_ncu_check_adds_ncu_time_beside_ours(gpubench):
    import shutil

    if shutil.which("ncu") is None and not __import__("os").path.exists("/usr/local/cuda/bin/ncu"):
        pytest.skip("ncu not installed")
    done = gpubench("run", "vector_add", "--sizes", "2^24", "--ncu-check")
    assert done.code == 0, done.output
    assert "vs ncu" in done.output
    rows = done.results()["results"]
    assert all(r["ncu_check"] and r["ncu_check"]["ncu_s"] > 0 for r in rows)
    assert all(r["vs_ncu"] is not None for r in rows)


def test_sanitize_finds_exactly_the_three_planted_bugs_at_their_lines(gpubench):
    """examples/sanitize_demo: an out-of-bounds write, a shared-memory race and an
    uninitialised read, each in its own kernel, and a clean kernel; every tool on each."""
    import json

    from conftest import REPO

    done = gpubench("sanitize", "sanitize_demo", "--kernels-dir", str(REPO / "examples"),
                    "--tool", "all", "--json", timeout=1200)
    assert done.code == 14, done.output  # EXIT_SANITIZER_FOUND
    document = json.loads(done.stdout)
    source = (REPO / "examples" / "sanitize_demo" / "buggy.cu").read_text().splitlines()
    found = {}
    for variant in document["variants"]:
        for log in variant["tools"]:
            for finding in log["findings"]:
                found.setdefault(variant["variant"], []).append((log["tool"], finding))
    assert sorted(found) == ["oob", "race", "uninit"], found  # torch and clean: clean
    # Each bug at its own line(s): the tool meant for it finds it, and whatever any tool
    # reports for that variant points at those lines only.
    expected = {"oob": ("memcheck", ("y[i] = 2.0f * x[i < n ? i : 0];",)),
                "race": ("racecheck", ("tile[t] =", "* tile[other]")),
                "uninit": ("initcheck", ("float junk = scratch[i];",))}
    for variant, (tool, texts) in expected.items():
        assert tool in {t for t, _ in found[variant]}, found[variant]
        for _, finding in found[variant]:
            line = source[finding["line"] - 1]
            assert any(text in line for text in texts), (variant, finding["line"], line)


def test_peak_measures_a_ceiling_per_precision(gpubench):
    """fp32 (CUDA cores), TF32, fp16, bf16 and fp8 (from sm_89), each measured or said why not
    (expected ranges in timing/matmul_ceilings.py)."""
    done = gpubench("peak", "--force", "--json")
    assert done.code == 0, done.output
    ceilings = json.loads(done.stdout)
    rates, unmeasured = ceilings["tflops"], ceilings["unmeasured"]
    assert set(rates) | set(unmeasured) == {"fp32", "tf32", "fp16", "bf16", "fp8"}
    assert {"fp32", "tf32", "fp16", "bf16"} <= set(rates), unmeasured
    # TF32 tensor cores run ~7x the fp32 CUDA cores, fp16/bf16 ~2x TF32, fp8 ~2x fp16.
    assert 3 * rates["fp32"] < rates["tf32"] < rates["fp16"], rates
    if "fp8" in rates:
        assert rates["fp8"] > rates["fp16"], rates
    peak = gpubench("peak")  # the cached ones, every precision a row
    assert peak.code == 0 and all(f"│ {name} " in peak.stdout for name in rates), peak.output


def test_triton_tc_fp32_sits_under_its_tf32_roof(gpubench):
    """Issue 25: TF32 tensor cores measured against the fp32 CUDA-core roof read ~170%
    and SUSPECT; against the TF32 ceiling the row passes with a speedup."""
    done = gpubench("run", "matmul", "--sizes", "1024,4096", "--variants", "triton_tc")
    assert done.code == 0, done.output
    rows = [r for r in done.results()["results"] if r["variant"] == "triton_tc"]
    assert len(rows) == 2 and all(r["status"] == "ok" for r in rows), done.output
    for row in rows:
        assert row["precision"] == "tf32" and row["roofline"]["compute"] == "tf32"
        assert row["roof_fraction"] <= 1.1 and row["speedup_vs_baseline"], row
    assert "tf32" in done.output


def test_the_triton_autotuners_pick_is_kept_with_the_point(gpubench):
    """Triton's autotuner picks again in every process (run/worker/tune_apply.py): the config it
    ran is one of the kernel's own list, named in the build facts; twice, so `compare`
    can name a pick that moved."""
    folders = [f"profiles/autotune-pick-{i}" for i in range(2)]
    picks = []
    for folder in folders:
        done = gpubench("run", "matmul", "--sizes", "1024", "--dtype", "fp16", "--variants",
                        "triton_tc", "--out", folder)
        assert done.code == 0, done.output
        row = done.by_variant(done.cwd / folder)["triton_tc"]
        config = row["build"]["config"]
        assert config["source"] == "autotune" and config["label"].startswith("BLOCK_M="), row
        picks.append(config["index"])
    said = gpubench("compare", *folders, "--json")
    assert said.code == 0, said.output
    point = next(p for p in json.loads(said.stdout)["points"] if "/triton_tc/" in p["key"])
    moved = f"autotune picked config #{picks[0]} in BASE, #{picks[1]} in NEW"
    assert (moved in point["reason"]) == (picks[0] != picks[1]), point
