"""The history store: every recorded run's rows in one SQLite file a team can query.

SQLite from the standard library: one file, no server, safe for several readers and a
writer, and `sqlite3 history.sqlite` or pandas read it as it is. (DuckDB would scan
millions of rows faster; a year of nightly runs of a dozen families is ~10^5 rows, which
SQLite answers in milliseconds.)

The run folders stay the source of truth. The store sits beside the index of runs
(run_index.py), and is brought up to date from it: a folder whose results.json changed
since it was read (its size or mtime) is read again, a folder gone from disk has its rows
dropped. Each run updates it when it releases its folder (folder.py); `gpubench history`
updates it before it reads; `--rebuild` removes it (a damaged file too) and reads every
folder again. A store of an older schema (rows without the family folder's identity or the
software versions, schema 1) gets the new columns, empty, and every folder is read again
on the next sync, which fills them; read as it is (read-only), its rows read as of an
unknown folder and unknown versions. A store that cannot be written costs the history view
its freshness, never a run: a busy one (another process writes it) is waited for about a
second, then a run's rows are left for `history` to read from the folder; a read-only one
is read as it is."""

from __future__ import annotations

import math
import sqlite3
import time
from collections.abc import Iterable
from dataclasses import fields
from pathlib import Path

from gpubench.records.run import NewerSchema, RunDocument
from gpubench.records.series import HistoryRow, history_rows
from gpubench.store import run_index
from gpubench.store.results_file import RESULTS_JSON, read_run

STORE_NAME = "history.sqlite"
# 2: rows carry the family folder's identity and the software versions (issue 63).
SCHEMA = 2
COLUMNS = [f.name for f in fields(HistoryRow)]
QUOTED = ", ".join(f'"{name}"' for name in COLUMNS)  # 'commit' is an SQL keyword
# SQLite's types for HistoryRow's fields: text, real, and the one flag as an integer.
_TYPES = {"started": "REAL", "median_s": "REAL", "ci_low_s": "REAL", "ci_high_s": "REAL",
          "dirty": "INTEGER"}
# How long a statement waits for a store another process holds. A run's own writes take
# milliseconds, so a store busy for longer is held by something else: waiting more (sqlite's
# default here was 30 s) holds the end of every run, and `history`, without a word.
BUSY_WAIT_S = 1.0
BUSY, READ_ONLY = "busy", "read-only"


def store_path() -> Path:
    """Beside the index of runs: a test's own index has its own store."""
    return run_index.index_path().with_name(STORE_NAME)


def connect(path: Path | None = None, fresh: bool = False) -> sqlite3.Connection:
    """The store, its tables made on first use. A store of a newer schema is refused.
    `fresh`: the file is removed first (whatever it holds, a damaged file included), so
    the next sync reads every run folder again."""
    path = path or store_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    if fresh:
        path.unlink(missing_ok=True)
    db = sqlite3.connect(path, timeout=BUSY_WAIT_S)
    try:
        version = _version(db, path)
        columns = ", ".join(f'"{name}" {_TYPES.get(name, "TEXT")}' for name in COLUMNS)
        with db:  # no-ops on a store that has them, so a read-only store opens too
            db.execute("CREATE TABLE IF NOT EXISTS folders (run_dir TEXT PRIMARY KEY, "
                       "size INTEGER, mtime REAL)")
            db.execute(f"CREATE TABLE IF NOT EXISTS rows ({columns})")
            db.execute("CREATE INDEX IF NOT EXISTS rows_by_point ON rows "
                       "(family, variant, dtype, shape, mode)")
            if version != SCHEMA:  # a write: only where it changes something
                _upgrade(db)
                db.execute(f"PRAGMA user_version = {SCHEMA}")
    except BaseException:
        db.close()
        raise
    return db


def _upgrade(db: sqlite3.Connection) -> None:
    """An older store's rows table gets the columns it lacks (empty text), and every folder
    is marked for reading again (a size no file has), so the next sync fills them from the
    run folders; a folder gone from the index still has its rows dropped by that sync."""
    missing = [name for name in COLUMNS if name not in _present(db)]
    for name in missing:
        db.execute(f'ALTER TABLE rows ADD COLUMN "{name}" {_TYPES.get(name, "TEXT")} '
                   "DEFAULT ''")
    if missing:
        db.execute("UPDATE folders SET size = -1")


