"""The history store under trouble (issue 61): a store another process holds, start times
no clock can show, a store that refuses writes, and a --rebuild that cannot remove the path.
Each costs a line, never a run, a traceback, or a suggestion that leads back to itself."""

from __future__ import annotations

import math
import os
import shutil
import sqlite3
import time

import pytest
from rich.console import Console

from gpubench import errors
from gpubench.analysis.history import build_series
from gpubench.commands import history
from gpubench.report.history_page import history_spec
from gpubench.report.history_view import series_lines
from gpubench.store import history_store, run_index
from gpubench.store.folder import RunFolder
from tests.conftest import FIXTURES

SOURCE = FIXTURES / "compare" / "h200-processes"


@pytest.fixture
def runs(tmp_path, monkeypatch):
    """Two recorded run folders with an index and a store of their own."""
    monkeypatch.setenv("GPUBENCH_RUN_INDEX", str(tmp_path / "runs.json"))
    folders = []
    for name in ("run1", "run2"):
        shutil.copytree(SOURCE / name, tmp_path / name)
        run_index.record_run(tmp_path / name, time.time())
        folders.append(tmp_path / name)
    return folders


def shown(request: history.HistoryRequest) -> tuple[int, str]:
    console = Console(record=True, width=200)
    code = history.execute(request, console)
    return code, console.export_text()


def test_a_busy_store_costs_a_run_a_second_and_a_line(runs, capsys):
    history_store.connect().close()
    holder = sqlite3.connect(history_store.store_path(), isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        folder = RunFolder(runs[0])
        folder.indexed = True
        began = time.monotonic()
        folder.release()
        assert time.monotonic() - began < 2.5
        warning = capsys.readouterr().err
        assert "not recorded in the history store" in warning
        assert "`history` will pick the run up" in warning
        began = time.monotonic()
        with pytest.raises(errors.OutputError, match="try again") as caught:
            shown(history.HistoryRequest())
        assert time.monotonic() - began < 2.5 and "--rebuild" not in str(caught.value)
    finally:
        holder.rollback()
        holder.close()
    code, text = shown(history.HistoryRequest())  # free again: the run is picked up
    assert code == 0 and "series over 2 runs" in text


@pytest.mark.parametrize("started", [math.nan, 1e308, math.inf, -math.inf])
def test_a_start_time_no_clock_shows_reads_as_unknown(runs, started):
    db = history_store.connect()
    history_store.sync(db)
    with db:
        db.execute("UPDATE rows SET started = ?", (started,))
    rows = history_store.read_rows(db)
    db.close()
    assert rows and all(row.started == 0.0 for row in rows)
    series = build_series(rows)
    assert any(line.lstrip().startswith("?") for line in series_lines(series[0], 5))
    assert history_spec(series[0])  # the page's chart too
    code, _ = shown(history.HistoryRequest())
    assert code == 0


def test_a_read_only_store_is_read_without_syncing(runs, monkeypatch):
    shown(history.HistoryRequest())  # the store, synced with both runs

    def refused(*args, **kwargs):
        raise sqlite3.OperationalError("attempt to write a readonly database")

    monkeypatch.setattr(history_store, "connect", refused)  # as root, chmod stops nothing
    code, text = shown(history.HistoryRequest())
    assert code == 0 and "is read-only: shown as it is" in text
    assert "series over 2 runs" in text


def test_a_store_that_refuses_its_sync_is_read_as_it_is(runs, monkeypatch):
    shown(history.HistoryRequest())
    monkeypatch.setattr(history_store, "ingest", lambda *a, **k: (_ for _ in ()).throw(
        sqlite3.OperationalError("attempt to write a readonly database")))
    (runs[1] / "results.json").touch()  # changed: the sync would read it again
    os.utime(runs[1] / "results.json", (1, 1))
    code, text = shown(history.HistoryRequest())
    assert code == 0 and "read-only" in text and "series over 2 runs" in text


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes a 0444 file regardless")
def test_a_0444_store_is_read_without_syncing(runs):
    shown(history.HistoryRequest())
    history_store.store_path().chmod(0o444)
    os.utime(runs[1] / "results.json", (1, 1))
    code, text = shown(history.HistoryRequest())
    assert code == 0 and "read-only" in text


@pytest.mark.parametrize("rebuild", [True, False])
def test_a_folder_where_the_store_goes_says_move_it_not_rebuild(runs, rebuild):
    history_store.store_path().mkdir()
    with pytest.raises(errors.OutputError) as caught:
        shown(history.HistoryRequest(rebuild=rebuild))
    message = str(caught.value)
    assert "move or remove" in message and "--rebuild" not in message
    assert caught.value.exit_code == errors.EXIT_OUTPUT
