"""Every command's --help as click prints it: no optparse-style '%%' escapes."""

import click
from click.testing import CliRunner

from gpubench.cli import cli


def commands(group: click.Group, prefix=()):
    for name, command in group.commands.items():
        yield (*prefix, name)
        if isinstance(command, click.Group):
            yield from commands(command, (*prefix, name))


def test_help_texts_print_percent_signs_once():
    runner = CliRunner()
    for argv in commands(cli):
        text = runner.invoke(cli, [*argv, "--help"]).output
        assert "%%" not in text, argv
    assert "95% CI" in runner.invoke(cli, ["run", "--help"]).output
