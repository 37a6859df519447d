"""Issue 26, "also weak": hostile values through the real command line end in a clear
message and the documented exit code, never a traceback; a full build cache names its
folder; a complex reference is not half-checked; a variant's hoard is freed after its
ERROR; a phase that timed out is not logged as done (tests/test_piped_progress.py)."""

from __future__ import annotations

import copy
import errno
import json
from pathlib import Path

import pytest

from conftest import FAST, REPO

WEAK_SPECS = REPO / "tests" / "weakspecs"
HUGE = "9" * 5000  # past int()'s 4300-digit limit


def refused(done, code: int, message: str) -> None:
    assert done.code == code, done.output
    assert message in done.output, done.output
    assert "Traceback" not in done.output, done.output


# ---------------------------------------------------------------- numbers and folders


@pytest.mark.parametrize("args, message", [
    (("run", "square", "--sizes", HUGE), "larger than 2^40"),
    (("run", "square", "--sizes", f"2^{HUGE}"), "larger than 2^40"),
    (("run", "square", "--shape", f"n={HUGE}"), "larger than 2^40"),
    (("run", "square", "--sizes", "٣"), "sizes are positive integers"),
    (("report", f"latest~{HUGE}"), "run(s) with results"),
    (("report", "latest~²"), "expected latest or latest~N"),
])
def test_huge_or_foreign_numbers_are_usage_errors(gpubench, args, message):
    done = gpubench(*args, timeout=120)
    refused(done, 2, message)
    assert HUGE not in done.output  # what was typed is shortened in the message


def test_a_kernels_dir_that_is_a_file_is_not_a_folder(gpubench, tmp_path):
    (tmp_path / "afile").write_text("")
    refused(gpubench("list", "--kernels-dir", "afile", timeout=120), 2,
            "kernels folder 'afile' is not a folder")


@pytest.mark.parametrize("name, text, message", [
    ("deep.toml", "a = " + "[" * 100_000 + "]" * 100_000, "nested too deeply"),
    ("big.toml", "# " + "x" * (2 << 20), "larger than 1 MiB"),
])
def test_suite_files_too_deep_or_too_large_are_config_errors(gpubench, tmp_path, name,
                                                              text, message):
    (tmp_path / name).write_text(text)
    refused(gpubench("run", "--config", name, timeout=120), 3, f"{name}: {message}")


def test_dev_zero_as_a_suite_file_is_a_config_error(gpubench):
    refused(gpubench("run", "--config", "/dev/zero", timeout=120), 3, "larger than 1 MiB")


# ---------------------------------------------------------------- results files


def results_document() -> dict:
    row = {"family": "square", "variant": "torch", "dtype": "float32", "shape": {"n": 4096},
           "mode": "cold", "status": "ok", "baseline": True, "device": "cpu",
           "measurement": {"mode": "cold", "method": "host-clock",
                           "samples_s": [1e-6, 1.1e-6, 0.9e-6]}}
    return {"schema": 2, "meta": {}, "env": {}, "results": [row]}


def write_run(folder: Path, document: dict | None = None, raw: bytes | None = None) -> str:
    folder.mkdir()
    text = raw if raw is not None else json.dumps(document).encode()
    (folder / "results.json").write_bytes(text)
    return folder.name


def broken(name: str) -> dict | bytes:
    doc = results_document()
    samples = doc["results"][0]["measurement"]["samples_s"]
    if name == "negative":
        samples[0] = -1e-6
    elif name == "nan":  # as results.json writes a NaN
        samples[0] = None
        doc["results"][0]["measurement"]["_nonfinite"] = {"samples_s[0]": "nan"}
    elif name == "null":
        doc["results"] = None
    elif name == "latin1":
        return json.dumps(doc).encode() + b"\xff"
    elif name == "deep":
        return b"[" * 200_000 + b"]" * 200_000
    return doc


@pytest.mark.parametrize("name, message", [
    ("negative", "a timing sample is -1e-06 s"),
    ("nan", "a timing sample is nan s"),
    ("null", "'results' is null, not a list"),
    ("latin1", "not UTF-8 text"),
    ("deep", "nested too deeply"),
])
def test_damaged_results_files_are_refused_by_report_and_compare(gpubench, tmp_path, name,
                                                                 message):
    good = write_run(tmp_path / "good", results_document())
    assert gpubench("report", good, "--output", "good.html", timeout=120).code == 0
    damage = broken(name)
    bad = write_run(tmp_path / name, **({"raw": damage} if isinstance(damage, bytes)
                                        else {"document": copy.deepcopy(damage)}))
    refused(gpubench("report", bad, "--output", "bad.html", timeout=120), 2, message)
    refused(gpubench("compare", good, bad, timeout=120), 2, message)


# ---------------------------------------------------------------- the build cache


def test_a_full_disk_under_the_build_cache_names_the_folder(tmp_path, monkeypatch):
    from gpubench.build import compile as build
    from gpubench.build.diagnostics import CompileError
    from gpubench.build.sources import BuildRequest

    monkeypatch.setenv("GPUBENCH_CACHE_DIR", str(tmp_path / "cache"))
    (tmp_path / "triple.cpp").write_text("void triple() {}\n")

    def full_disk(*args, **kwargs):  # what a write on a full disk raises: no file named
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(build, "cache_root", full_disk)
    request = BuildRequest("tiny", tmp_path, (), ("triple.cpp",), ("triple",))
    with pytest.raises(CompileError) as caught:
        build.build_extension(request)
    assert "No space left on device" in caught.value.summary
    assert str(tmp_path / "cache") in caught.value.summary
    assert "GPUBENCH_CACHE_DIR" in caught.value.summary


# ---------------------------------------------------------------- variants


@pytest.mark.slow
def test_a_complex_reference_is_not_checked_by_its_real_parts(gpubench):
    done = gpubench("run", "complexref", "--kernels-dir", str(WEAK_SPECS), *FAST)
    assert done.code == 1, done.output
    row = done.by_variant()["real_part"]
    assert row["status"] == "fail", row
    assert "the reference is complex" in row["error"], row["error"]
    assert "Traceback" not in done.output


@pytest.mark.slow
def test_memory_a_variant_hoarded_is_freed_after_its_error(gpubench):
    done = gpubench("run", "hoard", "--kernels-dir", str(WEAK_SPECS), *FAST)
    assert done.code == 1, done.output
    status = {v: r["status"] for v, r in done.by_variant().items()}
    assert status == {"torch": "ok", "hoards": "error", "after": "ok"}, done.output


def test_a_named_pipe_as_a_suite_file_or_submission_is_refused_not_waited_on(gpubench, tmp_path):
    """Issue 52: `--config FIFO` blocked with no output (opening a pipe waits for a writer);
    `--submission FIFO` said 'no such file'."""
    import os

    fifo = tmp_path / "suite.toml"
    os.mkfifo(fifo)
    refused(gpubench("run", "--config", str(fifo), timeout=60), 3, "a named pipe or socket")
    problem = REPO / "examples" / "leaderboard" / "reference-kernels" / "saxpy_py"
    refused(gpubench("run", "--problem", str(problem), "--submission", str(fifo), timeout=60),
            2, "not a regular file")
