"""The docs that must follow the code: the generated CLI reference, and a README kept short.

docs/cli.md is written by scripts/cli_reference.py from the click commands; a change to an
option's name, default or help without regenerating it fails here, with the command to run.
The README is the newcomer's page (issue 24): the manual lives in docs/guide.md, and a README
that grows past 200 lines is turning back into one.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README_MAX_LINES = 200


def load_generator():
    """scripts/ is not a package: load the generator from its file, as `python` would run it."""
    from conftest import load_script

    return load_script("scripts/cli_reference.py")


def test_cli_reference_is_current():
    generator = load_generator()
    written = (ROOT / "docs" / "cli.md").read_text()
    assert written == generator.render(), (
        f"docs/cli.md is stale (the click commands changed): run `{generator.REGENERATE}` "
        "and commit docs/cli.md")


def test_cli_reference_names_every_command_and_option():
    """The generator walks the whole tree: each command has a section, each option a row."""
    from gpubench.cli import cli

    text = load_generator().render()
    for name, command in cli.commands.items():
        assert f"`gpubench {name}`" in text
        for param in command.params:
            for opt in getattr(param, "opts", []) if param.param_type_name == "option" else []:
                assert opt in text, f"{name}: option {opt} missing from the reference"


def test_cli_reference_cells_stay_in_their_table():
    """A bare `|` in help text (`--device [auto|cuda|cpu]`) would split a row into columns."""
    for line in load_generator().render().splitlines():
        if line.startswith("| `"):
            assert len(re.findall(r"(?<!\\)\|", line)) == 3, line


def test_readme_stays_short():
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) <= README_MAX_LINES, (
        f"README.md has {len(lines)} lines (at most {README_MAX_LINES}): move the detail to "
        "docs/guide.md and link it")


def test_readme_test_command_is_the_one_ci_runs():
    """Set-up command 2 of the README is what .ci/run executes, character for character."""
    readme = (ROOT / "README.md").read_text()
    ci_command = (ROOT / ".ci" / "run").read_text().strip().splitlines()[-1]
    assert ci_command.startswith("pip install torch==")
    assert ci_command in readme


@pytest.mark.parametrize("doc", sorted(p.relative_to(ROOT).as_posix() for p in
                                       [ROOT / "README.md", *(ROOT / "docs").rglob("*.md")]))
def test_relative_links_resolve(doc):
    """Moving a doc (perf-notes.md into docs/journal/) must not leave a link behind."""
    path = ROOT / doc
    for target, anchor in re.findall(r"\]\(([^)#\s]*)(?:#([^)\s]*))?\)", path.read_text()):
        if "://" in target or target.startswith("mailto:"):
            continue
        linked = path.parent / target if target else path
        assert linked.exists(), f"{doc}: broken link to {target}"
        if anchor and linked.suffix == ".md":
            assert anchor in heading_anchors(linked), f"{doc}: no heading #{anchor} in {target}"


def heading_anchors(path: Path) -> set[str]:
    """GitHub's anchors: a heading lower-cased, punctuation dropped, spaces made hyphens."""
    text = re.sub(r"```.*?```", "", path.read_text(), flags=re.S)
    headings = re.findall(r"^#{1,6} (.+)$", text, flags=re.M)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings}
