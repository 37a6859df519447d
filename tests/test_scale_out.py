"""Scale-out (issue 15): several workers at once (--workers, --devices) and Dask
(--cluster local) give the same points and statuses as one worker; a worker killed
mid-run costs only its point; no process outlives a run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from conftest import FAST, TEST_KERNELS, has_cuda, start_gpubench, wait_for_worker_log

# faulty's variants (wrong, segfaulting, raising, NaN) give every status but TIMEOUT
# ("caches" is left out: what it answers depends on what its process ran before)
# (hang is left out: it would hang), at two sizes: 10 points.
MIXED = ("run", "faulty", "--kernels-dir", str(TEST_KERNELS), "--sizes", "4096,8192",
         "--variants", "torch,wrong,segfault,raises,nan", *FAST, "--seed", "5")
pytestmark = pytest.mark.slow


def marked_env(build_cache: Path) -> tuple[dict, str]:
    """The environment of a gpubench run, with a mark every process it starts inherits."""
    mark = uuid.uuid4().hex
    return {**os.environ, "GPUBENCH_CACHE_DIR": str(build_cache), "COLUMNS": "160",
            "GPUBENCH_TEST_MARK": mark, "GPUBENCH_TEST_HANG_S": "600"}, mark


def processes_with(mark: str) -> list[str]:
    """Live processes whose environment carries the mark (zombies excluded)."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            if f"GPUBENCH_TEST_MARK={mark}".encode() not in (proc / "environ").read_bytes():
                continue
            if (proc / "stat").read_text().split(") ")[1].startswith("Z"):
                continue
            found.append(f"{proc.name}: {(proc / 'cmdline').read_bytes()[:120]!r}")
        except OSError:
            continue
    return found


def assert_nothing_left(mark: str, grace_s: float = 15.0) -> None:
    deadline = time.monotonic() + grace_s
    while processes_with(mark) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not processes_with(mark), processes_with(mark)


