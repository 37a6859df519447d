"""examples/ci/: the workflow's own steps (steps.sh) run on the CPU, as a pull request's
check and as the nightly job would run them on a GPU runner (issue 63)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_ab import write_version

from conftest import REPO

pytestmark = [pytest.mark.slow, pytest.mark.serial]  # the PR check judges CPU timings

STEPS = REPO / "examples" / "ci" / "steps.sh"
TIMING = "--variants work --warmup 5 --min-time 10 --max-time 30"


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=repo,
                   check=True, capture_output=True)


def steps(repo: Path, job: str, build_cache: Path, **env: str) -> subprocess.CompletedProcess:
    """`bash steps.sh JOB` in `repo`, with this Python's gpubench first on PATH."""
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"
    full = {**os.environ, "PATH": path, "FAMILY": "pair", "KERNELS_DIR": "kernels",
            "DEVICE": "cpu", "GPUBENCH_ARGS": TIMING, "GPUBENCH_COMPILED": "off",
            "GPUBENCH_CACHE_DIR": str(build_cache), "COLUMNS": "160", **env}
    return subprocess.run(["bash", str(STEPS), job], cwd=repo, env=full, text=True,
                          capture_output=True, timeout=600)


@pytest.fixture
def repo(tmp_path) -> Path:
    """A repository whose committed family `pair` is the PR's base."""
    folder = tmp_path / "repo"
    write_version(folder / "kernels" / "pair", cuda=False)
    git(folder.parent, "init", "-q", str(folder))
    git(folder, "add", ".")
    git(folder, "commit", "-qm", "base")
    return folder


def test_the_pr_step_fails_a_3x_slowdown_with_13_and_writes_the_comment(repo, tmp_path):
    write_version(repo / "kernels" / "pair", repeats=3, cuda=False)  # the PR's change
    done = steps(repo, "pr", tmp_path / "cache", BASE_REF="HEAD")
    assert done.returncode == 13, done.stdout + done.stderr
    comment = (repo / "gpubench-comment.md").read_text()
    assert comment.splitlines()[0] == "<!-- gpubench ab: pair -->"  # the job finds it by this
    assert "| SLOWER |" in comment and "| work |" in comment, comment
    assert (repo / "gpubench-ab" / "results.json").is_file()


def test_the_pr_step_passes_an_unchanged_family(repo, tmp_path):
    done = steps(repo, "pr", tmp_path / "cache", BASE_REF="HEAD")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "| SLOWER |" not in (repo / "gpubench-comment.md").read_text()


def test_the_nightly_step_records_runs_and_checks_the_series(repo, tmp_path):
    for _ in range(2):
        done = steps(repo, "nightly", tmp_path / "cache")
        assert done.returncode == 0, done.stdout + done.stderr
    assert (repo / "gpubench-history.md").is_file()


def test_the_steps_name_what_they_need():
    done = subprocess.run(["bash", str(STEPS), "pr"], env={"PATH": os.environ["PATH"]},
                          capture_output=True, text=True)
    assert done.returncode != 0 and "FAMILY" in done.stderr
