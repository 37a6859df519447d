"""A fresh attack round on the surfaces issue 61 hardened, one test per finding: a
submodule's own clean filter ran under `git status` of its superproject, and a repository
another user owns, marked safe, ran its clean filter too; an existing output
file was renamed over whatever its mode said (a read-only file replaced, a private one made
0644); `tune --markdown` wrote a config's label raw into the table; `--workers 99999999999`
built a list of that many workers (the memory filled, the run hung); a local Dask cluster
killed with -9 left its scratch folder for good; a history store row whose time is inf (or
text) was a point of its series, and `history` a traceback; a run folder's report.html
that links out of it was written through; text in a store's time column was a traceback;
a 20 GB results.json was read whole."""

import math
import os
import stat
import subprocess
import time
from pathlib import Path

import pytest

from gpubench import errors
from gpubench.analysis.history import build_series
from gpubench.files import write_output
from gpubench.records.series import HistoryRow
from gpubench.report.tune_table import markdown as tune_markdown
from gpubench.run.lanes import scratch
from gpubench.run.lanes.lane import check_cpu_workers, cpu_slots
from gpubench.timing import git_reader
from gpubench.timing.revision import revision_of
from gpubench.tune.summary import TuneRow

IDENTITY = ["-c", "user.name=t", "-c", "user.email=t@t", "-c", "protocol.file.allow=always"]


def git(folder: Path, *args: str) -> str:
    return subprocess.run(["git", *IDENTITY, *args], cwd=folder, check=True,
                          capture_output=True, text=True).stdout.strip()


def repository(folder: Path, attributes: str = "") -> Path:
    folder.mkdir()
    git(folder, "init", "-q")
    (folder / "spec.py").write_text("x = 1\n")
    if attributes:
        (folder / ".gitattributes").write_text(attributes)
    git(folder, "add", ".")
    git(folder, "commit", "-qm", "one")
    return folder


# ---------------------------------------------------------------- git


def test_a_submodules_clean_filter_runs_nothing(tmp_path):
    """The family's repository holds a submodule whose own config names a clean filter
    for its files; a file there whose stat changed makes `git status` in the submodule
    run that filter. Recording the family's revision must not."""
    source = repository(tmp_path / "source", attributes="* filter=evil\n")
    family = repository(tmp_path / "family")
    git(family, "submodule", "add", "-q", str(source), "sub")
    git(family, "commit", "-qm", "sub")
    marker = tmp_path / "marker"
    script = tmp_path / "evil.sh"
    script.write_text(f"#!/bin/sh\ntouch {marker}\ncat\n")
    script.chmod(0o755)
    git(family / "sub", "config", "filter.evil.clean", str(script))
    later = time.time() + 10
    os.utime(family / "sub" / "spec.py", (later, later))  # the index's stat no longer matches
    revision = revision_of(family)
    assert revision.commit and not marker.exists()
    # a submodule moved to another commit still makes the family dirty (read from its HEAD)
    git(family / "sub", "-c", "core.fsmonitor=false", "commit", "-q", "--allow-empty",
        "-m", "moved")
    marker.unlink(missing_ok=True)
    assert revision_of(family).dirty and not marker.exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="giving the folder to another user needs root")
def test_a_foreign_repository_marked_safe_runs_no_filter(tmp_path, monkeypatch):
    """A family folder another user owns, in a CI container whose global config says
    `safe.directory = *`: the filters were listed without that entry (git skipped the
    repository's config), the status ran with it (git read the config, ran the filter)."""
    family = repository(tmp_path / "family", attributes="* filter=evil\n")
    marker = tmp_path / "marker"
    script = tmp_path / "evil.sh"
    script.write_text(f"#!/bin/sh\ntouch {marker}\ncat\n")
    script.chmod(0o755)
    git(family, "config", "filter.evil.clean", str(script))
    later = time.time() + 10
    os.utime(family / "spec.py", (later, later))
    for path in [family, *family.rglob("*")]:
        os.lchown(path, 65534, 65534)
    monkeypatch.setattr(git_reader, "_safe_directories", lambda: ("*",))
    assert revision_of(family).commit and not marker.exists()


