"""`gpubench run`: plan the points, run them through a worker, show and save the results."""

from __future__ import annotations

import json
import random
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console

from gpubench import errors
from gpubench import results as R
from gpubench.config import RunConfig
from gpubench.discovery import family_dirs, load_family, resolve_families
from gpubench.envinfo import host_env
from gpubench.machine import describe, detect_machine
from gpubench.plan import plan_points
from gpubench.report.files import new_run_dir, results_document, write_results
from gpubench.report.live import RunDisplay, failure_summary, skipped_summary
from gpubench.runner import Runner, RunSettings


@dataclass
class RunCommand:
    config: RunConfig
    device: str
    out: Path | None
    as_json: bool
    console: Console
    ncu: bool = False
    trace: bool = False

    def execute(self) -> int:
        machine = detect_machine(self.device)
        dirs = resolve_families(self.config.families, family_dirs(self.config.kernels_dirs))
        families = [load_family(name, folder) for name, folder in dirs.items()]
        seed = self.config.seed if self.config.seed is not None else new_seed()
        sizes = {f.name: self.config.sizes_for(f.name) for f in families}
        points = plan_points(families, machine, {k: v for k, v in sizes.items() if v},
                             self.config.dtypes, self.config.variants, seed)
        run_dir = self.out or new_run_dir(Path("profiles"), list(dirs))
        run_dir.mkdir(parents=True, exist_ok=True)
        meta = {**host_env(), "run_dir": str(run_dir), "seed": seed,
                "timing": vars(self.config.timing), "modes": list(self.config.modes),
                "timeout_s": self.config.timeout_s,
                "started": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
        self.console.print(f"gpubench: {len(points)} points of {', '.join(dirs)}. "
                           f"{describe(machine)}")
        settings = RunSettings(machine.device, run_dir, self.config.timing, self.config.modes,
                               self.config.remeasure_throttled, self.config.timeout_s,
                               self.config.build_timeout_s)
        started = time.perf_counter()
        runner = Runner(settings)
        save = lambda: write_results(run_dir, {**meta, "wall_s": time.perf_counter() - started},  # noqa: E731
                                     runner.env, runner.results)
        families_by_name = {f.name: f for f in families}

        def on_group(group: list[R.Result]) -> None:
            if self.ncu:
                self._ncu_summaries(group, families_by_name[group[0].family], machine, run_dir)
            save()

        display = RunDisplay(self.console, len(points), {f.name: f.size_name for f in families},
                             on_group=on_group, show_progress=not self.as_json)
        runner.callbacks = display.callbacks()
        try:
            with display:
                runner.run(points)
        except KeyboardInterrupt:
            paths = save()
            self.console.print(f"interrupted: results so far in {paths[0].parent}")
            return errors.EXIT_INTERRUPTED
        if self.trace:
            self._trace(points, runner.results, machine, run_dir)
        paths = save()
        self._epilogue(runner.results, paths, time.perf_counter() - started)
        if self.as_json:
            print_json(results_document(meta, runner.env, runner.results))
        return errors.EXIT_OK if R.exit_status(runner.results) else errors.EXIT_VARIANT_FAILED

    def _trace(self, points, results: list[R.Result], machine, run_dir: Path) -> None:
        """`--trace`: the passing points again, a few calls each, under torch.profiler."""
        from gpubench.commands.trace import show_trace, trace_points

        passed = {(r.family, r.variant, r.size, r.dtype) for r in results if r.passed}
        chosen = [p for p in points
                  if (p.family.name, p.variant.name, p.size, p.dtype) in passed]
        if not chosen:
            self.console.print("--trace: no passing variant to trace")
            return
        try:
            show_trace(trace_points(chosen, machine.device, run_dir), self.console)
        except errors.GpubenchError as exc:
            self.console.print(f"--trace: {exc}", soft_wrap=True)

    def _ncu_summaries(self, group: list[R.Result], family, machine, run_dir: Path) -> None:
        """`--ncu`: profile each passing variant of the group once and show the short form."""
        from gpubench.commands.ncu import NcuOptions, ncu_summary, profile_family
        from gpubench.report.ncu_view import summary_table

        if not machine.has_cuda:
            self.console.print("  --ncu: skipped, Nsight Compute needs a CUDA GPU")
            return
        first_mode = group[0].mode
        passed = [r for r in group if r.passed and r.mode == first_mode]
        variants = [family.variant(r.variant) for r in passed]
        try:
            outcomes = profile_family(family, variants, group[0].size, group[0].dtype,
                                      run_dir, NcuOptions(), passed[0].seed if passed else 0)
        except errors.GpubenchError as exc:  # ncu missing: say so once per group, go on
            self.console.print(f"  --ncu: {exc}", soft_wrap=True)
            return
        summaries = {o.variant: ncu_summary(o) for o in outcomes}
        for result in group:
            result.ncu = summaries.get(result.variant)
        self.console.print(summary_table(summaries))

    def _epilogue(self, results: list[R.Result], paths: list[Path], wall_s: float) -> None:
        for line in skipped_summary(results):
            self.console.print(f"[dim]{line}[/]")
        for line in failure_summary(results):
            self.console.print(f"[red]{line}[/]")
        first_mode = results[0].mode if results else ""
        compile_s = sum(r.compile_s or 0.0 for r in results
                        if r.kind == "cuda" and r.mode == first_mode)
        self.console.print(f"wall time {wall_s:.1f} s (C++/CUDA builds {compile_s:.1f} s); "
                           f"results: {paths[0]} and {paths[1].name}")


def new_seed() -> int:
    """A fresh seed per run, recorded in the results so the run can be repeated."""
    return random.SystemRandom().randrange(0, 2**31 - 2)


def print_json(document: dict) -> None:
    sys.stdout.write(json.dumps(document, indent=2, default=str) + "\n")
    sys.stdout.flush()
