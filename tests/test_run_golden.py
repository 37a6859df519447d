"""`gpubench run`'s terminal output from recorded runs (regenerate: GPUBENCH_UPDATE_GOLDEN=1):
one legend per run, the same columns in every table, notes wrapped to the width, and the
Triton interpreter's rows correctness-only."""

import io
import os
import re

import pytest
from rich.console import Console

from conftest import REPO
from gpubench.records import events as E
from gpubench.report.live import RunDisplay, RunNotes, hanging
from gpubench.report.table import groups_of
from gpubench.store.folder import read_run

GOLDEN = REPO / "tests" / "golden"
RUNS = {"cpu": REPO / "tests" / "fixtures" / "run" / "cpu-softmax-vadd.json",
        "h200": REPO / "tests" / "fixtures" / "report" / "h200-matmul-k.json"}


def render(path, width: int, legend: bool = True) -> str:
    """What `gpubench run` prints from its first worker's hello to the end of the tables."""
    run = read_run(path)
    sink = io.StringIO()
    console = Console(file=sink, width=width, color_system=None, force_terminal=False)
    names = tuple(dict.fromkeys(r.variant + (" (base)" if r.baseline else "")
                                for r in run.results))
    display = RunDisplay(console, len(run.results), show_progress=False, legend=legend,
                         variants=names)
    listeners = (display, RunNotes(console))
    with display:
        for event in (E.WorkerStarted(dict(run.env)), *map(E.GroupDone, groups_of(run.results))):
            for listener in listeners:
                listener(event)
    return sink.getvalue()


def header_lines(text: str) -> list[str]:
    """Each table's header row, its column names only (widths vary with the cells)."""
    return [" ".join(re.split(r"\s*┃\s*", line.strip("┃ "))) for line in text.splitlines()
            if line.startswith("┃")]


@pytest.mark.parametrize("run", RUNS)
@pytest.mark.parametrize("width", [80, 120])
def test_run_output_matches_golden(run, width):
    text = render(RUNS[run], width)
    golden = GOLDEN / f"run_{run}_{width}.txt"
    if os.environ.get("GPUBENCH_UPDATE_GOLDEN"):
        golden.write_text(text)
    assert text == golden.read_text()
    assert all(len(line) <= width for line in text.splitlines())
    assert "…" not in text  # no cell cut
    assert text.count("median of n samples") == 1  # one legend, after the last table
    words = " ".join(text.split())  # the legend wraps anywhere
    assert words.endswith("has them).") or "Not shown" not in text
    assert len(set(header_lines(text))) == 1  # the same columns in every table


def test_interpreter_rows_are_correctness_only():
    text = render(RUNS["cpu"], 120)
    triton = [line for line in text.splitlines() if line.startswith("│ triton ")]
    assert len(triton) == 4
    assert all("PASS" in line and "interp." in line for line in triton)
    assert not any(re.search(r"\d(\.\d+)?(e-\d+)?x|%|\d ms|\d s\b", line) for line in triton)
    assert "triton: the host clock" not in text  # no timing warning about its time
    assert "interp.: Triton interpreter (no GPU)" in " ".join(text.split())


def test_no_legend():
    assert "median of n samples" not in render(RUNS["cpu"], 80, legend=False)


def test_a_long_note_wraps_with_a_hanging_indent():
    note = "torch: " + " ".join(["word"] * 60) + "\n    out.copy_(x + nope);"
    lines = hanging(note, 80).splitlines()
    assert lines[0].startswith("  torch: ") and all(len(x) <= 80 for x in lines)
    assert all(x.startswith("    word") for x in lines[1:-1])
    assert lines[-1] == "    out.copy_(x + nope);"  # code is not re-flowed
    long_path = "/a/" + "x" * 100
    assert long_path in hanging(f"see {long_path}", 80)  # a path stays whole
