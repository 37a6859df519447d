"""The install a user does, checked: the wheel, installed without -e, used from outside the
checkout.

`pip install -e .` puts the checkout itself on the path, so a package or a data file left
out of the wheel goes unseen there; `pip install .`, `pip install git+URL` and a published
wheel then fail at the first import. This script builds the wheel, compares it with the
tree (every tracked file under gpubench/, kernels/ and configs/ must ship), installs it
into a fresh virtual environment (torch's CPU build first, then the wheel with its
dependencies), and from a folder outside the checkout imports every module, then runs
`gpubench --version`, `gpubench list`, `gpubench run square --sizes 2^10` and
`gpubench run --config quick` (the README's command 1, a shipped suite by name). One line
per check; exit 0 when all hold, 1 otherwise. CI runs it (.ci/run), as does the README's
test command.

    python scripts/check_install.py                 # build the wheel from this checkout
    python scripts/check_install.py --wheel W.whl   # check a wheel built elsewhere
    python3 scripts/check_install.py --installed    # the gpubench beside this Python
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# kernels/ and configs/ of the checkout ship as the data packages gpubench_kernels and
# gpubench_configs (pyproject.toml).
SHIPPED_AS = {"gpubench": "gpubench", "kernels": "gpubench_kernels",
              "configs": "gpubench_configs"}
# torch's CPU build, as the README's set-up installs it: a bare `torch` requirement
# would pull the multi-GB CUDA build.
TORCH = "torch==2.13.0"
# `gpubench run square --sizes 2^10` builds one C++ extension (~7 s on 2 cores) and runs
# three rows; `run --config quick` reuses that build cache and adds the other three
# families' builds; 10 minutes covers a cold build cache on a loaded host.
COMMAND_TIMEOUT_S = 600

IMPORT_EVERY_MODULE = """
import importlib, json, sys
failed, outside = {}, []
for name in sys.argv[1:]:
    try:
        module = importlib.import_module(name)
    except BaseException as error:  # a module that exits or raises is a failure to report
        failed[name] = f"{type(error).__name__}: {error}"
        continue
    if not getattr(module, "__file__", "").startswith(sys.prefix):
        outside.append(f"{name} ({module.__file__})")
