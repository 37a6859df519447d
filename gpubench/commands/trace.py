"""`gpubench trace` (and `run --trace`): a Chrome trace of every variant, and what it shows.

The tracing runs in a worker process (tracing.py) under a timeout, like every
other GPU work of gpubench; this module plans it; tools/trace_points.py runs it,
reads the trace back with the pure parser (timing/chrome_trace.py) and shows it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from rich.markup import escape

from gpubench import errors
from gpubench.commands.command import Command
from gpubench.families.discovery import family_dirs, load_family, resolve_families
from gpubench.records.shape import ShapeChoice
from gpubench.report.files import new_run_dir
from gpubench.run.machine import describe, detect_machine
from gpubench.run.plan import plan_points
from gpubench.tools.trace_points import show_trace, trace_points


@dataclass(frozen=True)
class TraceRequest:
    """Everything `gpubench trace` was asked for, built once by the CLI."""

    families: tuple[str, ...] = ()  # FAMILIES; (): all
    # --sizes/--shape/--axis; empty: the family's default shapes
    shapes: ShapeChoice = field(default_factory=ShapeChoice)
    dtypes: tuple[str, ...] | None = None  # --dtype; None: float32
    variants: tuple[str, ...] = ()  # --variants; (): all (the baseline always)
    kernels_dirs: tuple[Path, ...] = ()
    iterations: int = 5  # calls of each variant recorded in the trace
    compress: bool = False  # --gzip: trace.json.gz
    timeout_s: float = 600.0  # the whole tracing
    out: Path | None = None  # --out; None: profiles/<run-id>
    device: str = "auto"


class TraceCommand(Command[TraceRequest]):
    def execute(self) -> int:
        request = self.request
        machine = detect_machine(request.device)
        dirs = resolve_families(request.families, family_dirs(request.kernels_dirs))
        families = [load_family(name, folder) for name, folder in dirs.items()]
        choices = {f.name: request.shapes for f in families}
        points = plan_points(families, machine, choices, request.dtypes, request.variants)
        run_dir = request.out or new_run_dir(Path("profiles"), [*dirs, "trace"])
        run_dir.mkdir(parents=True, exist_ok=True)
        self.console.print(f"tracing {sum(1 for p in points if not p.skip)} variant(s) with "
                           f"torch.profiler, {request.iterations} calls each. "
                           f"{describe(machine)}")
        outcome = trace_points(points, machine.device, run_dir, request.iterations,
                               request.timeout_s, request.compress)
        show_trace(outcome, self.console)
        skipped = sorted({f"{p.variant.name}: {p.skip}" for p in points if p.skip})
        for line in skipped:
            self.console.print(f"[dim]skipped {escape(line)}[/]")
        failed = [s for s in outcome.statuses.values() if s != "ok"]
        return errors.EXIT_VARIANT_FAILED if failed else errors.EXIT_OK


execute = TraceCommand.entry  # the module's one entry (command.py): cli/app.py calls it
