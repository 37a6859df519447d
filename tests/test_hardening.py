"""Hostile input, through the real command line on the CPU path: no traceback, the
documented exit code, what was measured kept on disk, and no process left behind."""

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import (
    FAST,
    REPO,
    TEST_KERNELS,
    start_gpubench,
    start_hanging_run,
    wait_for_worker_log,
)
from gpubench.run.lanes.processes import session_members

BAD_SPECS = REPO / "tests" / "badspecs"
pytestmark = pytest.mark.slow


def worker_sessions(run_dir: Path) -> list[int]:
    """The session ids of every worker the run started (each log's first line says)."""
    sessions = []
    for log in run_dir.glob("worker-*.log"):
        for line in log.read_text(errors="replace").splitlines():
            if line.startswith("[gpubench worker] pid"):
                sessions.append(int(line.rsplit(" ", 1)[-1]))
    return sessions


def assert_no_process_left(run_dir: Path, grace_s: float = 3.0) -> None:
    sessions = worker_sessions(run_dir)
    assert sessions, f"no worker log in {run_dir}"
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and any(session_members(s) for s in sessions):
        time.sleep(0.1)
    left = {s: session_members(s) for s in sessions if session_members(s)}
    assert not left, f"processes left in worker sessions: {left}"


@pytest.fixture
def env(build_cache):
    return {**os.environ, "GPUBENCH_CACHE_DIR": str(build_cache), "COLUMNS": "160",
            "GPUBENCH_TEST_HANG_S": "600"}


# ---------------------------------------------------------------- blame the right variant


def test_side_effects_are_blamed_on_their_variant_and_undone(gpubench):
    done = gpubench("run", "hostile", "--kernels-dir", str(TEST_KERNELS), *FAST,
                    "--out", "run")
    assert done.code == 1, done.output
    rows = done.by_variant(done.cwd / "run")
    status = {v: r["status"] for v, r in rows.items()}
    assert status == {"torch": "ok", "mutates": "fail", "after_mutates": "ok",
                      "resizes": "fail", "after_resizes": "ok", "threads": "fail",
                      "after_threads": "ok", "forges": "error", "garbage": "error",
                      "after_garbage": "ok", "spawns": "ok", "chatters": "ok"}, done.output
    assert "mutated its input x" in rows["mutates"]["error"]
    assert "resized or replaced the output buffer" in rows["resizes"]["error"]
    assert "changed torch global state: num_threads" in rows["threads"]["error"]
    assert re.search(r"num_threads (\d+)→(?!\1\b)\d+", rows["threads"]["error"])
    for name in ("forges", "garbage"):
        assert "private result channel" in rows[name]["error"], rows[name]["error"]
        assert rows[name]["median_s"] is None and rows[name]["speedup_vs_baseline"] is None
    assert "Traceback" not in done.output
    assert_no_process_left(done.cwd / "run")  # the `sleep` the spawner started included
    leftover = subprocess.run(["pgrep", "-f", "sleep 3137"], capture_output=True, text=True)
    assert leftover.stdout.strip() == ""
    # 8 MiB printed by `chatters`: the worker log keeps its head and tail, 5 MiB at most
    logs = list((done.cwd / "run").glob("worker-*.log"))
    assert max(log.stat().st_size for log in logs) < 5.2 * 2**20
    assert any("bytes of worker output left out" in log.read_text(errors="replace")
               for log in logs)


