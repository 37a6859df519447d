"""`gpubench tune` on the CPU, in the Triton interpreter: every config checked alone, into
its own poisoned buffer; no timing (its reason said); the pinned file read by `run`."""

from __future__ import annotations

import json
import shutil

import pytest

from conftest import TEST_KERNELS
from gpubench.tune import pinned as P
from gpubench.tune.space import TuneConfig


@pytest.mark.slow
def test_two_half_writing_configs_are_two_fails_and_no_choice(gpubench):
    # Together (Triton's autotuner, one buffer) the two halves would pass; alone, each
    # leaves the other half poisoned.
    done = gpubench("tune", "halves", "--variant", "split", "--kernels-dir", str(TEST_KERNELS),
                    "--device", "cpu")
    assert done.code == 1, done.output
    assert done.output.count("FAIL") >= 2 and "no config chosen" in done.output
    document = done.results()
    rows = {r["variant"]: r for r in document["results"]}
    assert set(rows) == {"split@0", "split@1"}
    for row in rows.values():
        assert row["status"] == "fail"
        assert row["check"]["mismatches"] == 2048  # half of n=4096 unwritten
    assert document["meta"]["tune"]["best"] is None


@pytest.mark.slow
def test_every_config_checked_and_timing_skipped_with_the_reason(gpubench):
    done = gpubench("tune", "halves", "--variant", "whole", "--kernels-dir", str(TEST_KERNELS),
                    "--device", "cpu")
    assert done.code == 0, done.output
    assert done.output.count("timing skipped: no GPU here") == 1  # said once (issue 52)
    document = done.results()
    assert [(r["variant"], r["status"], r["samples"]) for r in document["results"]] == [
        ("whole@0", "ok", 0), ("whole@1", "ok", 0)]
    tune = document["meta"]["tune"]
    assert [c["label"] for c in tune["configs"]] == ["BLOCK=128 w1 s3", "BLOCK=256 w2 s3"]
    assert tune["best"] is None and tune["timing_skipped"].startswith("timing skipped")
    assert not (TEST_KERNELS / "halves" / P.FOLDER).exists()  # nothing pinned on a CPU


@pytest.mark.slow
def test_run_uses_the_pinned_config_and_says_so(gpubench, tmp_path):
    kernels = tmp_path / "kernels"
    shutil.copytree(TEST_KERNELS / "halves", kernels / "halves")
    path = P.pinned_path(kernels / "halves", "", "split", "float32", "4096")
    path.parent.mkdir(parents=True)
    half = TuneConfig(0, {"HALF": 0, "BLOCK": 256}, 1, 3)
    path.write_text(P.Pinned("halves", "split", "float32", "n=4096", "", half).to_json())
    done = gpubench("run", "halves", "--variants", "split", "--kernels-dir", str(kernels),
                    "--device", "cpu", "--min-time", "1", "--max-time", "5")
    assert "ran the pinned config HALF=0 BLOCK=256 w1 s3" in done.output, done.output
    assert done.by_variant()["split"]["status"] == "fail"  # the half config ran alone
    gone = json.loads(path.read_text())
    gone["config"]["params"]["BLOCK"] = 999
    path.write_text(json.dumps(gone))
    done = gpubench("run", "halves", "--variants", "split", "--kernels-dir", str(kernels),
                    "--device", "cpu", "--min-time", "1", "--max-time", "5")
    assert "pinned config 'HALF=0 BLOCK=999 w1 s3' is no longer in the kernel's space" \
        in done.output, done.output


def test_a_variant_without_a_space_is_a_usage_error(gpubench):
    done = gpubench("tune", "square", "--variant", "torch", "--device", "cpu")
    assert done.code == 2 and "has no config space" in done.output
    done = gpubench("tune", "square", "--variant", "nope", "--device", "cpu")
    assert done.code == 2 and "no variant 'nope'" in done.output


@pytest.mark.slow
def test_the_race_runs_to_a_pick_and_compare_reads_two_tune_records(gpubench):
    """The schedule's plumbing (rounds in one worker, samples joined, the pick, the record,
    compare) on CPU timings, which mean nothing for a GPU: only a test switch times them."""
    env = {"GPUBENCH_TUNE_TIME_ON_CPU": "1"}
    args = ("tune", "halves", "--variant", "whole", "--kernels-dir", str(TEST_KERNELS),
            "--device", "cpu", "--min-time", "5")
    first = gpubench(*args, "--out", "profiles/a", env=env)
    second = gpubench(*args, "--out", "profiles/b", env=env)
    for done in (first, second):
        assert done.code == 0, done.output
        assert "round 1: 2 configs" in done.output and "chosen: #" in done.output
    document = first.results(first.cwd / "profiles" / "a")
    tune = document["meta"]["tune"]
    assert tune["best"] in (0, 1) and tune["rounds"] >= 1 and tune["timing_s"] > 0
    rounds = {r["variant"]: r for r in document["results"]}
    assert all(r["samples"] >= 10 for r in rounds.values())  # min_samples, each round
    assert not (TEST_KERNELS / "halves" / "tuned").exists()  # no pin from CPU timings
    compared = gpubench("compare", "profiles/a", "profiles/b")
    assert compared.code == 0, compared.output
    assert "tune: " in compared.output and ("the same config" in compared.output
                                             or "best config changed" in compared.output)


@pytest.mark.slow
def test_ctrl_c_during_the_checks_does_not_claim_every_config_was_checked(tmp_path):
    """Issue 52: after Ctrl-C in `tune` it said 'every config was checked' with 10 of 401
    configs unrun. Ctrl-C comes with the first config's task, while the other four build
    from a cold cache."""
    import os
    import signal
    import time

    from conftest import start_gpubench

    env = {**os.environ, "GPUBENCH_CACHE_DIR": str(tmp_path / "cold"), "COLUMNS": "160",
           "GPUBENCH_RUN_INDEX": str(tmp_path / "runs.json")}
    process = start_gpubench(["tune", "square", "--variant", "cuda", "--device", "cpu"],
                             tmp_path, env)
    deadline = time.monotonic() + 120  # tune's worker logs: tune-worker<N>-<M>.log
    while time.monotonic() < deadline and not any(
            " task " in log.read_text(errors="replace")
            for log in tmp_path.rglob("tune-worker*.log")):
        time.sleep(0.2)
    process.send_signal(signal.SIGINT)
    output, _ = process.communicate(timeout=120)
    assert "interrupted before every config was checked; none chosen" in output, output
    assert "so every config was checked" not in output
    assert "Traceback" not in output
