"""`gpubench history` knows a series' folder and its software (issue 63).

Two repositories each holding a family `pair` are two families that share a name: their
runs make two sets of series, each titled with its folder. Each row carries the run's
torch, Triton, CUDA and driver versions (`--export` writes them), and a step where torch
changed is the environment's: labelled so, and no exit 13 for `--check`, while the same
step with unchanged software still fails it. The runs are real CPU runs; the eight runs of
the step are one real run's results.json, its samples scaled and its torch version set."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import time

import pytest

from gpubench.analysis.history import build_series
from gpubench.commands import history
from gpubench.records.series import HistoryRow, folder_label
from gpubench.store import run_index
from tests.test_ab import write_version
from tests.test_history import RUN, row
from tests.test_history_store_robust import shown


def git(repo, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t",
                    *args], check=True, capture_output=True)


@pytest.fixture(scope="module")
def two_folders(tmp_path_factory):
    """One run of `pair` from each of two repositories (~5 s each)."""
    root = tmp_path_factory.mktemp("folders")
    env = {**os.environ, "GPUBENCH_RUN_INDEX": str(root / "runs.json"),
           "GPUBENCH_COMPILED": "off", "COLUMNS": "160"}
    for name in ("repo-a", "repo-b"):
        repo = root / name
        write_version(repo / "pair", cuda=False)
        git(repo, "init", "-q")
        git(repo, "add", ".")
        git(repo, "commit", "-qm", name)
        done = subprocess.run([sys.executable, "-m", "gpubench", "run", "pair",
                               "--kernels-dir", str(repo), "--out", str(root / f"run-{name}"),
                               *RUN], capture_output=True, text=True, env=env, timeout=600)
        assert done.returncode == 0, done.stdout + done.stderr
    return root


def test_two_folders_of_one_family_name_are_two_sets_of_series(two_folders, monkeypatch):
    monkeypatch.setenv("GPUBENCH_RUN_INDEX", str(two_folders / "runs.json"))
    code, text = shown(history.HistoryRequest("pair", export=two_folders / "rows.csv"))
    assert code == 0, text
    assert "4 series over 2 runs" in text  # torch and work, of each folder
    for name in ("repo-a", "repo-b"):
        assert f"pair [{name}:pair] torch float32" in text, text
        assert f"pair [{name}:pair] work float32" in text
    import pandas as pd

    rows = pd.read_csv(two_folders / "rows.csv")
    import torch

    assert set(rows["torch"]) == {torch.__version__}
    assert rows["folder"].nunique() == 2
    assert {folder_label(f) for f in rows["folder"]} == {"repo-a:pair", "repo-b:pair"}


def test_one_folder_keeps_its_titles_and_old_rows_join_it():
    """A family of one folder is titled as before; a row of an older run (no folder
    recorded) joins that folder's series rather than starting one."""
    rows = [HistoryRow(**{**row(i, 1e-5).to_dict(), "folder": "/r:f"}) for i in range(1, 6)]
    (series,) = build_series([row(0, 1e-5), *rows])
    assert len(series.rows) == 6 and not series.show_folder
    from gpubench.report.history_view import series_title

    assert series_title(series).startswith("f v float32 n=1 cold")


def versioned(i: int, median: float, torch: str) -> HistoryRow:
    return HistoryRow(**{**row(i, median).to_dict(), "torch": torch})


def test_a_step_with_a_torch_change_is_the_environments():
    rows = [versioned(i, 1e-5, "2.12.0") for i in range(6)]
    rows += [versioned(i, 4e-5, "2.13.0") for i in range(6, 10)]
    (series,) = build_series(rows)
    (change,) = series.changes
    assert change.cause == "environment changed: torch 2.12.0 -> 2.13.0"
    assert series.worse_lately() is None and series.environment_lately() is change
    assert series.environment_at(series.rows[6]) == "torch 2.12.0 -> 2.13.0"
    assert series.environment_at(series.rows[7]) == ""
    unchanged = build_series([versioned(i, r.median_s, "2.12.0") for i, r in enumerate(rows)])
    assert unchanged[0].worse_lately() is not None


