"""`ab`'s table at 120 columns: the why column holds a note's number and each distinct
reason is said once under the table (it wrapped a word or two a line, and repeated the
host-load sentence on every row, when it sat in the row)."""

from __future__ import annotations

import io
from dataclasses import replace

from rich.console import Console

from gpubench.records.ab import PairVerdict
from gpubench.report.ab_view import ab_markdown, ab_table

BUSY = ("host busy: other processes kept 1.0 CPUs busy meanwhile (pytest 0.6, cc1plus 0.4); "
        "a change within 2x of it is not decided (as `compare`)")
WIDE = ("the interval [-1.20%, +2.40%] is wider than +-0.5% after the whole --max-time: "
        "more --max-time narrows it")


def verdicts() -> list[PairVerdict]:
    def one(variant, shape, reason, verdict="UNSURE"):
        return PairVerdict(variant, "float32", shape, "cold", False, verdict, ratio=1.004,
                           low=0.988, high=1.024, blocks=812, base_median_s=1.2e-3,
                           new_median_s=1.21e-3, reason=reason)

    return [one("cuda_tiled", "M=4096,N=4096,K=4096", BUSY),
            one("triton_block", "M=4096,N=4096,K=4096", BUSY),
            one("torch", "M=1024,N=1024,K=1024", WIDE),
            one("cuda_naive", "M=1024,N=1024,K=1024", "", verdict="SAME"),
            one("cuda_tiled", "M=1024,N=1024,K=1024", BUSY),
            replace(one("torch", "M=4096,N=4096,K=4096", BUSY), control=True)]


def rendered(width: int = 120) -> str:
    out = io.StringIO()
    Console(file=out, width=width, highlight=False, emoji=False).print(
        ab_table(verdicts(), "ab matmul: NEW working tree against BASE HEAD on CPU", 0.005))
    return out.getvalue()


def test_at_120_columns_no_line_is_wider_and_each_reason_is_said_once():
    text = rendered()
    assert max(len(line) for line in text.splitlines()) <= 120
    flat = " ".join(text.split())  # a note may wrap; its words stay in order
    assert flat.count("host busy: other processes") == 1 and flat.count("narrows it") == 1
    assert BUSY in flat and WIDE in flat


def test_a_row_is_one_line_and_names_its_note():
    rows = [line for line in rendered().splitlines() if "float32" in line]
    assert len(rows) == 6
    assert [row.rstrip().split()[-1] for row in rows] == ["[1]", "[1]", "[2]", "SAME", "[1]",
                                                          "[1]"]
    assert all(v.shape in row for v, row in zip(verdicts(), rows, strict=True))  # unwrapped


def test_markdown_numbers_the_reasons_once_too():
    text = ab_markdown(verdicts(), "ab matmul")
    assert text.count("host busy") == 1 and text.count("narrows it") == 1
    assert "| [1] |" in text and "| [2] |" in text
    assert text.splitlines()[-4:] == [f"1. {BUSY}", f"2. {WIDE}", "", "</details>"]


def test_the_pr_comment_keeps_its_marker_and_folds_the_unchanged_points():
    """Issue 63: a CI job finds its comment by the first line, which no run changes and
    no family name can break; the changed points come before the fold."""
    from gpubench.report.ab_view import marker_line

    first = ab_markdown(verdicts(), "ab matmul 1f2e3d", "matmul").splitlines()
    again = ab_markdown(verdicts()[::-1], "ab matmul 9a8b7c", "matmul").splitlines()
    assert first[0] == again[0] == "<!-- gpubench ab: matmul -->"
    assert marker_line("x --> <script>") == "<!-- gpubench ab: x-script -->"
    fold = first.index("<details><summary>All 6 points</summary>")
    changed = [line for line in first[:fold] if line.startswith("| ") and "variant" not in line]
    assert all(("SLOWER" in line or "FASTER" in line or "FAILED" in line
                or "SUSPECT" in line) for line in changed)
    assert first[-1] == "</details>"



def test_the_gate_passes_a_point_timed_on_both_sides_but_short_of_blocks():
    """An unchanged point that ran out of time before 30 blocks is UNSURE, not an A/B of
    nothing: it was timed on both sides. A point with no pairs at all is nothing to gate on."""
    from gpubench.analysis.ab import gate_reasons

    short = PairVerdict("work", "float32", "n=65536", "cpu", True, "UNSURE", blocks=20,
                        base_median_s=25.9e-6, new_median_s=26.5e-6,
                        reason="20 blocks of four calls; a verdict needs 30")
    assert gate_reasons([short]) == []
    untimed = PairVerdict("work", "float32", "n=65536", "cpu", True, "UNSURE",
                          reason="no pairs were timed")
    assert gate_reasons([untimed]) == [
        "no point timed on both sides (1 points): nothing to gate on"]
