"""The `gpubench` command line, one package: the click group with one function per command
(app.py), the options several commands share and their values parsed (options.py), and the
guard every command body runs under (guard.py).

`gpubench.cli:main` is the console script (pyproject.toml) and `python -m gpubench`; `cli`
is the click group (scripts/cli_reference.py renders its --help); `merge_options` lays the
command line over a suite's RunConfig.
"""

from gpubench.cli.app import cli, main
from gpubench.cli.options import merge_options

__all__ = ["cli", "main", "merge_options"]
