"""Finding and importing NVIDIA's `ncu_report`, the module that reads .ncu-rep files. It is
optional (a 17 MB wheel: `pip install 'gpubench[ncu]'`) and also ships inside every ncu
installation, so `import_ncu_report` tries both: the PyPI package, then the copy in the
`extras/python` folder of the ncu it can find."""

from __future__ import annotations

import importlib
import importlib.util
import re
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

from gpubench.errors import EnvironmentProblem

INSTALL_HINT = "pip install ncu-report (or pip install 'gpubench[ncu]')"
# Where ncu usually lives when it is not on PATH; module-level so tests can point them elsewhere.
DEFAULT_NCU = "/usr/local/cuda/bin/ncu"
NSIGHT_COMPUTE_ROOT = Path("/opt/nvidia/nsight-compute")


def import_ncu_report(ncu_path: str | None = None) -> ModuleType:
    """The `ncu_report` module: the PyPI package if installed, else the copy inside ncu."""
    module = _import_installed()
    if module is not None:
        return module
    python_dir = find_ncu_python_dir(ncu_path)
    if python_dir is None:
        raise EnvironmentProblem(
            "reading .ncu-rep files needs NVIDIA's ncu_report module, which is not installed "
            f"and no ncu installation with extras/python/ncu_report.py was found: {INSTALL_HINT}")
    return import_from_dir(python_dir)


def _import_installed() -> ModuleType | None:
    try:
        return importlib.import_module("ncu_report")
    except ImportError:
        return None


def find_ncu_python_dir(ncu_path: str | None = None) -> Path | None:
    """The first `extras/python` holding ncu_report.py among ncu's likely install folders."""
    for candidate in ncu_python_dirs(ncu_path):
        if (candidate / "ncu_report.py").is_file():
            return candidate
    return None


def ncu_python_dirs(ncu_path: str | None = None) -> list[Path]:
    """Where `extras/python` may be, most specific first.

    The ncu executable is `<install>/ncu`, or deeper (`<install>/target/<platform>/ncu`), or a
    wrapper in cuda/bin whose real install is `<cuda>/nsight-compute-<ver>/` or
    `/opt/nvidia/nsight-compute/<ver>/`; symlinks are resolved first.
    """
    executables = [p for p in (ncu_path, shutil.which("ncu"), DEFAULT_NCU) if p]
    candidates: list[Path] = []
    for exe in executables:
        given = Path(exe).expanduser()
        real = given.resolve()
        candidates += [parent / "extras" / "python" for parent in list(real.parents)[:4]]
        for cuda_root in dict.fromkeys((real.parent.parent, given.parent.parent)):
            candidates += _versioned(cuda_root.glob("nsight-compute-*"))
    candidates += _versioned(NSIGHT_COMPUTE_ROOT.glob("*"))
    return list(dict.fromkeys(candidates))


def _versioned(installs: Iterator[Path]) -> list[Path]:
    """extras/python of each install folder, the newest version first."""
    def version(path: Path) -> tuple[int, ...]:
        return tuple(int(n) for n in re.findall(r"\d+", path.name))

    return [p / "extras" / "python" for p in sorted(installs, key=version, reverse=True)]


def import_from_dir(python_dir: Path) -> ModuleType:
    """Load `python_dir/ncu_report.py` as `ncu_report`.

    ncu's copy is a SWIG wrapper that does a top-level `import _ncu_report` (the native library
    beside it), so its folder must be on sys.path while it loads.
    """
    path = Path(python_dir) / "ncu_report.py"
    spec = importlib.util.spec_from_file_location("ncu_report", path)
    if spec is None or spec.loader is None:
        raise EnvironmentProblem(f"cannot load {path}: {INSTALL_HINT}")
    module = importlib.util.module_from_spec(spec)
    sys.path.insert(0, str(python_dir))
    sys.modules["ncu_report"] = module
    try:
        spec.loader.exec_module(module)
    except Exception as exc:
        sys.modules.pop("ncu_report", None)
        raise EnvironmentProblem(f"cannot load {path} ({exc}): {INSTALL_HINT}") from exc
    finally:
        sys.path.remove(str(python_dir))
    return module