def run(args, cwd: Path, env: dict, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gpubench", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)


def statuses(run_dir: Path) -> dict[str, str]:
    results = json.loads((run_dir / "results.json").read_text())["results"]
    return {r["key"]: r["status"] for r in results}


def document(run_dir: Path) -> dict:
    return json.loads((run_dir / "results.json").read_text())


def test_two_cpu_workers_and_a_local_dask_cluster_match_one_worker(tmp_path, build_cache):
    pytest.importorskip("distributed")
    env, mark = marked_env(build_cache)
    one = run([*MIXED, "--out", str(tmp_path / "one")], tmp_path, env)
    two = run([*MIXED, "--workers", "2", "--out", str(tmp_path / "two")], tmp_path, env)
    dask = run([*MIXED, "--cluster", "local", "--workers", "2", "--out",
                str(tmp_path / "dask")], tmp_path, env)
    for done in (one, two, dask):
        assert done.returncode == 1, done.stdout + done.stderr  # faulty's variants fail
        assert "Traceback" not in done.stdout + done.stderr
    expected = statuses(tmp_path / "one")
    assert {"ok", "fail", "crashed", "error"} <= set(expected.values())
    assert statuses(tmp_path / "two") == expected
    assert statuses(tmp_path / "dask") == expected
    for name in ("two", "dask"):
        doc = document(tmp_path / name)
        measured_on = {r["device_id"] for r in doc["results"] if r["device_id"]}
        assert len(measured_on) == 2, measured_on  # both workers took points
        assert len(doc["env"]["devices"]) == 2
        assert doc["env"]["interference"]["shifts"], doc["env"]["interference"]
        assert "interference, 2 devices at once" in (two if name == "two" else dask).stdout
    # results keep the plan's order, whatever order the workers finished in
    assert list(statuses(tmp_path / "two")) == list(expected)
    # gpubench started the Dask workers itself (run/cluster/dask_local.py), no nanny; each lane is
    # named by its worker, known before the worker was up
    dask_log = (tmp_path / "dask" / "dask.log").read_text()
    assert dask_log.count("Start worker at:") == 2 and "Nanny" not in dask_log, dask_log
    assert {r["device_id"] for r in document(tmp_path / "dask")["results"]
            if r["device_id"]} == {"cpu0 cpu:0", "cpu1 cpu:0"}
    assert_nothing_left(mark)
    # Dask's scratch folder went to a temporary folder removed with the cluster
    assert not list(tmp_path.rglob("dask-scratch-space")), list(tmp_path.rglob("dask*"))


def worker_pid(root: Path, text: str) -> int:
    """The pid of the worker whose log shows `text`, once one does."""
    body = wait_for_worker_log(root, text)
    return int(body.split("[gpubench worker] pid ")[1].split()[0])


def parent_of(pid: int) -> int:
    return int(Path(f"/proc/{pid}/stat").read_text().split(") ")[1].split()[1])


HANGING = ("run", "faulty", "--kernels-dir", str(TEST_KERNELS), "--sizes", "4096,8192",
           "--variants", "torch,hang", *FAST, "--timeout", "8")


def test_a_cpu_worker_killed_mid_run_costs_only_its_point(tmp_path, build_cache):
    env, mark = marked_env(build_cache)
    out = tmp_path / "run"
    process = start_gpubench([*HANGING, "--workers", "2", "--out", str(out)], tmp_path, env)
    pid = worker_pid(out, "faulty/hang")
    time.sleep(0.5)  # inside hang() now
    os.kill(pid, signal.SIGKILL)
    output, _ = process.communicate(timeout=300)
    assert process.returncode == 1, output
    found = statuses(out)
    crashed = [k for k, s in found.items() if s == "crashed"]
    assert len(crashed) == 1 and "hang" in crashed[0], found
    assert "SIGKILL" in {r["key"]: r for r in document(out)["results"]}[crashed[0]]["error"]
    others = {k: s for k, s in found.items() if k not in crashed}
    # the other hang point times out (--timeout 8); every torch point passes
    assert sorted(others.values()) == ["ok", "ok", "timeout"], found
    assert_nothing_left(mark)


def test_a_dask_worker_lost_mid_run_has_its_point_requeued_once(tmp_path, build_cache):
    pytest.importorskip("distributed")
    env, mark = marked_env(build_cache)
    out = tmp_path / "run"
    args = [*HANGING, "--sizes", "4096", "--cluster", "local", "--workers", "2", "--out",
            str(out)]
    process = start_gpubench(args, tmp_path, env)
    pid = worker_pid(out, "faulty/hang")
    time.sleep(0.5)
    os.kill(parent_of(pid), signal.SIGKILL)  # the Dask worker process, gpubench's inside
    output, _ = process.communicate(timeout=300)
    assert process.returncode == 1, output
    found = statuses(out)
    # Re-queued on a worker again, where it hangs until --timeout: TIMEOUT, not CRASHED.
    assert sorted(found.values()) == ["ok", "timeout"], (found, output[-3000:])
    hang_logs = [p for p in out.rglob("worker-*.log") if "faulty/hang" in p.read_text()]
    assert len(hang_logs) == 2, hang_logs  # two attempts, in two Dask workers' folders
    assert_nothing_left(mark)


def hanging_local_cluster_run(tmp_path: Path, build_cache: Path):
    """(process, run folder, mark) of a `--cluster local` run whose faulty/hang point is
    running on a Dask worker now."""
    pytest.importorskip("distributed")
    env, mark = marked_env(build_cache)
    out = tmp_path / "run"
    process = start_gpubench([*HANGING, "--cluster", "local", "--workers", "2", "--out",
                              str(out)], tmp_path, env)
    worker_pid(out, "faulty/hang")
    time.sleep(0.5)  # inside hang() now
    return process, out, mark


def test_a_local_cluster_ends_with_a_killed_gpubench(tmp_path, build_cache):
    """kill -9 of gpubench mid-run: its Dask workers read their stdin from it, so they end
    at once, with their gpubench workers (with Dask's nannies they lived on for 40-100 s,
    until Dask noticed the scheduler gone)."""
    process, _, mark = hanging_local_cluster_run(tmp_path, build_cache)
    os.kill(process.pid, signal.SIGKILL)
    process.communicate(timeout=60)
    assert_nothing_left(mark, grace_s=5.0)


def test_ctrl_c_ends_a_local_cluster_run_without_waiting_for_its_point(tmp_path,
                                                                       build_cache):
    """Ctrl-C while a Dask worker runs a point that hangs: the results so far are saved and
    the point's gpubench worker is killed, not asked to stop (which waits up to 5 s)."""
    process, out, mark = hanging_local_cluster_run(tmp_path, build_cache)
    interrupted = time.monotonic()
    process.send_signal(signal.SIGINT)
    output, _ = process.communicate(timeout=60)
    assert process.returncode == 130, output
    assert time.monotonic() - interrupted < 4.0, output
    assert "interrupted (Ctrl-C)" in output and (out / "results.json").exists()
    assert_nothing_left(mark, grace_s=5.0)


@pytest.mark.parametrize("args, message", [
    (("--devices", "0"), "--devices needs CUDA GPUs"),
    (("--devices", "0", "--workers", "2"), "exclude each other"),
    (("--workers", "2", "--cluster", "tcp://127.0.0.1:1"), "--workers sizes a local cluster"),
])
def test_parallel_options_that_cannot_work_say_why(tmp_path, build_cache, args, message):
    if has_cuda():
        pytest.skip("on a GPU machine --devices 0 is valid")
    env, _ = marked_env(build_cache)
    done = run(["run", "square", "--sizes", "4096", *FAST, *args],
               tmp_path, env, timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    assert message in done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr


def test_an_unreachable_cluster_is_an_environment_error(tmp_path, build_cache):
    pytest.importorskip("distributed")
    env, mark = marked_env(build_cache)
    env["DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT"] = "3s"
    done = run(["run", "square", "--sizes", "4096", *FAST, "--cluster", "tcp://127.0.0.1:9"],
               tmp_path, env, timeout=180)
    assert done.returncode == 5, done.stdout + done.stderr
    assert "cannot reach a Dask scheduler" in done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    assert_nothing_left(mark)


@pytest.mark.gpu
def test_every_gpu_of_the_node_and_a_local_dask_cluster(tmp_path, build_cache):
    import torch

    if torch.cuda.device_count() < 2:
        pytest.skip("needs two GPUs")
    env, mark = marked_env(build_cache)
    base = ("run", "square", "vector_add", "--sizes", "2^20,2^24", "--seed", "1")
    for name, extra in (("all", ("--devices", "all")), ("dask", ("--cluster", "local"))):
        done = run([*base, *extra, "--out", str(tmp_path / name)], tmp_path, env)
        assert done.returncode == 0, done.stdout + done.stderr
        doc = document(tmp_path / name)
        assert all(r["status"] == "ok" for r in doc["results"])
        assert len({r["device_id"] for r in doc["results"]}) == torch.cuda.device_count()
        uuids = {d.get("gpu_uuid") for d in doc["env"]["devices"]}
        assert len(uuids) == torch.cuda.device_count() and all(uuids), doc["env"]["devices"]
        assert doc["env"]["interference"]["shifts"]
    assert_nothing_left(mark)


def test_a_local_dask_cluster_listens_on_loopback_and_logs_to_the_run_folder(
        tmp_path, build_cache):
    """Issue 26: Dask's comms have no authentication, so a local cluster binds 127.0.0.1
    only (scheduler, nannies, workers, their HTTP servers); its INFO lines go to
    dask.log in the run folder, not amid the tables."""
    pytest.importorskip("distributed")
    import re

    env, mark = marked_env(build_cache)
    out = tmp_path / "run"
    done = run(["run", "square", "--sizes", "4096", *FAST, "--cluster", "local",
                "--workers", "2", "--out", str(out)], tmp_path, env)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "distributed." not in done.stdout + done.stderr
    log = (out / "dask.log").read_text()
    assert "Scheduler at:" in log and log.count("Start worker at:") == 2, log
    addresses = re.findall(r"(?:at|to):\s+'?(?:\w+://)?([^\s:']+):\d+", log)
    assert len(addresses) >= 7, log  # scheduler, dashboard, 2 nannies, 2 workers, ...
    assert set(addresses) == {"127.0.0.1"}, addresses
    assert "DASK_LOGGING" not in os.environ
    assert_nothing_left(mark)


def test_a_tls_cluster_without_tls_settings_says_which_to_set(tmp_path, build_cache):
    pytest.importorskip("distributed")
    env, mark = marked_env(build_cache)
    done = run(["run", "square", "--sizes", "4096", *FAST, "--cluster", "tls://127.0.0.1:9"],
               tmp_path, env, timeout=180)
    assert done.returncode == 5, done.stdout + done.stderr
    assert "distributed.comm.tls.ca-file" in done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    assert_nothing_left(mark)


def test_a_remote_cluster_over_mutual_tls(tmp_path, build_cache):
    """A scheduler and a worker that accept TLS clients with a certificate only: gpubench
    connects with Dask's TLS settings (guide, "Security"), and plain tcp:// is refused."""
    pytest.importorskip("distributed")
    import shutil
    import socket

    if shutil.which("openssl") is None:
        pytest.skip("needs the openssl command to make a certificate")
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout",
                    str(key), "-out", str(cert), "-days", "1", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env, mark = marked_env(build_cache)
    tls = ["--tls-ca-file", str(cert), "--tls-cert", str(cert), "--tls-key", str(key)]
    dask = [sys.executable, "-m"]
    local = ["--dashboard-address", "127.0.0.1:0"]
    started = [subprocess.Popen([*dask, "distributed.cli.dask_scheduler", "--protocol",
                                 "tls", "--host", "127.0.0.1", "--port", str(port), *local,
                                 *tls], env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL),
               subprocess.Popen([*dask, "distributed.cli.dask_worker",
                                 f"tls://127.0.0.1:{port}", "--nthreads", "1", "--host",
                                 "127.0.0.1", *local, *tls], env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    try:
        client_env = {**env, "DASK_DISTRIBUTED__COMM__TLS__CA_FILE": str(cert),
                      "DASK_DISTRIBUTED__COMM__TLS__CLIENT__CERT": str(cert),
                      "DASK_DISTRIBUTED__COMM__TLS__CLIENT__KEY": str(key),
                      "DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": "20s"}
        done = run(["run", "square", "--sizes", "4096", *FAST, "--cluster",
                    f"tls://127.0.0.1:{port}", "--out", str(tmp_path / "run")],
                   tmp_path, client_env, timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr
        assert set(statuses(tmp_path / "run").values()) == {"ok"}
        plain = run(["run", "square", "--sizes", "4096", *FAST, "--cluster",
                     f"tcp://127.0.0.1:{port}"], tmp_path,
                    {**env, "DASK_DISTRIBUTED__COMM__TIMEOUTS__CONNECT": "5s"}, timeout=120)
        assert plain.returncode == 5, plain.stdout + plain.stderr
        assert "Traceback" not in plain.stdout + plain.stderr
    finally:
        for process in reversed(started):
            process.terminate()
            process.wait(timeout=60)
    assert_nothing_left(mark)


def test_a_local_cluster_started_early_goes_with_a_plan_that_fails(tmp_path, build_cache):
    """Issue 32: `--cluster local` starts its cluster before the plan (run/cluster/early.py)
    and makes the run folder it logs into; a plan that fails closes that cluster, leaves
    no process and removes the folder it made."""
    pytest.importorskip("distributed")
    env, mark = marked_env(build_cache)
    out = tmp_path / "run"
    done = run(["run", "square", "--sizes", "4096", *FAST, "--variants", "no_such_variant",
                "--cluster", "local", "--workers", "2", "--out", str(out)], tmp_path, env)
    assert done.returncode == 2, done.stdout + done.stderr
    assert "no_such_variant" in done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    assert not out.exists(), list(out.rglob("*"))
    assert_nothing_left(mark)


@pytest.mark.parametrize("options, gpus, shape", [
    ((None, None, None), [], ("cpu", (), 2)),
    ((None, None, 3), [], ("cpu", (), 3)),
    ((None, None, None), ["0", "1"], ("cuda", ("0", "1"), 0)),
    ((None, "1", None), ["1"], ("cuda", ("1",), 0)),
    ((None, None, 2), ["0"], None),  # --workers on a GPU machine: the run says why
    ((None, "0", None), [], None),  # --devices without a GPU: the same
    ((None, "7", None), None, None),  # a GPU that is not there: the same
])
def test_the_early_cluster_is_the_one_the_options_ask_for(monkeypatch, options, gpus, shape):
    from gpubench.run.cluster import early as early_cluster

    monkeypatch.setattr(early_cluster, "guessed_gpus", lambda device, devices: gpus)
    assert early_cluster.guessed_cluster(*options) == shape
