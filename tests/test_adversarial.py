"""The exploit suite (tests/adversarial/, issue 25): every hostile variant must be FAIL or
SUSPECT with its reason, every honest one PASS. One gpubench run per device covers all the
families; each case then reads its row. The verdicts are in tests/adversarial/expected.py,
with the single list of cases still waiting for their defence (xfail, not strict)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, load_script

ADVERSARIAL = REPO / "tests" / "adversarial"


X = load_script("tests/adversarial/expected.py", "adversarial_expected")
# Short sampling: verdicts, not figures, are judged (a point takes 10-30 ms of samples).
CPU_TIMING = ("--warmup", "5", "--min-time", "10", "--max-time", "30")
# On a GPU a little longer: graph mode captures batches, cupti traces them.
GPU_TIMING = ("--warmup", "20", "--min-time", "20", "--max-time", "100")


def run_suite(tmp_path, build_cache, device: str, extra: tuple[str, ...]) -> dict:
    """One `gpubench run` of every exploit family; {(key, mode): row}."""
    env = {**os.environ, "GPUBENCH_CACHE_DIR": str(build_cache), "COLUMNS": "160"}
    out = tmp_path / "run"
    done = subprocess.run([sys.executable, "-m", "gpubench", "run", *X.FAMILIES,
                           "--kernels-dir", str(ADVERSARIAL), "--device", device, *extra,
                           "--out", str(out)], cwd=tmp_path, capture_output=True, text=True,
                          timeout=1800, env=env)
    assert (out / "results.json").is_file(), done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    rows = json.loads((out / "results.json").read_text())["results"]
    return {(f"{r['family']}/{r['variant']}", r["mode"]): r for r in rows}


def cases(device: str, modes: tuple[str, ...]) -> list:
    """(key, mode) for every case judged on `device`, pending ones marked xfail."""
    pending = pytest.mark.xfail(strict=False, reason="defence pending")
    return [pytest.param(key, mode, id=f"{key}-{mode}",
                         marks=[pending] if X.pending(key, device) else [])
            for key in X.EXPECTED if X.runs_on(key, device) for mode in modes]


def check(rows: dict, key: str, mode: str) -> None:
    row = rows.get((key, mode))
    assert row is not None, f"{key} has no {mode} row: it did not run"
    same_mode = {k: r for (k, m), r in rows.items() if m == mode}
    verdict = X.judge(key, row, same_mode)
    measurement = row.get("measurement") or {}
    evidence = {name: measurement.get(name) for name in ("fresh_in_loop", "host_load")}
    assert verdict.ok, f"{key} [{mode}]: {verdict.why}; {row.get('status')}: " \
        f"{row.get('error') or row.get('warnings')}; evidence {evidence}"


# ---------------------------------------------------------------- CPU (CI)


@pytest.fixture(scope="module")
def cpu_rows(tmp_path_factory, build_cache) -> dict:
    return run_suite(tmp_path_factory.mktemp("adversarial-cpu"), build_cache, "cpu",
                     CPU_TIMING)


# serial: the CPU verdicts read timed calls (behaviour.timed_shortcut), which a second test
# worker on the same 2 cores would preempt; the suite runs once, alone, for both tests.
@pytest.mark.slow
@pytest.mark.serial
@pytest.mark.parametrize("key, mode", cases("cpu", ("cpu",)))
def test_exploit_gets_its_verdict_on_the_cpu(cpu_rows, key, mode):
    check(cpu_rows, key, mode)


def test_every_variant_of_the_suite_has_an_expected_verdict():
    """A variant added to a family without a line in expected.py would go unjudged."""
    from gpubench.families.discovery import family_dirs, load_family

    found = {f"{name}/{v.name}" for name, folder in family_dirs((ADVERSARIAL,)).items()
             if name in X.FAMILIES for v in load_family(name, folder).variants}
    assert found == set(X.EXPECTED)
    assert {entry.split("@")[0] for entry in X.PENDING_DEFENCES} <= set(X.EXPECTED)


@pytest.mark.slow
@pytest.mark.serial
def test_the_files_later_runs_trust_are_intact_after_the_suite(cpu_rows, build_cache):
    """rewrites_trusted_files ran: the ceilings cache holds measured ceilings (its write
    refused by the sandbox, or the file written back by the parent), and a .pyc for the
    suite's spec.py was not planted (sandbox) or, planted, is never run (source_import)."""
    import importlib.util

    from gpubench.build import bytecode

    writes = load_script("tests/adversarial/tricks/writes.py", "adversarial_writes")
    cached = [path for path in (build_cache / "ceilings").glob("*.json")
              if not path.name.endswith(".check.json")]
    assert cached
    for path in cached:
        assert json.loads(path.read_text()).get("method") != writes.FORGED_METHOD, path
    if not X.SANDBOXED:
        return
    saved = sys.pycache_prefix
    try:
        for prefix in (None, str(bytecode.prefix_dir({"GPUBENCH_CACHE_DIR": str(build_cache)})),
                       os.environ.get("PYTHONPYCACHEPREFIX")):
            sys.pycache_prefix = prefix
            planted = Path(importlib.util.cache_from_source(str(writes.SPEC)))
            assert not planted.is_file() or b"PLANTED" not in planted.read_bytes(), planted
    finally:
        sys.pycache_prefix = saved


# ---------------------------------------------------------------- GPU (the H200)


@pytest.fixture(scope="module")
def gpu_rows(tmp_path_factory, build_cache) -> dict:
    return run_suite(tmp_path_factory.mktemp("adversarial-gpu"), build_cache, "cuda",
                     (*GPU_TIMING, "--mode", ",".join(X.GPU_MODES)))


@pytest.mark.gpu
@pytest.mark.slow
@pytest.mark.parametrize("key, mode", cases("cuda", X.GPU_MODES))
def test_exploit_gets_its_verdict_on_the_gpu(gpu_rows, key, mode):
    check(gpu_rows, key, mode)