def copied_runs(source, root, torch_after: str, steps: int = 8, slower_from: int = 5):
    """`steps` run folders from one real run's results.json: the `work` samples 4x from
    run `slower_from` on, torch '2.12.0' before it and `torch_after` from it."""
    data = json.loads((source / "results.json").read_text())
    folders = []
    for run in range(steps):
        after = run >= slower_from
        copy = json.loads(json.dumps(data))
        copy["env"]["torch"] = torch_after if after else "2.12.0"
        copy["meta"]["run_id"] = f"run{run}"
        copy["meta"]["started"] = time.strftime("%Y-%m-%dT%H:%M:%S+0000",
                                                time.gmtime(1.7e9 + run * 86400))
        for result in copy["results"]:
            if result["variant"] == "work" and after:
                measurement = result["measurement"]
                measurement["samples_s"] = [s * 4 for s in measurement["samples_s"]]
        folder = root / f"run{run}"
        folder.mkdir()
        (folder / "results.json").write_text(json.dumps(copy))
        run_index.record_run(folder, time.time())
        folders.append(folder)
    return folders


@pytest.mark.parametrize("torch_after", ["2.13.0", "2.12.0"])
def test_check_says_an_environment_step_and_fails_only_a_code_step(two_folders, tmp_path,
                                                                   monkeypatch, torch_after):
    monkeypatch.setenv("GPUBENCH_RUN_INDEX", str(tmp_path / "runs.json"))
    copied_runs(two_folders / "run-repo-a", tmp_path, torch_after)
    code, text = shown(history.HistoryRequest("pair", check=True, last=None))
    work = text.split("pair work ")[1].split("pair torch ")[0]
    assert work.count("<- change +") == 1, text
    if torch_after == "2.13.0":
        assert code == 0, text
        assert "environment changed: torch 2.12.0 -> 2.13.0" in work
        assert "not failed on (the software changed)" in text
        assert "slower in the newest runs: " not in text
        torch_part = text.split("pair torch ")[1]
        assert "env: torch 2.12.0 -> 2.13.0" in torch_part  # marked, no change point
    else:
        assert code == 13, text
        assert "environment changed" not in text and "env: " not in text
        assert "slower in the newest runs: pair/work/" in text


def test_an_older_store_loads_and_is_filled_again(two_folders, tmp_path, monkeypatch):
    """A schema-1 store (no folder, no versions): read as it is it reads as one unknown
    folder; opened for writing it gets the columns and the next sync fills them."""
    import sqlite3

    from gpubench.store import history_store

    monkeypatch.setenv("GPUBENCH_RUN_INDEX", str(tmp_path / "runs.json"))
    folder = tmp_path / "run-a"
    shutil.copytree(two_folders / "run-repo-a", folder)
    run_index.record_run(folder, time.time())
    old = [name for name in history_store.COLUMNS
           if name not in ("folder", "torch", "triton", "cuda", "driver", "clocks")]
    path = history_store.store_path()
    db = sqlite3.connect(path)
    stat = (folder / "results.json").stat()
    values = [getattr(row(1, 1e-5), name) for name in old]
    values[0] = str(folder.resolve())  # run_dir: the folder the old store read, up to date
    with db:
        db.execute(f"CREATE TABLE rows ({', '.join(f'{chr(34)}{n}{chr(34)}' for n in old)})")
        db.execute(f"INSERT INTO rows VALUES ({', '.join('?' * len(old))})", values)
        db.execute("CREATE TABLE folders (run_dir TEXT PRIMARY KEY, size INTEGER, mtime REAL)")
        db.execute("INSERT INTO folders VALUES (?, ?, ?)",
                   (values[0], stat.st_size, stat.st_mtime))
        db.execute("PRAGMA user_version = 1")
    db.close()
    db = history_store.connect_read_only()
    (before,) = history_store.read_rows(db)
    assert before.folder == "" and before.torch == ""
    assert history_store.families_of_many_folders(db) == set()
    db.close()
    db = history_store.connect()
    history_store.sync(db)
    rows = history_store.read_rows(db)
    db.close()
    assert rows and all(r.torch and r.folder.endswith(":pair") for r in rows)
    assert all(not math.isnan(r.median_s) for r in rows if r.timed)