def test_a_variant_that_leaves_the_worker_unfit_is_blamed_not_the_next(gpubench):
    done = gpubench("run", "unhealthy", "--kernels-dir", str(TEST_KERNELS), *FAST,
                    "--out", "run")
    assert done.code == 1, done.output
    rows = done.by_variant(done.cwd / "run")
    status = {v: r["status"] for v, r in rows.items()}
    assert status == {"torch": "ok", "closes_fds": "fail", "after_closes_fds": "ok",
                      "forks": "fail", "after_forks": "ok", "daemonizes": "ok",
                      "after_daemonizes": "ok", "signals_gpubench": "fail",
                      "after_signals": "ok"}, done.output
    assert "closed or replaced descriptor 1 (stdout), 2 (stderr)" in rows["closes_fds"]["error"]
    assert "forked the worker process and left 1 copy behind" in rows["forks"]["error"]
    assert "tried to send SIGTERM to gpubench" in rows["signals_gpubench"]["error"]
    assert "Traceback" not in done.output
    assert_no_process_left(done.cwd / "run")
    # `setsid -f sleep` left a helper in a session of its own: the worker was its
    # subreaper, and the worker restarted (killing it) before the next variant
    leftover = subprocess.run(["pgrep", "-f", "sleep 3138"], capture_output=True, text=True)
    assert leftover.stdout.strip() == ""
    assert any("left 1 process(es) behind" in log.read_text(errors="replace")
               for log in (done.cwd / "run").glob("worker-*.log"))


def test_make_inputs_breaking_its_contract_says_what_to_return(gpubench):
    done = gpubench("run", "badinputs", "--kernels-dir", str(TEST_KERNELS), *FAST)
    assert done.code == 1, done.output
    error = done.by_variant()["torch"]["error"]
    assert "make_inputs returned input 0 as float64 for a float32 point" in error
    assert "floating ones in the given dtype" in error and "Traceback" not in done.output


# ---------------------------------------------------------------- signals and processes


def test_sigterm_writes_what_was_measured_and_leaves_no_process(tmp_path, env):
    run_dir = tmp_path / "run"
    process = start_hanging_run(run_dir, tmp_path, env)
    wait_for_worker_log(run_dir, "faulty/hang")
    time.sleep(1.0)  # inside hang() now
    process.send_signal(signal.SIGTERM)
    output, _ = process.communicate(timeout=60)
    assert process.returncode == 143, output
    status = {r["variant"]: r["status"]
              for r in json.loads((run_dir / "results.json").read_text())["results"]}
    assert status == {"torch": "ok", "hang": "not_run"}
    assert "stopped by SIGTERM" in output and "Traceback" not in output
    assert_no_process_left(run_dir)


def test_kill_9_of_gpubench_takes_its_worker_with_it(tmp_path, env):
    run_dir = tmp_path / "run"
    process = start_hanging_run(run_dir, tmp_path, env)
    wait_for_worker_log(run_dir, "faulty/hang")
    process.kill()
    process.communicate(timeout=30)
    # the worker's watchdog notices within half a second; allow for a loaded machine
    assert_no_process_left(run_dir, grace_s=10.0)
    # the group in progress was saved before: results.json holds the finished baseline
    assert (run_dir / "results.json").is_file()


def test_build_timeout_kills_the_compilers_too(gpubench):
    done = gpubench("run", "slowbuild", "--kernels-dir", str(TEST_KERNELS), "--device", "cpu",
                    "--build-timeout", "3", *FAST, "--out", "run")
    assert done.code == 1, done.output
    rows = done.by_variant(done.cwd / "run")
    assert rows["slow"]["status"] == "timeout" and rows["torch"]["status"] == "ok"
    assert_no_process_left(done.cwd / "run")
    compilers = subprocess.run(["pgrep", "-f", "gb_slowbuild"], capture_output=True, text=True)
    assert compilers.stdout.strip() == "", compilers.stdout


