"""What a user installs and writes against: the wheel holds every package and data file,
the public names come from `gpubench`, the old `gpubench.spec` import still runs a family,
and the version is one string that --version, results.json and the changelog agree on.

scripts/check_install.py is the end-to-end check (a fresh venv, the wheel without -e,
commands run from outside the checkout); CI runs it after the suite."""

from __future__ import annotations

import re
import subprocess
import sys
import zipfile

import pytest

import gpubench
from conftest import FAST, REPO, load_script
from gpubench.version import __version__ as VERSION

check_install = load_script("scripts/check_install.py")
LEGACY_FAMILY = REPO / "tests" / "legacy" / "scale_v01"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    """The wheel pip builds from this checkout, as `pip install .` would."""
    into = tmp_path_factory.mktemp("dist")
    return check_install.build_wheel(REPO, into)


@pytest.mark.slow
def test_the_wheel_holds_every_tracked_file_of_the_package_and_the_kernels(wheel):
    tracked = check_install.tracked_files(REPO)
    assert "gpubench/tune/racing.py" in tracked and "kernels/square/square.cu" in tracked
    assert "configs/quick.toml" in tracked  # `--config quick` from any folder
    assert check_install.missing_from_wheel(tracked, zipfile.ZipFile(wheel).namelist()) == []


@pytest.mark.slow
def test_a_package_left_out_of_the_wheel_is_named(wheel):
    """The check that would have caught gpubench.tune missing from the hand-kept list."""
    names = [n for n in zipfile.ZipFile(wheel).namelist() if not n.startswith("gpubench/tune/")]
    missing = check_install.missing_from_wheel(check_install.tracked_files(REPO), names)
    assert "gpubench/tune/__init__.py" in missing
    assert all(path.startswith("gpubench/tune/") for path in missing)


@pytest.mark.slow
def test_the_wheel_metadata_says_what_a_registry_page_needs(wheel):
    metadata = next(n for n in zipfile.ZipFile(wheel).namelist() if n.endswith("/METADATA"))
    text = zipfile.ZipFile(wheel).read(metadata).decode()
    assert f"Version: {VERSION}" in text
    assert "License-Expression: MIT" in text and "Requires-Python: >=3.11" in text
    assert "Classifier: Programming Language :: Python :: 3.12" in text
    assert text.count("Summary: ") == 1 and "# gpubench" in text  # the README as description


def test_a_kernel_file_lands_in_the_data_package():
    assert check_install.in_wheel("kernels/square/spec.py") == "gpubench_kernels/square/spec.py"
    assert check_install.in_wheel("gpubench/api.py") == "gpubench/api.py"
    assert check_install.in_wheel("configs/quick.toml") == "gpubench_configs/quick.toml"


def test_every_module_of_the_tree_is_listed_for_import_and_main_is_not():
    modules = check_install.module_names(check_install.tracked_files(REPO))
    assert {"gpubench", "gpubench.tune", "gpubench.records.features.vs_baseline",
            "gpubench.spec"} <= set(modules)
    assert "gpubench.__main__" not in modules


def test_the_public_names_are_the_objects_the_internals_use():
    from gpubench.analysis.comparison import Comparison
    from gpubench.api import measure
    from gpubench.families import spec
    from gpubench.records.result import Result

    assert gpubench.Family is spec.Family and gpubench.TritonVariant is spec.TritonVariant
    assert gpubench.Axis is spec.Axis and gpubench.CudaVariant is spec.CudaVariant
    assert gpubench.measure is measure and gpubench.Result is Result
    assert gpubench.Comparison is Comparison
    assert set(gpubench.__all__) <= set(dir(gpubench))
    with pytest.raises(AttributeError, match="no attribute 'Famliy'"):
        gpubench.Famliy  # noqa: B018


def test_reading_the_public_names_in_a_worker_breaks_no_seal():
    """A spec's `from gpubench import Family` runs inside the sealed worker: the root
    module must not gain names (a cached one read as 'variant code replaced gpubench.Family'
    on every row of an H200 run)."""
    from gpubench.run.worker.seal import Seal

    seal = Seal()
    assert gpubench.Family and gpubench.measure and gpubench.RunComparison
    assert seal.broken() == []


def test_shipped_and_example_specs_import_only_the_public_names():
    """The guide, the examples and the shipped kernels show users the import to write."""
    specs = [*REPO.glob("kernels/*/spec.py"), *REPO.glob("examples/**/spec.py")]
    assert len(specs) >= 10
    private = [str(p.relative_to(REPO)) for p in specs
               if re.search(r"^from gpubench\.families", p.read_text(), re.M)]
    assert private == []
    assert "from gpubench.families" not in (REPO / "docs" / "guide.md").read_text()


def test_the_old_spec_import_warns_with_the_line_and_the_release_it_goes_away_in():
    code = "from gpubench.spec import Family, TorchVariant\nprint(Family.__module__)\n"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert done.stdout.strip() == "gpubench.families.spec"
    assert "<string>:1: FutureWarning: `gpubench.spec` is deprecated" in done.stderr
    assert "goes away in gpubench 1.0.0" in done.stderr
    assert done.stderr.count("FutureWarning") == 1  # one line, one warning


def test_a_name_the_old_spec_never_had_is_an_attribute_error():
    import gpubench.spec

    with pytest.raises(AttributeError):
        gpubench.spec.NoSuchName  # noqa: B018


@pytest.mark.slow
def test_a_family_written_against_gpubench_spec_runs_unchanged(gpubench):
    assert "from gpubench.spec import" in (LEGACY_FAMILY / "spec.py").read_text()
    run = gpubench("run", "scale_v01", "--kernels-dir", str(LEGACY_FAMILY), *FAST)
    assert run.code == 0, run.output
    rows = run.by_variant()
    assert [rows[v]["status"] for v in ("torch", "twice")] == ["ok", "ok"]
    assert rows["twice"]["check"]["passed"]
    assert "spec.py:8: FutureWarning: `gpubench.spec` is deprecated" in run.stderr
    assert run.results()["meta"]["gpubench"] == VERSION


def test_version_prints_the_one_version_and_the_changelog_has_its_section():
    done = subprocess.run([sys.executable, "-m", "gpubench", "--version"],
                          capture_output=True, text=True, check=True)
    assert done.stdout.strip() == f"gpubench, version {VERSION}"
    assert re.fullmatch(r"\d+\.\d+\.\d+", VERSION)
    changelog = (REPO / "CHANGELOG.md").read_text()
    assert re.search(rf"^## \[?{re.escape(VERSION)}\]?", changelog, re.M)
