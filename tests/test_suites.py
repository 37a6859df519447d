"""`--config NAME`: the shipped suites by bare name, from any folder (issue 61). The wheel
carries configs/ as gpubench_configs (scripts/check_install.py runs `--config quick` from
outside the checkout); here the checkout's copy is the one found."""

from __future__ import annotations

from pathlib import Path

import pytest

import gpubench
from gpubench.errors import ConfigError
from gpubench.run.config import load_config
from gpubench.run.suites import is_bare_name, resolve_suite, shipped_configs_dir, shipped_names

CHECKOUT = Path(gpubench.__file__).resolve().parent.parent


def test_the_shipped_suites_are_the_checkouts_configs():
    assert shipped_configs_dir() == CHECKOUT / "configs"
    assert {"quick", "gpu-full", "llm-shapes", "process-spread"} <= set(shipped_names())


def test_a_bare_name_is_a_shipped_suite_from_any_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert resolve_suite("quick") == CHECKOUT / "configs" / "quick.toml"
    assert load_config("quick").families == load_config(CHECKOUT / "configs/quick.toml").families


def test_a_path_stays_a_path(tmp_path, monkeypatch):
    """`quick.toml` or `./quick` names a file of the current folder, never the shipped one."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "quick.toml").write_text('families = ["square"]\n')
    assert load_config("quick.toml").families == ("square",)
    assert not is_bare_name("./quick") and not is_bare_name("configs/quick.toml")
    with pytest.raises(ConfigError, match="no such config file"):
        load_config("./quick")


def test_an_unknown_name_lists_the_shipped_suites(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError) as caught:
        load_config("quik")
    message = str(caught.value)
    assert "did you mean: quick?" in message
    assert all(name in message for name in shipped_names())
    assert caught.value.exit_code == 3


def test_the_cli_names_the_shipped_suites_for_a_wrong_name(tmp_path, monkeypatch):
    """Exit 3 (a config error) with the list; scripts/check_install.py runs the right name
    end to end, from the installed wheel."""
    from click.testing import CliRunner

    from gpubench.cli import cli

    monkeypatch.chdir(tmp_path)
    wrong = CliRunner().invoke(cli, ["run", "--config", "quik"])
    assert wrong.exit_code == 3 and "quick" in wrong.output
