"""Each point of an A/B as a pair task on a lane, with a progress bar: what `ab` and
`run --watch`'s pairing share (commands/ab.py, commands/pairing.py)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from gpubench import safe_text
from gpubench.analysis.aa import point_label
from gpubench.run.lanes.lane import Lane
from gpubench.run.plan import Point
from gpubench.timing.settings import TimingSettings


def measure_pairs(lane: Lane, points: list[Point], base: Path, timing: TimingSettings,
                  outcomes: list, console: Console,
                  thresholds: dict[str, float] | None = None) -> None:
    """Each point as a pair task on `lane` (NEW: the point's family folder; BASE: `base`),
    its outcome into `outcomes` as it comes (what Ctrl-C leaves is kept)."""
    progress = Progress(TextColumn("{task.description}"), BarColumn(),
                        MofNCompleteColumn(), TimeElapsedColumn(), console=console,
                        transient=True)
    with progress:
        bar = progress.add_task("pairs", total=len(points))
        for index, point in enumerate(points):
            progress.update(bar, description=safe_text.terminal(
                f"{point.variant.name} {point.shape.label()} {point.dtype}"))
            prefix = point_label(point.variant.name, point.shape.text(), point.dtype, "")
            own = [t for label, t in (thresholds or {}).items() if label.startswith(prefix)]
            aimed = replace(timing, target_rel_ci=min(own)) if own else timing
            task = replace(point.task(index + 1, aimed), base_dir=str(base))
            # two builds and two checks: twice a point's limits
            outcomes[index] = lane.execute(task, 2 * timing.timeout_s,
                                           2 * timing.build_timeout_s)
            progress.advance(bar)