def _present(db: sqlite3.Connection) -> set[str]:
    """The columns the store's rows table has."""
    return {row[1] for row in db.execute("PRAGMA table_info(rows)")}


def connect_read_only(path: Path | None = None) -> sqlite3.Connection:
    """The store as it is, opened for reading only (SQLite's mode=ro): for a store whose
    file or folder refuses writes, which `connect` cannot prepare."""
    path = path or store_path()
    db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=BUSY_WAIT_S)
    try:
        _version(db, path)
    except BaseException:
        db.close()
        raise
    return db


def _version(db: sqlite3.Connection, path: Path) -> int:
    version = db.execute("PRAGMA user_version").fetchone()[0]
    if version > SCHEMA:
        raise NewerSchema(f"{path} was written by a newer gpubench (store schema {version})")
    return version


def unwritable(exc: sqlite3.Error) -> str | None:
    """BUSY or READ_ONLY where `exc` says the store cannot be written now (and reading it
    as it is can go on), None for any other failure (a damaged file, a missing table)."""
    name = getattr(exc, "sqlite_errorname", "")
    text = str(exc).lower()
    if name.startswith("SQLITE_BUSY") or "database is locked" in text:
        return BUSY
    if name.startswith("SQLITE_READONLY") or "readonly database" in text:
        return READ_ONLY
    return None


def ingest(db: sqlite3.Connection, folder: Path, document: RunDocument | None = None) -> int:
    """The folder's rows, replacing what the store held of it; how many. `document`: the
    folder's results.json as saved, when the caller holds it (not parsed again). A folder
    without readable results has its rows dropped."""
    run_dir = str(folder.resolve())
    results = folder / RESULTS_JSON
    try:
        stat = results.stat()
        rows = history_rows(document or read_run(folder), run_dir)
    except (OSError, ValueError):
        forget(db, run_dir)
        return 0
    with db:
        db.execute("DELETE FROM rows WHERE run_dir = ?", (run_dir,))
        db.executemany(f"INSERT INTO rows VALUES ({', '.join('?' * len(COLUMNS))})",
                       [_values(row) for row in rows])
        db.execute("INSERT OR REPLACE INTO folders VALUES (?, ?, ?)",
                   (run_dir, stat.st_size, stat.st_mtime))
    return len(rows)


def forget(db: sqlite3.Connection, run_dir: str) -> None:
    with db:
        db.execute("DELETE FROM rows WHERE run_dir = ?", (run_dir,))
        db.execute("DELETE FROM folders WHERE run_dir = ?", (run_dir,))


def sync(db: sqlite3.Connection, folders: Iterable[Path] | None = None) -> int:
    """Bring the store up to date with the run folders (default: the index's); the number
    of folders read."""
    if folders is None:
        folders = [entry.folder for entry in run_index.read_index()]
    known = {run_dir: (size, mtime) for run_dir, size, mtime in
             db.execute("SELECT run_dir, size, mtime FROM folders")}
    wanted, read = set(), 0
    for folder in folders:
        run_dir = str(folder.resolve())
        wanted.add(run_dir)
        stat = _stat(folder)
        if stat is not None and known.get(run_dir) == stat:
            continue
        ingest(db, folder)
        read += 1
    for run_dir in set(known) - wanted:  # gone from the index: its folder was dropped
        forget(db, run_dir)
    return read


def record_quietly(folder: Path, document: RunDocument | None = None) -> str | None:
    """A run's rows into the store as it ends (folder.py): a store that cannot be written
    (a read-only cache, a locked file) costs `history` nothing it cannot read again. A busy
    store is waited for BUSY_WAIT_S at most; the line returned says so, since `history`
    reads the run from its folder later (a read-only store is `history`'s to report)."""
    try:
        db = connect()
        try:
            ingest(db, folder, document)
        finally:
            db.close()
    except (sqlite3.Error, OSError, NewerSchema) as exc:
        if isinstance(exc, sqlite3.Error) and unwritable(exc) == BUSY:
            return ("not recorded in the history store (another process holds it); "
                    "`history` will pick the run up")
    return None


