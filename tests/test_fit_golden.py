"""The ncu view at 80 and 160 columns, against golden text (regenerate:
GPUBENCH_UPDATE_GOLDEN=1); `gpubench list`'s are in test_listing_golden.py.

At either width no line is wider than the terminal, no cell is cut ("…"), and no word is
broken across lines: text wraps only at spaces (a word longer than a whole line, a URL, is
the one exception). At 160 columns nothing is left out.
"""

from __future__ import annotations

import os

import pytest
from rich.console import Console, Group

from conftest import FIXTURES, REPO
from gpubench.tools.ncu import view as ncu_view
from gpubench.tools.ncu.points import Profiled, ncu_summary

GOLDEN = REPO / "tests" / "golden"
WIDTHS = [80, 160]
REPORT = FIXTURES / "ncu" / "h200" / "square_two_launches_full.ncu-rep"


def render(renderable, width: int) -> str:
    with open(os.devnull, "w") as sink:
        console = Console(width=width, record=True, color_system=None, file=sink)
        console.print(renderable)
        return console.export_text()


def check_golden(text: str, name: str) -> None:
    golden = GOLDEN / name
    if os.environ.get("GPUBENCH_UPDATE_GOLDEN"):
        golden.write_text(text)
    assert text == golden.read_text()


def assert_fits(text: str, width: int, sources: list[str]) -> None:
    """Within `width`, nothing cut, and every word of `sources` whole on some line."""
    lines = text.splitlines()
    assert all(len(line) <= width for line in lines)
    assert "…" not in text  # rich's ellipsis: a cut cell
    # Words as long as a line (less the indent and borders around them) may be folded.
    words = {word for source in sources for word in source.split() if len(word) < width - 10}
    broken = [word for word in words if not any(word in line for line in lines)]
    assert not broken, broken


# ---------------------------------------------------------------- the ncu view


@pytest.fixture(scope="module")
def launches():
    module = pytest.importorskip("ncu_report")
    from gpubench.tools.ncu.report import load_profiles

    return load_profiles(REPORT, module)


def ncu_views(launches) -> Group:
    """What `gpubench ncu --import` shows of the two launches, the comparison `gpubench ncu`
    adds for several variants, and the summary of `gpubench run --ncu`."""
    big, small = launches
    summaries = {"big": ncu_summary(Profiled("big", REPORT, [big])),
                 "small": ncu_summary(Profiled("small", REPORT, [small])),
                 "broken": {"error": "ncu ran past --timeout 600 s and was killed (log: "
                                     "profiles/run/square-broken-n=1024.ncu.log)"}}
    return Group(*(ncu_view.profile_view(p) for p in launches),
                 ncu_view.comparison_table({"big": big, "small": small}),
                 ncu_view.summary_table(summaries))


@pytest.mark.parametrize("width", WIDTHS)
def test_ncu_view_fits_the_terminal(launches, width):
    text = render(ncu_views(launches), width)
    check_golden(text, f"ncu_view_{width}.txt")
    rules = [rule for profile in launches for rule in profile.hints()]
    sources = [part for rule in rules
               for part in (rule.message, rule.heading, ncu_view.focus_text(rule))]
    assert_fits(text, width, sources)
    assert text.count("focus:") == sum(bool(rule.focus_metrics) for rule in rules)
    for heading in ("ncu hints: square_kernel", "variants side by side",
                    "from one variant to the next", "one profiled call per variant"):
        assert heading in text
    flat = " ".join(text.split())
    if width == 80:
        assert "Not shown at 80 columns: kernel" in flat
    else:
        assert "Not shown" not in text


def test_ncu_view_is_compact_at_80_columns(launches):
    """The two launches' views took 673 lines at 80 columns when what ncu says was a column
    of its own; as entries under each hint they take well under a third of that."""
    text = render(Group(*(ncu_view.profile_view(p) for p in launches)), 80)
    assert len(text.splitlines()) < 200