# ---------------------------------------------------------------- output paths


def test_a_private_output_file_keeps_its_mode(tmp_path):
    path = tmp_path / "summary.md"
    path.write_text("old")
    path.chmod(0o600)
    write_output(path, "new", mode=0o644)  # compare --markdown and report -o pass 0644
    assert path.read_text() == "new"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    new = tmp_path / "new.md"
    write_output(new, "made", mode=0o644)  # a new file takes the mode asked for
    assert stat.S_IMODE(new.stat().st_mode) == 0o644


def test_a_read_only_output_file_is_refused_not_renamed_over(tmp_path, monkeypatch):
    """A file the user may not write: `>` refuses it; a rename would replace it (a rename
    needs only the folder's permission). As root every file is writable, so os.access
    stands in for a user's view."""
    path = tmp_path / "keep.md"
    path.write_text("precious")
    path.chmod(0o444)
    inode = path.stat().st_ino
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, how, **kw: False if Path(p) == path
                        else real_access(p, how, **kw))
    with pytest.raises(PermissionError):
        write_output(path, "new")
    assert path.read_text() == "precious" and path.stat().st_ino == inode
    assert [p.name for p in tmp_path.iterdir()] == ["keep.md"]  # no temporary file left


def test_read_only_output_is_exit_12_on_the_command_line(tmp_path, monkeypatch):
    from gpubench.commands import history

    path = tmp_path / "keep.md"
    path.write_text("precious")
    monkeypatch.setattr(os, "access", lambda p, how, **kw: False)
    with pytest.raises(errors.OutputError) as caught:
        history._write(path, "text")
    assert caught.value.exit_code == errors.EXIT_OUTPUT
    assert "Permission denied" in str(caught.value)


def test_a_run_folders_report_link_is_not_followed_out_of_it(tmp_path):
    """A run folder from elsewhere (a CI artifact, a colleague's tarball) whose report.html
    is a symlink: `gpubench report RUN` (and `run --out RUN --force --report`) wrote the
    page into the link's target, a file outside every folder of the run's."""
    from test_compare import noisy, result, run_of

    from gpubench.store.folder import read_run, save_run
    from gpubench.store.report_page import write_report

    folder = tmp_path / "theirs"
    save_run(run_of(result("a", noisy(1e-3))), folder)
    victim = tmp_path / "victim.txt"
    victim.write_text("the user's own file")
    (folder / "report.html").symlink_to(victim)
    write_report([(str(folder), read_run(folder))], None)
    assert victim.read_text() == "the user's own file"


# ---------------------------------------------------------------- markdown exports


def test_tune_markdown_cells_are_markdown_safe():
    row = TuneRow(index=0, label="MODE=a|b\n<!-- hide the rest", status="PASS", mark="best",
                  median_s=1e-3, ci_low_s=0.9e-3, ci_high_s=1.1e-3, ratio=1.0, samples=10,
                  rounds=2, registers=None, shared_bytes=None, occupancy=None, note="")
    text = tune_markdown([row])
    lines = text.splitlines()
    assert len(lines) == 3  # the header, the rule, one row: nothing split it
    assert "<!--" not in text
    assert lines[2].count(" | ") == lines[0].count(" | ")


# ---------------------------------------------------------------- numeric options


def test_absurd_worker_counts_are_usage_errors():
    cores = os.cpu_count() or 1
    with pytest.raises(errors.UsageError, match="--workers 99999999999"):
        cpu_slots(99_999_999_999)
    with pytest.raises(errors.UsageError, match="--workers"):
        check_cpu_workers(cores + 1)
    assert len(cpu_slots(cores)) == cores


def test_local_cluster_refuses_absurd_workers_before_making_anything(tmp_path, monkeypatch):
    from gpubench.run.cluster.lanes import Cluster

    monkeypatch.setattr(scratch.tempfile, "tempdir", str(tmp_path))
    cluster = Cluster("local", "cpu", cpu_workers=99_999_999_999)
    with pytest.raises(errors.UsageError, match="--workers"):
        cluster.launch_workers()
    assert list(tmp_path.iterdir()) == [] and cluster.workers is None