def read_rows(db: sqlite3.Connection, where: str = "", args: tuple = ()) -> list[HistoryRow]:
    """The store's rows (optionally a WHERE clause with ? arguments), oldest run first."""
    query = f"SELECT {_selected(db)} FROM rows {where} ORDER BY started, run_dir"
    return [HistoryRow(*_decoded(values)) for values in db.execute(query, args)]


POINT = ("family", "variant", "dtype", "shape", "mode")  # rows_by_point's columns


def _selected(db: sqlite3.Connection) -> str:
    """COLUMNS as a SELECT list: an older store read as it is (read-only, not upgraded)
    lacks the newer text columns, read as '' (an unknown folder, unknown versions)."""
    present = _present(db)
    if all(name in present for name in COLUMNS):
        return QUOTED
    return ", ".join(f'"{name}"' if name in present else f"'' AS \"{name}\""
                     for name in COLUMNS)


def families_of_many_folders(db: sqlite3.Connection, family: str | None = None) -> set[str]:
    """The family names whose rows come from more than one known folder (`history` names
    the folder in those families' titles only); `family`: that one's rows alone, read
    through rows_by_point."""
    if "folder" not in _present(db):
        return set()
    where, args = ("WHERE family = ? AND", (family,)) if family else ("WHERE", ())
    query = (f"SELECT family FROM rows {where} folder != '' GROUP BY family "
             "HAVING COUNT(DISTINCT folder) > 1")
    return {name for (name,) in db.execute(query, args)}


def points_query(family: str | None) -> tuple[str, tuple]:
    """The SQL (and its arguments) of `points`: through rows_by_point, so a family's
    points are read from its range of the index, not from every row (issue 61)."""
    where, args = ("WHERE family = ?", (family,)) if family else ("", ())
    names = ", ".join(POINT)
    return (f"SELECT {names} FROM rows {where} GROUP BY {names} "
            f"ORDER BY MIN(started), {names}", args)


def points(db: sqlite3.Connection, family: str | None = None) -> list[tuple[str, ...]]:
    """Every point (family, variant, dtype, shape, mode) the store holds rows of, or one
    family's, in the order their first runs began: `history` reads them one at a time
    (point_rows), so a store of millions of rows is never in memory at once."""
    return [tuple(values) for values in db.execute(*points_query(family))]


def point_rows(db: sqlite3.Connection, point: tuple[str, ...]) -> list[HistoryRow]:
    """One point's rows, oldest run first (every series of the point: each GPU, method)."""
    return read_rows(db, "WHERE " + " AND ".join(f"{name} = ?" for name in POINT), point)


def _values(row: HistoryRow) -> tuple:
    return tuple(int(v) if isinstance(v, bool) else v for v in
                 (getattr(row, name) for name in COLUMNS))


def _decoded(values: tuple) -> tuple:
    """NULL reals (SQLite stores NaN as NULL) and any other non-number back to NaN, the
    flag back to a bool, a start time no clock can show as 0, unknown."""
    out = []
    for name, value in zip(COLUMNS, values, strict=True):
        if name == "started":
            value = known_time(value)
        elif _TYPES.get(name) == "REAL" and (
                not isinstance(value, int | float) or isinstance(value, bool)):
            value = float("nan")  # NULL, or text or a blob another tool wrote there
        elif name == "dirty":
            value = bool(value)
        out.append(value)
    return tuple(out)


def known_time(value) -> float:
    """Unix seconds a row's `started` can be shown and ordered by; 0 (unknown, shown '?')
    for NULL, NaN, inf or a time past the clock's range (1e308), which a store edited by
    hand or by another tool may hold and time.gmtime refuses."""
    if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value):
        return 0.0
    try:
        time.gmtime(value)
    except (OverflowError, OSError, ValueError):
        return 0.0
    return float(value)


def _stat(folder: Path) -> tuple[int, float] | None:
    try:
        stat = (folder / "results.json").stat()
    except OSError:
        return None
    return stat.st_size, stat.st_mtime
