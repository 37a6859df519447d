"""Hostile text through the real command line: a family whose folder name, variant
descriptions and error carry terminal escapes, rich markup, HTML, spreadsheet formulas,
markdown breakers and 200,000 characters. Wherever a text is shown it is harmless (the
terminal, report.html, results.csv, markdown), and results.json keeps it whole."""

import csv
import json
import shutil
from html.parser import HTMLParser
from pathlib import Path

from conftest import FAST, TEST_KERNELS

# Every payload at once: a formula, a pipe, an HTML comment and script, a title escape,
# a colour, a newline.
HOSTILE_NAME = "=1+1|x<!--<script>\x1b]0;T\x07\x1b[31m\nz"
ACTING = ("\x1b", "\x07", "\x9b", "\u202e", "\r")
FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
SCRIPTS_IN_A_PAGE = 5  # the specs' JSON, three vendored libraries, the page's own script


def hostile_family(root: Path) -> Path:
    kernels = root / "kd"
    shutil.copytree(TEST_KERNELS / "injection", kernels / HOSTILE_NAME)
    return kernels


def assert_harmless_on_a_terminal(output: str) -> None:
    assert not [c for c in ACTING if c in output], ascii(output[:2000])
    assert "Traceback" not in output


class ScriptCounter(HTMLParser):
    def __init__(self):
        super().__init__()
        self.opened, self.closed, self.json = 0, 0, []
        self._in_json = False

    def handle_starttag(self, tag, attrs):
        if tag == "script":
            self.opened += 1
            self._in_json = dict(attrs).get("type") == "application/json"

    def handle_endtag(self, tag):
        if tag == "script":
            self.closed += 1
            self._in_json = False

    def handle_data(self, data):
        if self._in_json:
            self.json.append(data)


def test_hostile_text_is_harmless_where_shown_and_whole_in_results_json(gpubench, tmp_path):
    kernels = hostile_family(tmp_path)
    done = gpubench("run", HOSTILE_NAME, "--kernels-dir", str(kernels), "--device", "cpu",
                    *FAST, "--report", "--markdown")
    assert done.code == 1, done.output[:3000]
    # the terminal: nothing acts, the 200,000 characters are cut with a pointer to the rest
    assert_harmless_on_a_terminal(done.output)
    assert len(done.output) < 40_000
    assert "more characters; full text in" in done.output
    run_dir = next((tmp_path / "profiles").iterdir())
    assert run_dir.name.isascii() and "<" not in run_dir.name and "\n" not in run_dir.name
    # results.json: everything as it was
    rows = done.by_variant(run_dir)
    assert rows["raises"]["family"] == HOSTILE_NAME
    assert len(rows["raises"]["error"]) > 200_000 and "\x1b]0;owned" in rows["raises"]["error"]
    # results.csv: Python's csv with its default limits reads it; no cell is a formula
    with open(run_dir / "results.csv", newline="") as file:
        table = list(csv.reader(file))
    assert len(table) == 3
    for cell in (c for row in table for c in row):
        assert not (cell.startswith(FORMULA_START) and not _number(cell)), cell[:80]
    # the name made safe: a formula quoted, terminal escapes written out (`cat results.csv`
    # must not set the window title; issue 52 found the raw ESC bytes kept)
    assert table[1][0] == "'" + HOSTILE_NAME.replace("\x1b", "\\x1b").replace("\x07", "\\x07")
    assert not [c for c in ACTING if c in (run_dir / "results.csv").read_text()]
    # report.html: still five script elements, the specs' JSON parses
    page = ScriptCounter()
    page.feed((run_dir / "report.html").read_text())
    assert (page.opened, page.closed) == (SCRIPTS_IN_A_PAGE, SCRIPTS_IN_A_PAGE)
    specs = json.loads("".join(page.json))
    assert any(HOSTILE_NAME in str(spec.get("title")) for spec in specs.values())
    # --markdown: one heading line, one line per row, no HTML
    markdown = done.stdout[done.stdout.index("\n**") + 1:]
    assert_markdown_intact(markdown, rows=2)


def _number(cell: str) -> bool:
    try:
        float(cell)
    except ValueError:
        return False
    return True


def assert_markdown_intact(markdown: str, rows: int) -> None:
    lines = markdown.splitlines()
    assert lines[0].startswith("**") and lines[0].endswith("**"), lines[0]
    table = [line for line in lines if line.startswith("|")]
    assert len(table) == 2 + rows, table
    columns = {line.replace("\\|", "").count("|") for line in table}  # unescaped pipes
    assert len(columns) == 1 and all(line.endswith("|") for line in table), table
    assert "<" not in markdown
    assert_harmless_on_a_terminal(markdown)


def test_report_and_compare_of_a_hostile_run_stay_harmless(gpubench, tmp_path):
    kernels = hostile_family(tmp_path)
    done = gpubench("run", HOSTILE_NAME, "--kernels-dir", str(kernels), "--device", "cpu",
                    *FAST, "--out", "run")
    assert done.code == 1
    compared = gpubench("compare", "run", "run")
    assert compared.code == 0, compared.output[:3000]
    assert_harmless_on_a_terminal(compared.output)
    assert "\\x1b]0;T" in compared.stdout
    report = gpubench("report", "run", "--markdown")
    assert report.code == 0, report.output[:3000]
    assert_markdown_intact(report.stdout[report.stdout.index("\n**") + 1:], rows=2)


def test_list_shows_hostile_names_and_descriptions_as_text(gpubench, tmp_path):
    kernels = str(hostile_family(tmp_path))
    done = gpubench("list", "--kernels-dir", kernels, "--device", "cpu")
    assert done.code == 0, done.output[:3000]
    assert_harmless_on_a_terminal(done.output)
    assert "\\x1b]0;T\\x07" in done.stdout
    # the descriptions are shown by `list FAMILY`
    full = gpubench("list", HOSTILE_NAME, "--kernels-dir", kernels, "--device", "cpu")
    assert full.code == 0, full.output[:3000]
    assert_harmless_on_a_terminal(full.output)
    assert "markup[/]" in full.stdout  # shown as typed, not read as rich markup
    assert "\\x1b]0;T\\x07" in full.stdout


def test_an_error_quoting_hostile_text_is_printed_escaped(gpubench, tmp_path):
    folder = tmp_path / "kd" / "bad\x1b[2J"
    folder.mkdir(parents=True)
    (folder / "spec.py").write_text('raise ValueError("\\x1b]0;owned\\x07 [red]x[/] " + "y" * '
                                    '200_000)\n')
    done = gpubench("run", "bad\x1b[2J", "--kernels-dir", str(tmp_path / "kd"),
                    "--device", "cpu")
    assert done.code == 4, done.output[:3000]
    assert_harmless_on_a_terminal(done.output)
    assert "\\x1b]0;owned\\x07 [red]x[/]" in done.stderr
    assert len(done.stderr) < 10_000 and "more characters" in done.stderr


def test_text_that_looks_like_markup_or_emoji_codes_is_shown_as_written(gpubench):
    """An error at `square_triton.py:100:` printed `square_triton.py💯` (rich's emoji codes);
    `[bold]` in a message would have been styled."""
    done = gpubench("run", "markup_text", "--kernels-dir", str(TEST_KERNELS), *FAST)
    listed = gpubench("list", "markup_text", "--kernels-dir", str(TEST_KERNELS))
    for output in (done.output, listed.output):
        assert "\U0001f4af" not in output and "\U0001f604" not in output  # 💯 😄
    assert "square_triton.py:100:" in done.output
    assert "[bold]not bold[/bold] :smile:" in done.output
    assert "[red]not red[/red] :100:" in listed.output
