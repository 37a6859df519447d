"""`gpubench compare`'s terminal output at 80 and 120 columns against golden text, from
run documents recorded on an H200 (tests/fixtures/compare/README.md): grouped by family
and dtype, one line a point, only the reason wrapping. Regenerate:
GPUBENCH_UPDATE_GOLDEN=1."""

import os

import pytest
from rich.console import Console

from conftest import FIXTURES, REPO
from gpubench.analysis.comparison import compare_runs
from gpubench.report.compare_view import compare_table
from gpubench.store.folder import read_run

GOLDEN = REPO / "tests" / "golden"
H200 = FIXTURES / "compare" / "h200"
# square: a 32-thread-block CUDA kernel (SLOWER) among unchanged variants, one mode;
# bind: gpubench's bindings at -O1, then -O3, two families and two modes (wall drifts).
PAIRS = {"square": ("square-a2", "square-b32"), "bind": ("bind-o1", "bind-o3")}


def render(base: str, new: str, width: int) -> str:
    result = compare_runs(read_run(H200 / base), read_run(H200 / new))
    with open(os.devnull, "w") as sink:
        console = Console(width=width, record=True, color_system=None, file=sink)
        console.print(compare_table(result, f"H200/{base}", f"H200/{new}"))
        return console.export_text()


@pytest.mark.parametrize("width", [80, 120])
@pytest.mark.parametrize("pair", sorted(PAIRS))
def test_compare_matches_golden_text(pair, width):
    text = render(*PAIRS[pair], width)
    golden = GOLDEN / f"compare_{pair}_{width}.txt"
    if os.environ.get("GPUBENCH_UPDATE_GOLDEN"):
        golden.write_text(text)
    assert text == golden.read_text()
    lines = text.splitlines()
    assert max(len(line.rstrip()) for line in lines) <= width
    assert lines[-1].startswith("compare: ") and "; regression: " in lines[-1]


def test_one_line_a_point_at_80_columns_but_for_the_reason():
    lines = render(*PAIRS["square"], 80).splitlines()
    points = [line for line in lines if " us " in line]
    assert len(points) == 6  # every point's figures on one line, and its short reason too
    assert all(line.rstrip().endswith(("%", "SLOWER", "SAME")) for line in points)
    assert sum(line.startswith("2^2") for line in points) == 2  # axis values once a shape


def test_long_reasons_at_80_columns_are_notes_not_a_column_folded_letter_by_letter():
    """Issue 52: at 80 columns `compare` gave its why column a few letters and folded each
    reason down it (10 points took 106 lines). Runs of a busy CPU host, whose every reason
    is long (tests/fixtures/compare/cpu-busy)."""
    busy = FIXTURES / "compare" / "cpu-busy"
    result = compare_runs(read_run(busy / "mm1"), read_run(busy / "mm2"))
    with open(os.devnull, "w") as sink:
        console = Console(width=80, record=True, color_system=None, file=sink)
        console.print(compare_table(result, "mm1", "mm2", width=80))
        lines = console.export_text().splitlines()
    points = [line for line in lines if " us " in line]
    assert len(points) == 4 and all(line.rstrip().endswith("]") for line in points)
    notes = [line for line in lines if line.startswith("  [")]
    assert len(notes) == 4 and all("host busy in BASE" in note for note in notes)
    assert max(len(line) for line in lines) <= 80
