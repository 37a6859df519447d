"""`gpubench bisect` (issue 64): the search's logic, and on the CPU a 12-commit repository
whose variant does 4x the work from commit 7."""

from __future__ import annotations

import math

import pytest

from gpubench.analysis.bisect import NOT_SLOWER, SKIP, SLOWER, Bisection


def search(count: int, first_slow: int, skipped: frozenset = frozenset()) -> tuple:
    """(culprit, probes) of a search whose commits from `first_slow` on are slower."""
    state, probes = Bisection(count), 0
    while (index := state.next()) is not None:
        probes += 1
        outcome = SKIP if index in skipped else SLOWER if index >= first_slow else NOT_SLOWER
        state.record(index, outcome)
    return state.culprit(), probes, state


@pytest.mark.parametrize("count", [1, 2, 3, 7, 11, 16, 33])
def test_every_first_slow_commit_is_found_in_log2_probes(count):
    for first in range(count):
        culprit, probes, _ = search(count, first)
        assert culprit == first
        assert probes <= math.ceil(math.log2(count)) if count > 1 else probes == 0


def test_a_skipped_commit_costs_a_probe_and_is_named_as_a_doubt():
    culprit, probes, state = search(12, 6, skipped=frozenset({5}))
    assert culprit == 6 and probes <= math.ceil(math.log2(12)) + 1
    culprit, _, state = search(12, 6, skipped=frozenset({5, 4}))
    assert culprit == 6 and state.skipped_before() in ([], [5], [4, 5])


def test_an_unknown_outcome_is_refused():
    with pytest.raises(ValueError):
        Bisection(3).record(0, "faster")


# ---------------------------------------------------------------- on the CPU, end to end

def git(repo, *args: str) -> str:
    import subprocess

    done = subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
                          cwd=repo, check=True, capture_output=True, text=True)
    return done.stdout.strip()


@pytest.fixture(scope="module")
def twelve_commits(tmp_path_factory):
    """A repository of 12 commits of the family `pair`, each changing its folder; from
    the 7th on, its `work` variant does 4x the work. (commits, repository)."""
    from test_ab import write_version

    repo = tmp_path_factory.mktemp("bisect") / "repo"
    family = repo / "kernels" / "pair"
    repo.mkdir()
    git(repo, "init", "-q")
    commits = []
    for n in range(1, 13):
        write_version(family, repeats=4 if n >= 7 else 1, cuda=False)
        (family / "notes.txt").write_text(f"commit {n}\n")
        git(repo, "add", ".")
        git(repo, "commit", "-qm", f"commit {n}")
        commits.append(git(repo, "rev-parse", "HEAD"))
    return commits, repo


@pytest.mark.slow
def test_bisect_names_the_commit_that_quadrupled_the_work(gpubench, twelve_commits,
                                                         tmp_path):
    from conftest import FAST

    commits, repo = twelve_commits
    done = gpubench("bisect", "pair", "--good", commits[0], "--bad", commits[-1],
                    "--kernels-dir", str(repo / "kernels"), "--device", "cpu", "--out",
                    str(tmp_path / "bisect"), "--markdown", *FAST)
    assert done.code == 13, done.output
    assert f"culprit: {commits[6][:12]} 'commit 7'" in done.stdout, done.stdout
    assert "confirmed against its parent" in done.stdout
    probes = [line for line in done.stdout.splitlines() if line.startswith("probe-")]
    # the first A/B (BAD against GOOD), the search over 11 commits, the confirmation
    assert len(probes) <= math.ceil(math.log2(11)) + 1, done.stdout
    record = done.results(tmp_path / "bisect")
    assert record["meta"]["bisect"]["culprit"] == commits[6]
    assert any(line.startswith("bisect pair: ") and line.endswith(" s") for line in
               done.stdout.splitlines())  # its wall time


@pytest.mark.slow
def test_an_unchanged_range_has_no_culprit(gpubench, twelve_commits, tmp_path):
    from conftest import FAST

    commits, repo = twelve_commits
    done = gpubench("bisect", "pair", "--good", commits[0], "--bad", commits[5],
                    "--kernels-dir", str(repo / "kernels"), "--device", "cpu", "--out",
                    str(tmp_path / "bisect"), *FAST)
    assert done.code == 0, done.output
    lines = done.stdout.splitlines()
    assert "no culprit: BAD is not slower than GOOD" in lines, done.stdout
    assert not any(line.startswith("culprit:") for line in lines)


@pytest.mark.slow
def test_backfill_runs_each_commit_into_the_folders_series(gpubench, twelve_commits, tmp_path):
    """`history --backfill A..B` runs commits 2-4 (git's A..B: after A) from git exports,
    each recorded as the family folder at that commit, so one series holds them."""
    import json

    from conftest import FAST

    commits, repo = twelve_commits
    done = gpubench("history", "pair", "--backfill", f"{commits[0]}..{commits[3]}",
                    "--kernels-dir", str(repo / "kernels"), "--variants", "work")
    assert done.code == 0, done.output
    assert [line.split()[1] for line in done.stdout.splitlines()
            if line.startswith("backfill ")] == ["1/3:", "2/3:", "3/3:"]
    records = sorted((tmp_path / "profiles").glob("*-pair-backfill/*/results.json"))
    assert len(records) == 3
    recorded = [json.loads(r.read_text())["meta"]["revisions"]["families"]["pair"]
                for r in records]
    assert [r["commit"] for r in recorded] == commits[1:4]
    assert all(r["changed"] == r["commit"] and r["dirty"] is False for r in recorded)
    nightly = gpubench("run", "pair", "--kernels-dir", str(repo / "kernels"), "--variants",
                       "work", "--out", str(tmp_path / "nightly"), *FAST)
    assert nightly.code == 0, nightly.output
    here = json.loads((tmp_path / "nightly" / "results.json").read_text())["meta"]
    mine = here["revisions"]["families"]["pair"]
    assert (mine["repository"], mine["path"]) == (recorded[0]["repository"],
                                                  recorded[0]["path"])
    listing = gpubench("history", "pair", "--variants", "work").stdout
    assert "4 timed runs" in listing, listing  # one series: three backfilled, one nightly
    bad = gpubench("history", "pair", "--backfill", "HEAD", "--kernels-dir",
                   str(repo / "kernels"))
    assert bad.code == 2 and "A..B" in bad.output and "Traceback" not in bad.output
