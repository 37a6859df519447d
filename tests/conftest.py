"""Shared test helpers: run the real CLI in a subprocess, share one build cache per session."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
TEST_KERNELS = REPO / "tests" / "kernels"
FIXTURES = REPO / "tests" / "fixtures"


def has_cuda() -> bool:
    import torch

    return torch.cuda.is_available()


def pytest_sessionstart(session):
    """Under pytest-xdist, the controller makes torch's precompiled header (build/pch.py)
    before the workers start, through one real CPU build into the workers' shared cache:
    a build that finds no PCH ready compiles without it, so without this every test's
    first build in the first minute or two parsed torch/extension.h itself (~20 s of
    a core each, beside the PCH's own ~50 s), while a build with it takes 5-7 s. The
    build's ceilings and extension are the workers' too. Skipped where a PCH is there
    already (shared_pch keeps them between sessions), off (GPUBENCH_PCH=0), or outside
    xdist's controller; a failure here is left to the tests that build to report."""
    from gpubench.build import pch

    config = session.config
    if hasattr(config, "workerinput") or not config.getoption("numprocesses", None):
        return
    base = config._tmp_path_factory.getbasetemp()
    headers = shared_pch(base)
    if frontend_pch_made(headers) or not pch.enabled():
        return
    cache = base / "gpubench-cache"  # the workers' build_cache
    cache.mkdir(exist_ok=True)
    folder = base / "pch-prebuild"
    folder.mkdir(exist_ok=True)
    with contextlib.suppress(subprocess.SubprocessError, OSError):
        gpubench_in(folder, with_pch(cache, headers), "run", "returning", "--kernels-dir",
                    str(TEST_KERNELS), "--device", "cpu", "--variants", "inline_cpp",
                    "--warmup", "1", "--min-time", "1", "--max-time", "2",
                    "--out", str(folder / "run"))


def frontend_pch_made(headers: Path) -> bool:
    """Whether `headers` holds a PCH of this torch's torch/extension.h: the shared folder
    also keeps those of other venvs (CI's own, a fresh clone's), and of the lean header,
    none of which the tests' first builds can use. The path is build/torch_pch.py's,
    found without importing torch (~1.5 s of the controller's start)."""
    import importlib.util

    from gpubench.build.layout import FRONTEND

    torch_dir = importlib.util.find_spec("torch").submodule_search_locations[0]
    wanted = Path(torch_dir) / "include" / FRONTEND
    return any(header == wanted for _, header in made_pchs(headers))


def made_pchs(folder: Path) -> list[tuple[Path, Path]]:
    """(PCH folder, the header it was built from) of each finished PCH in `folder`, as its
    marker (build/pch.py MARKER) records them; an unreadable marker is left out."""
    from gpubench.build.pch import MARKER

    made = []
    for marker in folder.glob(f"*/{MARKER}"):
        with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
            made.append((marker.parent, Path(json.loads(marker.read_text())["recipe"]["header"])))
    return made


def pytest_collection_modifyitems(config, items):
    if has_cuda():
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU (torch.cuda.is_available() is False)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def build_cache(tmp_path_factory) -> Path:
    """One extension cache for the whole session: each C++ build (~20-40 s) happens once.
    Under pytest-xdist every worker is a session of its own, so the workers share one
    folder beside their temp folders; gpubench's build lock makes a second worker wait for
    a build the first one started and then import it (tests/test_build.py tests that lock).
    Its precompiled headers are shared wider still (shared_pch)."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        cache = base.parent / "gpubench-cache"
        cache.mkdir(exist_ok=True)
    else:
        cache = tmp_path_factory.mktemp("gpubench-cache")
    return with_pch(cache, shared_pch(base))


def shared_pch(base: Path) -> Path:
    """The folder of torch's precompiled headers (build/pch.py) that every test cache on
    this machine links to, kept between sessions: README command 2 runs two pytest
    sessions (the parallel part, then the serial one), and each PCH costs ~50 s of a 2-core
    machine (~800 MB a flag set). Reuse is safe: a PCH is keyed by compiler, flags and
    torch's headers and checked against them before each use. It lives in pytest's own
    root for this user (pytest-of-USER, which pytest makes private and checks is ours), not
    in a pytest-N folder, which pytest rotates away; with --basetemp, in that folder.
    scripts/check_install.py still builds a PCH from scratch in every CI run."""
    root = next((f for f in (base, *base.parents) if f.name.startswith("pytest-of-")), base)
    folder = root / "gpubench-pch"
    folder.mkdir(exist_ok=True)
    drop_orphaned_pchs(folder)
    return folder


def drop_orphaned_pchs(folder: Path) -> None:
    """Remove the PCHs whose header is gone (a deleted venv, a CI clone's): none can be
    used again, and each holds ~800 MB. A PCH whose header is there is kept, whoever's."""
    import shutil

    for directory, header in made_pchs(folder):
        if not header.exists():
            shutil.rmtree(directory, ignore_errors=True)
            with contextlib.suppress(OSError):
                directory.with_name(f"{directory.name}.flock").unlink()


def with_pch(cache: Path, pch: Path) -> Path:
    """`cache` with its pch folder a link to `pch` (two workers may race to make it)."""
    with contextlib.suppress(FileExistsError):
        (cache / "pch").symlink_to(pch, target_is_directory=True)
    return cache


@pytest.fixture
def private_cache(tmp_path, build_cache) -> Path:
    """A build cache of this test's own (its extensions built afresh, its locks its own)
    whose precompiled headers are the session's: a test about building extensions is not
    about torch's header."""
    cache = tmp_path / "cache"
    cache.mkdir()
    return with_pch(cache, (build_cache / "pch").resolve())


class CliResult:
    def __init__(self, completed: subprocess.CompletedProcess, cwd: Path):
        self.code = completed.returncode
        self.stdout = completed.stdout
        self.stderr = completed.stderr
        self.cwd = cwd

    @property
    def output(self) -> str:
        return self.stdout + self.stderr

    def results(self, run_dir: Path | None = None) -> dict:
        """The results.json of the run (the newest run folder under cwd/profiles by default)."""
        if run_dir is None:
            runs = sorted((self.cwd / "profiles").iterdir(), key=lambda p: p.stat().st_mtime)
            run_dir = runs[-1]
        return json.loads((run_dir / "results.json").read_text())

    def by_variant(self, run_dir: Path | None = None) -> dict[str, dict]:
        return {r["variant"]: r for r in self.results(run_dir)["results"]}


def run_index_for(cwd: Path) -> Path:
    """The index of runs of one test's `gpubench` calls: its own, so that `latest` there
    means that test's newest run, not one of a test beside it (the build cache is shared)."""
    return cwd.parent / f"{cwd.name}-runs.json"


@pytest.fixture(scope="session", autouse=True)
def run_index_of_the_session(tmp_path_factory):
    """Runs made in-process, or by a subprocess not started through `gpubench`, are
    recorded here rather than in the user's ~/.cache/gpubench/runs.json."""
    os.environ.setdefault("GPUBENCH_RUN_INDEX",
                          str(tmp_path_factory.mktemp("run-index") / "runs.json"))


@pytest.fixture
def gpubench(tmp_path, build_cache):
    """Run `python -m gpubench ARGS` in a fresh folder, as a user would."""

    def run(*args: str, timeout: float = 600, env: dict | None = None) -> CliResult:
        return gpubench_in(tmp_path, build_cache, *args, timeout=timeout, env=env)

    return run


def gpubench_in(cwd: Path, build_cache: Path, *args: str, timeout: float = 600,
                env: dict | None = None) -> CliResult:
    """`python -m gpubench ARGS` in `cwd`: the `gpubench` fixture's call, for a module
    fixture whose one run several tests read."""
    # GPUBENCH_COMPILED=off: no `compiled` row unless a test asks (--compiled), so a
    # test's rows stay its family's, and a GPU run compiles nothing it does not check.
    full_env = {**os.environ, "GPUBENCH_CACHE_DIR": str(build_cache), "COLUMNS": "160",
                "GPUBENCH_RUN_INDEX": str(run_index_for(cwd)),
                "GPUBENCH_COMPILED": "off", **(env or {})}
    completed = subprocess.run([sys.executable, "-m", "gpubench", *args], cwd=cwd,
                               capture_output=True, text=True, timeout=timeout, env=full_env)
    return CliResult(completed, cwd)


class InProcessResult:
    """What CliResult offers for a command that ends before any run starts: the exit code
    and the two streams. An exception the command did not turn into an exit code is put in
    the output as the traceback it would print, so `"Traceback" not in output` still holds
    only for a clean, one-line error."""

    def __init__(self, result, cwd: Path):
        import traceback

        self.code = result.exit_code
        self.stdout = result.stdout
        self.stderr = result.stderr
        if result.exception is not None and not isinstance(result.exception, SystemExit):
            self.stderr += "".join(traceback.format_exception(*result.exc_info))
        self.cwd = cwd

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


@pytest.fixture
def gpubench_in_process(tmp_path, build_cache, monkeypatch):
    """Run `gpubench ARGS` in this process (click's CliRunner on the `gpubench.cli` group),
    in a fresh folder and with the environment of `gpubench`: for a usage error (bad
    options, a wrong family, variant, shape or suite file), which exits before a point
    runs, so the ~2.5 s of a new Python and torch are not paid for one line of stderr.
    A run's start may still spawn its prestarted worker; the command's guard kills what is
    left below this process, which here spares the children this process already had. The
    process state a command changes (the stop signals' handlers, the subreaper flag, the
    ceilings guard's copies from the prestarted worker's hello, whose check at exit would
    otherwise compare another test's cache, or the user's, with them) is put back
    afterwards."""
    from click.testing import CliRunner

    import gpubench.cli.guard as guard
    from gpubench.cli import cli
    from gpubench.run.lanes import ceilings_guard
    from gpubench.run.lanes.processes import descendants

    monkeypatch.chdir(tmp_path)

    def run(*args: str, env: dict | None = None) -> InProcessResult:
        before = tuple(descendants(os.getpid()))
        monkeypatch.setattr(guard, "kill_tree",
                            lambda pid, keep=(): _kill_tree(pid, keep=(*keep, *before)))
        handlers = {signum: signal.getsignal(signum) for signum in guard.STOP_SIGNALS}
        full_env = {"GPUBENCH_CACHE_DIR": str(build_cache), "COLUMNS": "160",
                    "GPUBENCH_RUN_INDEX": str(run_index_for(tmp_path)),
                    "GPUBENCH_COMPILED": "off", **(env or {})}
        try:
            result = CliRunner().invoke(cli, list(args), env=full_env, prog_name="gpubench")
        finally:
            for signum, handler in handlers.items():
                signal.signal(signum, handler)
            _not_a_subreaper()
            ceilings_guard.forget()
        return InProcessResult(result, tmp_path)

    return run


def _kill_tree(pid: int, keep: tuple[int, ...]) -> int:
    from gpubench.run.lanes.processes import kill_tree

    return kill_tree(pid, keep=keep)


def _not_a_subreaper() -> None:
    """Undo guard's become_subreaper() in this process (Linux's PR_SET_CHILD_SUBREAPER)."""
    import ctypes

    from gpubench.run.lanes.processes import PR_SET_CHILD_SUBREAPER

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0)


def load_script(relative: str, name: str | None = None):
    """A script of the repository (benchmarks/, scripts/, tests/...: not packages) loaded
    from its file as a module, as `python` would run it; registered in sys.modules, where
    dataclasses look their module up."""
    import importlib.util

    path = REPO / relative
    spec = importlib.util.spec_from_file_location(name or path.stem, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


# Short sampling for runs whose figures a test does not judge: 5 ms warmup, 10-30 ms a point.
FAST = ("--warmup", "5", "--min-time", "10", "--max-time", "30")


def start_gpubench(args, cwd: Path, env: dict) -> subprocess.Popen:
    """`python -m gpubench ARGS` in the background, its output in one pipe.

    SIGINT is set back to its default in the child: a shell starts a background job with
    SIGINT ignored, and Python keeps an ignored SIGINT instead of raising KeyboardInterrupt,
    so a test suite launched with `&` would otherwise see Ctrl-C tests hang (as a user's
    `gpubench run ... &` rightly ignores Ctrl-C typed in its terminal)."""
    return subprocess.Popen([sys.executable, "-m", "gpubench", *args], cwd=cwd, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            preexec_fn=_default_sigint)


def start_hanging_run(out: Path, cwd: Path, env: dict) -> subprocess.Popen:
    """A run whose second point (faulty/hang) sleeps GPUBENCH_TEST_HANG_S: the state in
    which Ctrl-C, SIGTERM, kill -9 and a second run into `out` are tested."""
    return start_gpubench(["run", "faulty", "--kernels-dir", str(TEST_KERNELS), "--variants",
                           "hang", "--timeout", "300", *FAST, "--out", str(out)], cwd, env)


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def wait_for_worker_log(root: Path, text: str, timeout_s: float = 180) -> str:
    """The text of the first worker log under `root` (at any depth: a Dask cluster's
    workers log in a subfolder) that shows `text`, once one does."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for log in root.rglob("worker-*.log"):
            body = log.read_text(errors="replace")
            if text in body:
                return body
        time.sleep(0.2)
    raise AssertionError(f"no worker log under {root} shows '{text}'")

