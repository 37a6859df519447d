"""Write docs/cli.md, the command-line reference, from the click commands themselves.

The reference is generated, never edited by hand, so that it cannot drift from `--help`:
tests/test_docs.py renders it again and fails when docs/cli.md differs, naming this script.
  python scripts/cli_reference.py            rewrite docs/cli.md
  python scripts/cli_reference.py --check    exit 1 if docs/cli.md is stale
Everything comes from click's own help records (usage line, option names, metavars, shown
defaults), rendered at a fixed width so the file does not depend on the terminal.
"""

from __future__ import annotations

import inspect
import sys
from pathlib import Path

import click

from gpubench.cli import cli

DOC = Path(__file__).resolve().parent.parent / "docs" / "cli.md"
WIDTH = 100  # the width cli/app.py's CONTEXT gives --help; the usage line wraps the same way
REGENERATE = "python scripts/cli_reference.py"
HEADER = f"""# gpubench command-line reference

Generated from the click commands by `{REGENERATE}`; do not edit by hand
(tests/test_docs.py fails when this file is stale). The same text is `gpubench COMMAND --help`.
The [user guide](guide.md) says how the commands fit together.
"""


def render(root: click.Command = cli, name: str = "gpubench") -> str:
    """The whole reference as markdown: the root, then every command, depth first, by name."""
    parts = [HEADER]
    for path, command, ctx in walk(root, name):
        parts.append(command_section(path, command, ctx))
    return "\n".join(parts).rstrip("\n") + "\n"


def walk(command: click.Command, name: str, parent: click.Context | None = None):
    """(path, command, context) for a command and, if it is a group, all below it, sorted."""
    settings = {**command.context_settings, "terminal_width": WIDTH, "max_content_width": WIDTH}
    ctx = click.Context(command, info_name=name, parent=parent, **settings)
    yield ctx.command_path, command, ctx
    if isinstance(command, click.Group):
        for sub_name in sorted(command.list_commands(ctx)):
            sub = command.get_command(ctx, sub_name)
            if sub is not None and not sub.hidden:
                yield from walk(sub, sub_name, ctx)


def command_section(path: str, command: click.Command, ctx: click.Context) -> str:
    """One command: heading, usage line, its help text, then a table of its options."""
    level = "#" * min(2 + path.count(" ") - 1, 4) if " " in path else "##"
    lines = [f"{level} `{path}`", "", "```", command.get_usage(ctx).strip(), "```", ""]
    help_text = help_paragraphs(command.help or "")
    if help_text:
        lines += [help_text, ""]
    options = [p for p in command.get_params(ctx) if isinstance(p, click.Option)]
    records = [r for p in options if (r := p.get_help_record(ctx))]
    arguments = [p.make_metavar(ctx) for p in command.params if isinstance(p, click.Argument)]
    if arguments:
        lines += ["Arguments: " + ", ".join(f"`{a}`" for a in arguments), ""]
    if records:
        lines += ["| option | what it does |", "|---|---|"]
        lines += [f"| `{cell(names)}` | {cell(text)} |" for names, text in records]
        lines.append("")
    return "\n".join(lines)


def help_paragraphs(text: str) -> str:
    """click's help text as markdown paragraphs: `\\b` (keep-as-is) blocks become code."""
    out, blocks = [], inspect.cleandoc(text).split("\n\n")
    for block in blocks:
        if block.startswith("\b\n"):
            out.append("```\n" + block[2:] + "\n```")
        else:
            out.append(" ".join(line.strip() for line in block.splitlines()))
    return "\n\n".join(out)


def cell(text: str) -> str:
    """A table cell: one line, pipes escaped (GitHub tables split on a bare `|`)."""
    return " ".join(text.split()).replace("|", "\\|")


def main(argv: list[str]) -> int:
    text = render()
    if "--check" in argv:
        if DOC.exists() and DOC.read_text() == text:
            return 0
        print(f"{DOC} is stale: run `{REGENERATE}`", file=sys.stderr)
        return 1
    DOC.write_text(text)
    print(f"wrote {DOC}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
