"""Paths that gpubench derives from its own files' places: moving a module into another
package changes `Path(__file__).parents[...]`, and only a GPU build or an uninstalled
worker would notice otherwise (the C++ headers went missing that way once)."""

import os
from pathlib import Path

import gpubench
from gpubench.build.sources import INCLUDE_DIR
from gpubench.families.discovery import shipped_kernels_dir
from gpubench.run.lanes.worker_process import worker_env

PACKAGE = Path(gpubench.__file__).resolve().parent


def test_the_cuda_headers_are_on_the_include_path():
    assert (INCLUDE_DIR / "gpubench" / "binding.h").is_file()
    assert (INCLUDE_DIR / "gpubench" / "dispatch.cuh").is_file()


def test_the_shipped_kernels_are_the_checkouts():
    assert shipped_kernels_dir() == PACKAGE.parent / "kernels"


def test_a_worker_imports_the_parents_gpubench():
    root = worker_env("cpu")["PYTHONPATH"].split(":")[0]
    assert Path(root) == PACKAGE.parent


def test_the_tamper_check_knows_gpubench_s_own_files():
    from gpubench.run.worker import tamper

    assert str(PACKAGE) + os.sep == tamper.PACKAGE


def test_no_module_over_500_lines_and_no_function_over_60():
    """Issue 24's size limits, checked on every run of the suite (scripts/check_sizes.py
    prints the offenders)."""
    import runpy

    checker = runpy.run_path(str(PACKAGE.parent / "scripts" / "check_sizes.py"))
    assert checker["main"](PACKAGE) == 0