@pytest.mark.slow
def test_absurd_workers_on_the_command_line_is_exit_2(gpubench):
    done = gpubench("run", "square", "--device", "cpu", "--workers", "99999999999",
                    "--warmup", "2", "--min-time", "5", "--max-time", "20", timeout=60)
    assert done.code == 2, done.output
    assert "Traceback" not in done.output and "--workers 99999999999" in done.stderr


# ---------------------------------------------------------------- the history store


def history_row(index: int, median) -> HistoryRow:
    return HistoryRow(f"/runs/{index}", f"run{index}", 1.7e9 + index * 60, "square", "torch",
                      "float32", "n=1024", "cold", "ok", median, 0.9e-3, 1.1e-3, "cpu", "host")


@pytest.mark.parametrize("median", [math.inf, -math.inf, "abc", b"\x00", True])
def test_a_stored_time_that_is_no_finite_number_is_no_point(median):
    """A store edited by hand or by another tool: an inf time reached the change-point
    search (numpy's argmin of an empty sequence), a text time `>` (both tracebacks)."""
    assert history_row(0, 1e-3).timed
    assert not history_row(0, median).timed
    rows = [history_row(i, 1e-3 * (1 + (i >= 6))) for i in range(12)] + [history_row(12, median)]
    series = build_series(rows)
    assert [len(one.timed) for one in series] == [12]


def test_a_stored_interval_that_is_text_is_unknown(tmp_path):
    """A hand-edited store's ci_low_s 'x' reached fmt.duration: `history` a traceback."""
    from gpubench.store import history_store

    path = tmp_path / "history.sqlite"
    db = history_store.connect(path)
    values = [getattr(history_row(0, 1e-3), name) for name in history_store.COLUMNS]
    values[history_store.COLUMNS.index("ci_low_s")] = "x"
    values[history_store.COLUMNS.index("ci_high_s")] = b"\x00"
    with db:
        db.execute(f"INSERT INTO rows VALUES ({', '.join('?' * len(values))})",
                   [int(v) if isinstance(v, bool) else v for v in values])
    (row,) = history_store.read_rows(db)
    db.close()
    assert math.isnan(row.ci_low_s) and math.isnan(row.ci_high_s)


# ---------------------------------------------------------------- disk left behind


def test_a_killed_local_clusters_scratch_folder_is_swept(tmp_path, monkeypatch):
    from gpubench.run.cluster.lanes import DASK_PREFIX

    monkeypatch.setattr(scratch.tempfile, "tempdir", str(tmp_path))
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = tmp_path / f"{DASK_PREFIX}{dead.pid}-1-abcd1234"
    (stale / "dask-scratch-space").mkdir(parents=True)
    older = tmp_path / f"{DASK_PREFIX}abcd1234"  # an older gpubench's: no owner named
    older.mkdir()
    log_folder = tmp_path / "gpubench-dask"  # dask_remote's log folder
    log_folder.mkdir()
    made = Path(scratch.owned_dir(DASK_PREFIX))
    assert not stale.exists() and older.exists() and log_folder.exists()
    assert made.name.startswith(f"{DASK_PREFIX}{os.getpid()}-")
    assert scratch.owner(made, DASK_PREFIX)[0] == os.getpid()
    assert scratch.sweep_stale_scratch(tmp_path, DASK_PREFIX) == []  # its owner lives


def test_a_results_file_past_any_run_s_size_is_refused_unread(tmp_path):
    """A sparse 20 GB results.json (a corrupt artifact) is refused by its size, with the
    path and the size, before a byte is read: no MemoryError, no traceback."""
    from gpubench.errors import UsageError
    from gpubench.store.results_file import MAX_RESULTS_BYTES, read_run

    huge = tmp_path / "results.json"
    with huge.open("wb") as sink:
        sink.truncate(MAX_RESULTS_BYTES + 1)
    with pytest.raises(UsageError) as caught:
        read_run(tmp_path)
    assert "not a readable run" in str(caught.value) and str(huge) in str(caught.value)