def test_repeated_ctrl_c_during_a_build_leaves_no_compiler(tmp_path, env):
    env = {**env, "GPUBENCH_CACHE_DIR": str(tmp_path / "cache")}  # a build from scratch
    run_dir = tmp_path / "run"
    process = start_gpubench(["run", "slowbuild", "--kernels-dir", str(TEST_KERNELS),
                              "--device", "cpu", "--build-timeout", "300", *FAST,
                              "--out", str(run_dir)], tmp_path, env)
    deadline = time.monotonic() + 180
    while not _compilers(str(tmp_path)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _compilers(str(tmp_path)), "the build never started"
    for _ in range(3):  # ~60 ms apart: the second lands in the first one's clean-up
        process.send_signal(signal.SIGINT)
        time.sleep(0.06)
    output, _ = process.communicate(timeout=60)
    assert process.returncode == 130, output
    time.sleep(1.0)
    assert not _compilers(str(tmp_path)), "compilers outlived the run"
    assert_no_process_left(run_dir)


def _compilers(marker: str) -> list[str]:
    found = subprocess.run(["pgrep", "-f", f"cc1plus.*{marker}"], capture_output=True,
                           text=True)
    return found.stdout.split()


def test_a_killed_save_leaves_nothing_a_forced_run_keeps(gpubench):
    first = gpubench("run", "vector_add", "--variants", "torch", "--sizes", "256", *FAST,
                     "--out", "run")
    assert first.code == 0, first.output
    stale = first.cwd / "run" / ".results.json.x1y2z3.tmp"
    stale.write_text("")  # what kill -9 between mkstemp and the write leaves
    forced = gpubench("run", "vector_add", "--variants", "torch", "--sizes", "256", *FAST,
                      "--out", "run", "--force")
    assert forced.code == 0, forced.output
    assert not stale.exists()
    assert sorted(p.name for p in (forced.cwd / "run").iterdir() if p.name.endswith(".tmp")) \
        == []


# ---------------------------------------------------------------- results never lost


def test_a_run_folder_is_not_shared_or_silently_reused(gpubench, tmp_path, env):
    first = gpubench("run", "vector_add", "--variants", "torch", "--sizes", "256", *FAST,
                     "--out", "same")
    assert first.code == 0, first.output
    again = gpubench("run", "vector_add", "--variants", "torch", "--sizes", "256", *FAST,
                     "--out", "same")
    assert again.code == 2 and "already holds a run's results; pass --force" in again.stderr
    forced = gpubench("run", "vector_add", "--variants", "torch", "--sizes", "512", *FAST,
                      "--out", "same", "--force")
    assert forced.code == 0, forced.output
    assert forced.results(forced.cwd / "same")["results"][0]["shape"] == {"n": 512}
    # two runs at once into one folder: the second is refused while the first runs
    busy = start_hanging_run(tmp_path / "busy", tmp_path, env)
    try:
        wait_for_worker_log(tmp_path / "busy", "faulty/hang")
        second = gpubench("run", "vector_add", "--variants", "torch", "--sizes", "256", *FAST,
                          "--out", str(tmp_path / "busy"), "--force")
        assert second.code == 2 and "another gpubench run (pid" in second.stderr
    finally:
        busy.send_signal(signal.SIGINT)
        busy.communicate(timeout=60)


def test_a_run_folder_pulled_away_mid_run_loses_nothing(gpubench, tmp_path):
    # The variant stands in for whatever removes the folder outside gpubench: the worker's
    # sandbox (run/worker/sandbox.py) would refuse it the write, so it is off here.
    # TMPDIR in the test's folder: the rescue folder is kept for the user, so it must not
    # pile up in the machine's /tmp, one per suite run.
    temp = tmp_path / "temp"
    temp.mkdir()
    done = gpubench("run", "sabotage", "--kernels-dir", str(TEST_KERNELS), *FAST,
                    "--out", "run", env={"GPUBENCH_TEST_SABOTAGE": "run",
                                         "GPUBENCH_SANDBOX": "0", "TMPDIR": str(temp)})
    assert done.code == 12, done.output
    assert "could not write results to run" in done.stderr + done.stdout
    rescue = Path(done.output.split("everything measured is in ")[1].split()[0].rstrip(";."))
    assert rescue.parent == temp
    rows = json.loads((rescue / "results.json").read_text())["results"]
    assert [(r["variant"], r["shape"]["n"], r["status"]) for r in rows] == [
        ("torch", 64, "ok"), ("sabotage", 64, "ok"), ("torch", 128, "ok"),
        ("sabotage", 128, "ok")]
    assert "Traceback" not in done.output


@pytest.mark.parametrize("args, code, message", [
    (["--timeout", "nan"], 2, "Invalid value for '--timeout': 'nan' is not a finite number"),
    (["--max-time", "nan"], 2, "Invalid value for '--max-time': 'nan' is not a finite number"),
    (["--min-time", "400", "--max-time", "5"], 2, "(400 ms) exceeds --max-time"),
    (["--min-samples", "50", "--max-samples", "5"], 2, "(50) exceeds --max-samples"),
    (["--out", ""], 2, "needs a folder name"),
    (["--out", "afile/run"], 12, "cannot write results to afile/run"),
])
def test_bad_settings_and_folders_are_refused_with_the_reason(gpubench, tmp_path, args, code,
                                                              message):
    (tmp_path / "afile").write_text("a file where --out wants a folder\n")
    done = gpubench("run", "vector_add", "--variants", "torch", "--sizes", "256", *args)
    assert done.code == code, done.output
    assert message in done.stderr and "Traceback" not in done.output


@pytest.mark.parametrize("text, message", [
    ("[timing]\nwarmup_ms = nan\n", "key 'timing.warmup_ms': expected a finite number"),
    ("[timing]\ntimeout_s = 0.001\n", "key 'timing.timeout_s': expected a number >= 1"),
    ("[timing]\nmin_time_ms = 400\nmax_time_ms = 5\n", "[timing]: --min-time/min_time_ms"),
    ("[sizes]\nsqaure = [1024]\n", "there is no family 'sqaure' (did you mean: square?)"),
    ("kernels_dirs = ['nowhere']\n", "key 'kernels_dirs': no such folder"),
])
def test_bad_suite_files_exit_3_naming_file_and_key(gpubench, tmp_path, text, message):
    suite = tmp_path / "suite.toml"
    suite.write_text('families = ["square"]\n' + text)
    done = gpubench("run", "--config", str(suite))
    assert done.code == 3, done.output
    assert "suite.toml" in done.stderr and message in done.stderr, done.stderr


# ---------------------------------------------------------------- spec files


@pytest.mark.parametrize("family, message", [
    ("exits", "called os._exit(3) while being imported"),
    ("loops", "did not finish importing within 2 s"),
])
def test_specs_that_exit_or_hang_are_reported_not_obeyed(gpubench, family, message):
    for command in (["run", family], ["list"]):
        done = gpubench(*command, "--kernels-dir", str(BAD_SPECS),
                        env={"GPUBENCH_SPEC_TIMEOUT_S": "2"}, timeout=120)
        assert done.code == 4, done.output
        flat = " ".join(done.output.replace("│", " ").split())  # `list` wraps table cells
        assert family in flat and message.split(" within")[0] in flat, done.output
        assert "Traceback" not in done.output


# ---------------------------------------------------------------- leftovers, in-process


def test_a_subreaper_kills_a_child_that_left_its_session():
    code = ("import subprocess, sys, time\n"
            "from gpubench.run.lanes.processes import become_subreaper, descendants, kill_tree\n"
            "assert become_subreaper()\n"
            "subprocess.run(['setsid', '-f', 'sleep', '3139'], check=True)\n"
            "time.sleep(0.3)\n"
            "assert descendants(__import__('os').getpid()), 'the orphan was not adopted'\n"
            "print(kill_tree(__import__('os').getpid()))\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0 and done.stdout.strip() == "1", done.stdout + done.stderr
    time.sleep(0.3)
    left = subprocess.run(["pgrep", "-f", "sleep 3139"], capture_output=True, text=True)
    assert left.stdout.strip() == ""


def test_a_run_folder_keeps_no_lock_file_once_released(tmp_path):
    from gpubench.errors import UsageError
    from gpubench.store.folder import LOCK_NAME, RunFolder

    first = RunFolder(tmp_path / "run").claim()
    assert (tmp_path / "run" / LOCK_NAME).exists()
    with pytest.raises(UsageError, match="another gpubench run"):
        RunFolder(tmp_path / "run").claim()
    first.release()
    assert not (tmp_path / "run" / LOCK_NAME).exists()
    again = RunFolder(tmp_path / "run").claim()  # free again, on a new lock file
    again.release()
    assert list((tmp_path / "run").iterdir()) == []


def test_build_locks_leave_no_file_behind(tmp_path):
    from gpubench.build.cache import build_lock

    path = tmp_path / "x.flock"
    for _ in range(3):
        with build_lock(path, 5.0):
            assert path.exists()
        assert not path.exists()
