"""Progress as lines when the console is not a terminal (CI logs, pipes): golden text."""

import io
import os
from pathlib import Path

from rich.console import Console

from gpubench.records import result as R
from gpubench.records.point import PointKey
from gpubench.records.shape import Shape
from gpubench.report.live import PlainProgress, RunDisplay
from gpubench.timing.measurement import Measurement

GOLDEN = Path(__file__).parent / "golden" / "piped_progress.txt"
SHAPE = Shape({"n": 1 << 20})


def row(variant, mode, median=None, status=R.OK):
    measurement = Measurement(mode, "m", [median * (1 + 0.001 * i) for i in range(21)],
                              stop_reason="converged") if median else None
    return R.Result(key=PointKey("square", variant, "float32", SHAPE, mode), kind="cuda",
                    status=status, measurement=measurement)


class FakeClock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def plain_console() -> tuple[Console, io.StringIO]:
    sink = io.StringIO()
    return Console(file=sink, force_terminal=False, width=200, color_system=None), sink


def test_lines_for_points_and_long_phases_only():
    console, sink = plain_console()
    clock = FakeClock()
    lines = PlainProgress(console, total=3, clock=clock)
    label = "square/torch n=2^20 float32"
    for phase in ("build", "prepare", "check", "time"):  # all quick: nothing said
        lines.phase(label, phase)
    lines.point_done([row("torch", "cold", 4.1e-6), row("torch", "warm", 3.2e-6)])
    label = "square/cuda n=2^20 float32"
    lines.phase(label, "build")
    clock.now += 3.5
    lines.announce()  # what the timer does after QUIET_S
    clock.now += 38.0
    lines.phase(label, "prepare")
    lines.phase(label, "check")
    lines.point_done([row("cuda", "cold", status=R.FAIL), row("cuda", "warm", status=R.FAIL)])
    lines.phase("square/triton n=2^20 float32", "check")
    clock.now += 5.0
    lines.announce()
    lines.announce()  # said once only
    clock.now += 1.0
    lines.point_done([row("triton", "cold", 4.0e-6), row("triton", "warm", 3.1e-6)])
    lines.close()
    text = sink.getvalue()
    if os.environ.get("GPUBENCH_UPDATE_GOLDEN"):
        GOLDEN.write_text(text)
    assert text == GOLDEN.read_text()


def test_a_terminal_gets_the_bar_and_no_lines():
    console = Console(file=io.StringIO(), force_terminal=True, width=100)
    assert RunDisplay(console, 3).lines is None
    piped, _ = plain_console()
    assert RunDisplay(piped, 3).lines is not None
    assert RunDisplay(piped, 3, show_progress=False).lines is None  # --json: tables only


def test_the_timer_announces_a_long_phase_by_itself():
    console, sink = plain_console()
    lines = PlainProgress(console, total=1)
    lines.QUIET_S = 0.05
    lines.phase("square/cuda n=2^20 float32", "build")
    lines.timer.join(timeout=5)
    lines.point_done([row("cuda", "cold", 5e-6)])
    text = sink.getvalue()
    assert "square/cuda n=2^20 float32: build ..." in text
    assert "build done in" in text and "[1/1] square/cuda" in text


def test_the_failure_lines_list_suspect_rows_with_their_reason():
    from dataclasses import replace

    from gpubench.report.live import failure_summary, point_line

    cheat = replace(row("cached", "cold", 1e-9), status=R.SUSPECT,
                    error="0.0 ns: faster than any launch")
    rows = [row("torch", "cold", 5e-6), cheat, row("wrong", "cold", status=R.FAIL)]
    assert failure_summary(rows) == [
        "SUSPECT square/cached n=2^20 float32: 0.0 ns: faster than any launch",
        "FAIL square/wrong n=2^20 float32: None"]
    assert point_line([cheat]) == "square/cached n=2^20 float32: cold SUSPECT"


def test_a_phase_that_timed_out_is_not_logged_as_done():
    """Issue 26: the point's status ends the phase line ("check ended in TIMEOUT")."""
    console, sink = plain_console()
    clock = FakeClock()
    lines = PlainProgress(console, total=1, clock=clock)
    lines.phase("faulty/hang n=4096 float32", "check")
    clock.now += 8.2
    lines.announce()
    lines.point_done([row("hang", "cold", status=R.TIMEOUT)])
    lines.close()
    text = sink.getvalue()
    assert "check ended in TIMEOUT after 8.2 s" in text, text
    assert "check done" not in text
