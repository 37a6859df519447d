"""`gpubench list`, `gpubench list FAMILY` and `gpubench runs` at 80 and 120 columns, against
golden text (regenerate: GPUBENCH_UPDATE_GOLDEN=1); and the index of runs behind `runs`
and `latest`.

`runs` is shown for run folders made here from recorded H200 runs
(tests/fixtures/compare/h200), recorded in a test's own index with fixed times, so the
golden is the same on every machine and day.
"""

from __future__ import annotations

import os
import shutil
import time

import pytest
from rich.console import Console

from conftest import REPO
from gpubench.commands import runs
from gpubench.commands.listing import print_summary
from gpubench.commands.listing_detail import family_views
from gpubench.commands.runs import RunsRequest
from gpubench.errors import UsageError
from gpubench.families.spec import Machine
from gpubench.store import run_index
from gpubench.store.folder import RunFolder, point_latest, resolve_run

GOLDEN = REPO / "tests" / "golden"
WIDTHS = [80, 120]
H200 = REPO / "tests" / "fixtures" / "compare" / "h200"
# A machine without a GPU, with Triton: every kind of verdict (yes, some dtypes only, no
# with a reason), the same on every machine the tests run on.
NO_GPU = Machine(has_cuda=False, has_triton=True, device_name="cpu")
DAY = 1795392000.0  # 2026-11-23 00:00 UTC


def recorded(width: int, show) -> str:
    with open(os.devnull, "w") as sink:
        console = Console(width=width, record=True, color_system=None, file=sink)
        show(console)
        return console.export_text()


def check_golden(text: str, name: str, width: int) -> None:
    golden = GOLDEN / name
    if os.environ.get("GPUBENCH_UPDATE_GOLDEN"):
        golden.write_text(text)
    assert text == golden.read_text()
    assert all(len(line) <= width for line in text.splitlines())


# ---------------------------------------------------------------- gpubench list


@pytest.mark.parametrize("width", WIDTHS)
def test_list_is_one_line_per_family(monkeypatch, width):
    monkeypatch.chdir(REPO)
    text = recorded(width, lambda console: print_summary(console, (), NO_GPU))
    check_golden(text, f"list_{width}.txt", width)
    lines = text.splitlines()
    families = [line for line in lines if line.split(" ")[0] in
                {"attention", "matmul", "softmax", "square", "vector_add", "sgemm"}]
    assert len(families) == 6 and len(lines) < 16
    assert "matmul      fp32 fp16 bf16       2  4 of 7" in text


@pytest.mark.parametrize("width", WIDTHS)
def test_list_family_shows_it_in_full(monkeypatch, width):
    monkeypatch.chdir(REPO)

    def show(console):
        views, broken = family_views(("matmul",), (), NO_GPU)
        assert not broken
        for view in views:
            console.print(view)

    text = recorded(width, show)
    check_golden(text, f"list_matmul_{width}.txt", width)
    flat = " ".join(text.replace("│", " ").split())
    for fact in ("kernels/matmul", "M rows of A and C; default 4096, 128 without a GPU",
                 "M=128 N=128 K=128; M=256 N=256 K=256", "variants: 4 of 7 run here",
                 "torch (base)", "fp32, fp16 only; bf16:", "no: fp16, bf16: needs",
                 "fills every axis"):
        assert fact in flat, fact
    if width >= 120:  # narrower, the reason wraps between the other columns' lines
        assert "no: on a CPU only when asked" in flat


def test_list_of_an_unknown_family_suggests_one():
    with pytest.raises(UsageError, match="matmul"):
        family_views(("matmull",), (), NO_GPU)


# ---------------------------------------------------------------- gpubench runs