print(json.dumps({"failed": failed, "outside": outside}))
"""


def tracked_files(repo: Path) -> list[str]:
    """The files under gpubench/, kernels/ and configs/ that git tracks or would (not
    ignored: a new module counts before its first commit), or every file there outside a
    checkout; bytecode never counts."""
    try:
        listed = subprocess.run(["git", "ls-files", "--cached", "--others",
                                 "--exclude-standard", *SHIPPED_AS], cwd=repo, check=True,
                                capture_output=True, text=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        listed = [str(p.relative_to(repo)) for top in SHIPPED_AS
                  for p in (repo / top).rglob("*") if p.is_file()]
    return sorted(f for f in listed if "__pycache__" not in f and not f.endswith(".pyc"))


def in_wheel(path: str) -> str:
    """Where a tracked file lands in the wheel: kernels/x -> gpubench_kernels/x."""
    top, _, rest = path.partition("/")
    return f"{SHIPPED_AS[top]}/{rest}"


def missing_from_wheel(tracked: list[str], wheel_names: list[str]) -> list[str]:
    """Tracked files the wheel lacks, as tree paths."""
    shipped = set(wheel_names)
    return [path for path in tracked if in_wheel(path) not in shipped]


def module_names(tracked: list[str]) -> list[str]:
    """Every importable module of the gpubench package, from the tree's .py files;
    __main__ runs the command line, so it is left to `gpubench --version`."""
    names = []
    for path in tracked:
        if not (path.startswith("gpubench/") and path.endswith(".py")):
            continue
        parts = path.removesuffix(".py").split("/")
        if parts[-1] == "__main__":
            continue
        if parts[-1] == "__init__":
            parts = parts[:-1]
        names.append(".".join(parts))
    return names


def build_wheel(repo: Path, into: Path) -> Path:
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", str(repo),
                    "-w", str(into)], check=True)
    (wheel,) = into.glob("gpubench-*.whl")
    return wheel


def fresh_venv(wheel: Path, where: Path) -> Path:
    """A virtual environment holding torch's CPU build and the wheel with its
    dependencies; returns its bin folder."""
    subprocess.run([sys.executable, "-m", "venv", str(where)], check=True)
    python = where / "bin" / "python"
    for requirement in (TORCH, str(wheel)):
        subprocess.run([str(python), "-m", "pip", "install", "-q", requirement], check=True)
    return where / "bin"


def outside_env() -> dict[str, str]:
    """The environment the installed gpubench runs in: nothing that points at the checkout
    (a PYTHONPATH of carried wheels stays, one into the checkout goes)."""
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    paths = [p for p in env.pop("PYTHONPATH", "").split(os.pathsep)
             if p and not Path(p).resolve().is_relative_to(REPO)]
    if paths:
        env["PYTHONPATH"] = os.pathsep.join(paths)
    env["COLUMNS"] = "120"
    return env


def run_checks(bin_dir: Path, modules: list[str], cwd: Path) -> list[tuple[str, bool, str]]:
    """Each check's (name, held, detail), run from `cwd`, outside the checkout."""
    env = outside_env()

    def run(*argv: str) -> subprocess.CompletedProcess:
        return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True,
                              timeout=COMMAND_TIMEOUT_S)

    imported = run(str(bin_dir / "python"), "-c", IMPORT_EVERY_MODULE, *modules)
    found = json.loads(imported.stdout) if imported.returncode == 0 else {
        "failed": {"(the import run)": imported.stderr[-2000:]}, "outside": []}
    problems = [f"{name}: {why}" for name, why in found["failed"].items()]
    problems += [f"imported from outside the environment: {where}" for where in found["outside"]]
    checks = [(f"import all {len(modules)} modules", not problems, "\n".join(problems))]
    for argv in (["--version"], ["list"],
                 ["run", "square", "--sizes", "2^10", "--out", str(cwd / "run-square")],
                 # the README's command 1: a shipped suite by name, from outside the checkout
                 ["run", "--config", "quick", "--out", str(cwd / "run-quick")]):
        done = run(str(bin_dir / "gpubench"), *argv)
        tail = (done.stdout + done.stderr).strip().splitlines()[-12:]
        shown = argv[:argv.index("--out")] if "--out" in argv else argv  # not the scratch path
        checks.append((f"gpubench {' '.join(shown)}", done.returncode == 0,
                       f"exit {done.returncode}\n" + "\n".join(tail)))
    return checks


def indented_head(detail: str, lines: int = 12) -> str:
    """A failure's first lines, indented under its check: a package left out fails most
    modules with one message, and the first dozen say which."""
    shown = detail.splitlines()
    if len(shown) > lines:
        shown = [*shown[:lines], f"(+{len(shown) - lines} more lines)"]
    return "\n".join(f"     {line}" for line in shown)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wheel", type=Path, help="check this wheel instead of building one")
    parser.add_argument("--installed", action="store_true",
                        help="no wheel, no venv: check the gpubench installed beside this "
                             "Python (a GPU image, where pip reaches no registry)")
    args = parser.parse_args(argv)
    tracked = tracked_files(REPO)
    checks = []
    with tempfile.TemporaryDirectory(prefix="gpubench-install-") as scratch:
        scratch = Path(scratch)
        if args.installed:
            bin_dir = Path(sys.executable).parent
        else:
            wheel = args.wheel.resolve() if args.wheel else build_wheel(REPO, scratch / "dist")
            missing = missing_from_wheel(tracked, zipfile.ZipFile(wheel).namelist())
            checks.append((f"{wheel.name} holds all {len(tracked)} tracked files of gpubench/, "
                           "kernels/ and configs/", not missing,
                           "missing:\n" + "\n".join(missing)))
            bin_dir = fresh_venv(wheel, scratch / "venv")
        (scratch / "outside").mkdir()
        checks += run_checks(bin_dir, module_names(tracked), scratch / "outside")
    for name, held, detail in checks:
        print(f"{'ok  ' if held else 'FAIL'} {name}")
        if not held:
            print(indented_head(detail))
    return 0 if all(held for _, held, _ in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