@pytest.fixture
def runs_made(tmp_path, monkeypatch):
    """Four recorded H200 runs, one with --out outside profiles/, one deleted since;
    recorded at fixed times in this test's index; the clock shown in UTC."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GPUBENCH_RUN_INDEX", str(tmp_path / "index" / "runs.json"))
    monkeypatch.setenv("TZ", "UTC")
    time.tzset()
    made = {}
    for i, (fixture, folder, command) in enumerate([
            ("square-a2", "profiles/20261123-003006-square", "gpubench run square"),
            ("softmax-a1", "profiles/20261123-012939-softmax", "gpubench run softmax"),
            ("vadd-a2", "profiles/20261123-020000-vector_add", "gpubench run vector_add"),
            ("bind-o1", "ab/new", "gpubench run square vector_add --variants cuda --mode "
                                  "wall,cold --out ab/new")]):
        target = tmp_path / folder
        target.mkdir(parents=True)
        shutil.copy(H200 / fixture / "results.json", target / "results.json")
        run_index.record_run(target, DAY + 1800 * (i + 1), command)
        made[fixture] = target
    shutil.rmtree(made["vadd-a2"])
    yield made
    monkeypatch.delenv("TZ")
    time.tzset()


@pytest.mark.parametrize("width", WIDTHS)
def test_runs_lists_the_recorded_runs_newest_first(runs_made, width):
    text = recorded(width, lambda console: runs.execute(RunsRequest(), console))
    check_golden(text, f"runs_{width}.txt", width)
    lines = text.splitlines()
    assert lines[0].startswith("3 runs with results, newest first")
    assert lines[2].startswith("latest  ") and "16 PASS" in lines[2]
    assert lines[4].startswith("latest~2") and "run square" in lines[4]
    assert "1 recorded run skipped: its folder was deleted" in text
    # the folder, what compare and report take, is the last column dropped (issue 52: 120
    # columns hid it); the device goes before it
    assert "ab/new" in text and "profiles/20261123-003006-square" in text
    assert ("H200" in lines[2]) == (width > 80)


def test_latest_is_the_newest_recorded_run_wherever_it_is(runs_made, tmp_path):
    assert resolve_run("latest") == runs_made["bind-o1"].resolve()
    assert resolve_run("latest~1") == runs_made["softmax-a1"].resolve()
    assert resolve_run("latest~2") == runs_made["square-a2"].resolve()  # the deleted skipped
    with pytest.raises(UsageError, match="only 3 run"):
        resolve_run("latest~3")
    # from another folder too, and a folder's own 'latest' still works with base=
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.chdir(elsewhere)
    assert resolve_run("latest") == runs_made["bind-o1"].resolve()
    point_latest(tmp_path / "profiles", runs_made["square-a2"])
    assert resolve_run("latest", tmp_path / "profiles").name == "20261123-003006-square"


def test_no_index_falls_back_to_profiles_here(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GPUBENCH_RUN_INDEX", str(tmp_path / "none.json"))
    run = tmp_path / "profiles" / "20261123-003006-square"
    run.mkdir(parents=True)
    shutil.copy(H200 / "square-a2" / "results.json", run / "results.json")
    assert resolve_run("latest").resolve() == run.resolve()


def test_a_run_folder_is_recorded_once_at_its_first_save(tmp_path, monkeypatch):
    from gpubench.store.folder import read_run

    index = tmp_path / "runs.json"
    monkeypatch.setenv("GPUBENCH_RUN_INDEX", str(index))
    document = read_run(H200 / "square-a2")
    folder = RunFolder(tmp_path / "out").claim()
    assert run_index.read_index() == []  # claimed, nothing saved: no run yet
    folder.save(document)
    folder.save(document)
    folder.release()
    entries = run_index.read_index()
    assert [e.path for e in entries] == [str((tmp_path / "out").resolve())]
    assert entries[0].command.startswith("gpubench")
    # a damaged index reads as empty and is rewritten whole by the next run
    index.write_text("{not json")
    assert run_index.read_index() == []
    run_index.record_run(tmp_path / "out", 1.0, "gpubench run x")
    assert len(run_index.read_index()) == 1
