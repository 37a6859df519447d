"""`gpubench run`: plan the points, run them through a worker, show and save the run document."""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from gpubench import errors, safe_text
from gpubench.analysis.baseline_pass import BaselineComparison, baseline_level
from gpubench.analysis.comparison import compare_runs
from gpubench.commands.run_places import RunPlaces
from gpubench.commands.run_request import RunRequest, start_workers
from gpubench.families import compiled
from gpubench.families.discovery import family_dirs, load_family, refused_exits, resolve_families
from gpubench.families.leaderboard.score import score_lines
from gpubench.records import result as R
from gpubench.records.run import TIME_FORMAT, RunDocument
from gpubench.report.compare_view import summary_line
from gpubench.report.files import new_run_dir
from gpubench.report.live import (
    RunDisplay,
    RunNotes,
    failure_logs,
    failure_summary,
    skipped_summary,
)
from gpubench.report.table import group_markdown, groups_of
from gpubench.run import timeline
from gpubench.run.build_phase import build_phase_for
from gpubench.run.cluster.early import EarlyCluster, guessed_cluster
from gpubench.run.lanes.prestart import Prestart
from gpubench.run.machine import describe, detect_machine
from gpubench.run.pipeline import Pipeline, RunContext
from gpubench.run.plan import plan_points
from gpubench.run.runner import Runner
from gpubench.run.stream import EventStream
from gpubench.store.folder import RunFolder, has_results, load_run
from gpubench.store.report_page import write_report
from gpubench.store.run_saver import RunSaver
from gpubench.timing.envinfo import host_env
from gpubench.timing.revision import GPUBENCH_DIR, revisions
from gpubench.timing.timers import modes_for_device
from gpubench.tools.ncu.run_pass import NcuCheck, NcuSummary
from gpubench.tools.sanitizer.run_pass import SanitizeMarks
from gpubench.tools.trace_points import show_trace, trace_points

PROFILES = Path("profiles")
# The passes a run's groups go through, in this order (run/pipeline.py): memcheck's marks
# and ncu's durations first and the --baseline verdicts next (the table shows them all),
# then --ncu's summary (its own table follows the group's). Each is enabled by its flag.
PASSES = (SanitizeMarks, NcuCheck, BaselineComparison, NcuSummary)


def execute(request: RunRequest, console: Console, prestart: Prestart | None = None) -> int:
    """`gpubench run` once (not --watch: commands/watch.py), with the workers the CLI
    started before importing this module (commands/run_request.early_workers); the exit
    code."""
    return RunCommand(request, console, prestart=prestart).execute()


@dataclass
class RunCommand:
    request: RunRequest
    console: Console
    prestart: Prestart | None = None  # workers started before torch is imported here

    def __post_init__(self) -> None:
        self.places = RunPlaces(self.request)  # one worker, --devices, --workers, --cluster

    def execute(self) -> int:
        """Where the points run, what they are, the folder they go to, then the run itself
        (`_run`). With --json, stdout carries the JSON document alone: anything else
        written to it (a spec that prints at import, a library's chatter) goes to stderr.
        Everything entered here is left in reverse order: the folder released, then the
        cluster or the early workers stopped."""
        with contextlib.ExitStack() as stack:
            write_json = stack.enter_context(reserved_stdout()) if self.request.as_json \
                else None
            self.places.check_parallel_options()
            machine, cluster, early, run_dir = self._place(stack)
            timeline.mark("parent: machine detected (torch imported)")
            stack.enter_context(self.compiled_settings(machine))
            # Loaded before anything is measured: a wrong --baseline costs no run.
            baseline = load_run(self.request.baseline) if self.request.baseline else None
            dirs = self.family_folders()
            seed = self.request.config.seed if self.request.config.seed is not None \
                else new_seed()
            points = self.plan(dirs, machine, seed)
            timeline.mark("parent: plan made")
            run_dir = run_dir or self.request.out or new_run_dir(PROFILES, list(dirs))
            folder = RunFolder(run_dir, self.request.force,
                               None if self.request.out else PROFILES).claim()
            stack.callback(folder.release)
            if self.request.cluster == "local":
                cluster = stack.enter_context(self.places.local_cluster(machine, folder.path,
                                                                      early))
            lanes = self.places.lanes_for(machine, folder.path, cluster)
            return self._run(folder, machine, dirs, points, seed, write_json, baseline, lanes)

    def _place(self, stack: contextlib.ExitStack):
        """(machine, remote cluster, early local cluster, run folder chosen early): one
        worker started before torch was imported here (commands/run_request.py), a local
        Dask cluster started beside this process's imports and plan (run/cluster/early.py;
        it logs into the run folder, so that is chosen and made first, and removed again
        if this run made it and saved nothing there), or a remote cluster's workers."""
        if not self.request.cluster:
            if self.prestart is None:  # the CLI starts them before importing this module
                self.prestart = start_workers(self.request)
            stack.callback(self.prestart.close)
            return detect_machine(self.request.device), None, None, None
        if self.request.cluster == "local":
            run_dir = self.request.out or new_run_dir(PROFILES, list(self.family_folders()))
            shape = guessed_cluster(self.request.device, self.request.devices,
                                    self.request.workers)
            if shape is None or not (self.request.force or not has_results(run_dir)):
                return detect_machine(self.request.device), None, None, run_dir
            made = not run_dir.exists()
            run_dir.mkdir(parents=True, exist_ok=True)
            early = EarlyCluster(shape, run_dir)
            stack.callback(self._close_early, early, run_dir, made)
            return detect_machine(self.request.device), None, early, run_dir
        from gpubench.run.cluster.lanes import Cluster

        device = "cpu" if self.request.device == "cpu" else "cuda"
        cluster = stack.enter_context(Cluster(self.request.cluster, device))
        machine = self.places.cluster_machine(cluster)
        cluster.device = machine.device
        cluster.start_lanes()  # each worker's gpubench worker, while this one plans
        return machine, cluster, None, None

    @staticmethod
    def _close_early(early: EarlyCluster, run_dir: Path, made: bool) -> None:
        early.close()
        if made and not has_results(run_dir):
            shutil.rmtree(run_dir, ignore_errors=True)

    def family_folders(self) -> dict[str, Path]:
        """The chosen families' folders by name (nothing imported yet)."""
        known = family_dirs(self.request.config.kernels_dirs)
        self.request.config.check_family_names(known)
        return resolve_families(self.request.config.families, known)

    def plan(self, dirs: dict[str, Path], machine, seed: int,
             variants: tuple[str, ...] | None = None, fresh: bool = False) -> list:
        """The points of the families in `dirs`: their specs loaded (`fresh`: imported
        again, after an edit), the request's shapes and dtypes, `variants` (default: the
        request's --variants)."""
        families = [load_family(name, folder, fresh=fresh) for name, folder in dirs.items()]
        choices = {f.name: self.request.config.shapes_for(f.name) for f in families}
        chosen = self.request.config.variants if variants is None else variants
        return plan_points(families, machine, choices, self.request.config.dtypes, chosen,
                           seed)

    @contextlib.contextmanager
    def compiled_settings(self, machine):
        """The `compiled` variant's settings for this run's planning and workers
        (families/compiled.py); on a CPU left out unless asked, which one line says."""
        choice = compiled.settle_for(machine, self.request.compiled,
                                     self.request.config.variants)
        if choice == "off" and self.request.compiled is None and not machine.has_cuda \
                and os.environ.get(compiled.ENV_CHOICE) != "off":
            self.console.print(f"compiled (torch.compile of each reference): not run, "
                               f"{compiled.CPU_REASON}", markup=False, highlight=False)
        with compiled.run_settings(choice, self.request.compile_mode):
            yield

    def _run(self, folder: RunFolder, machine, dirs, points, seed, write_json,
             baseline: RunDocument | None, lanes: list | None) -> int:
        """Run the points through the runner and its passes; the listeners show and save."""
        self.console.print(self.headline(points, dirs, machine, lanes), markup=False)
        runner, saver = self.prepare(folder, machine, dirs, points, seed, baseline, lanes)
        try:
            self.measure(runner, saver, points)
        except KeyboardInterrupt as stop:
            paths = saver.save(final=True)
            self.console.print(safe_text.terminal(f"{str(stop) or 'interrupted'}: results so far "
                                                  f"in {paths[0].parent}"), markup=False)
            self.say_folder_problem(folder)
            return errors.interruption_code(stop)
        return self._conclude(runner, saver, points, machine, baseline, write_json)

    def headline(self, points, dirs, machine, lanes: list | None) -> str:
        """'gpubench: 6 points of square. CPU ...': what is about to run, and where."""
        names = ", ".join(safe_text.one_line(name) for name in dirs)
        return (f"gpubench: {len(points)} points of {names}. {describe(machine)}"
                f"{_parallel_note(lanes, self.request.cluster)}")

    def prepare(self, folder: RunFolder, machine, dirs, points, seed,
                baseline: RunDocument | None = None,
                lanes: list | None = None) -> tuple[Runner, RunSaver]:
        """The runner of one run into a claimed `folder`, with its passes, and its saver."""
        meta = self._meta(folder.path, machine, dirs, seed, baseline, lanes)
        timing = self.request.config.timing
        saver = RunSaver(folder, meta, points, modes_for_device(timing.modes, machine.device))
        stream = EventStream()
        stream.subscribe(saver)  # first: it has every fact the runner reports
        context = RunContext(machine, folder.path, points, meta, baseline, stream)
        remote = bool(self.request.cluster) and self.request.cluster != "local"
        builds = build_phase_for(points, machine, folder.path, timing.build_timeout_s, lanes,
                                 remote)
        runner = Runner(machine.device, folder.path, timing, lanes=lanes, stream=stream,
                        pipeline=Pipeline.of(PASSES, self.request, context), builds=builds)
        if self.prestart is not None:
            self.prestart.hand_over(runner.lanes, machine.device)
        timeline.mark("parent: clock started (plan made, lanes adopted)")
        return runner, saver

    def measure(self, runner: Runner, saver: RunSaver, points, tables: bool = True,
                progress: bool | None = None) -> None:
        """Run `points`, shown and saved as they finish: one iteration of `run` (and of
        `run --watch`, which passes tables=False after its first). KeyboardInterrupt
        (Ctrl-C, SIGTERM) propagates; what was measured is in the saver."""
        progress = not self.request.as_json if progress is None else progress
        display = RunDisplay(self.console, len(points), show_progress=progress, tables=tables,
                             legend=self.request.legend, variants=row_names(points))
        for listener in (display, RunNotes(self.console, ceilings=tables)):
            runner.subscribe(listener)
        saver.save()  # at once, every point NOT_RUN and the run marked incomplete: a
        # gpubench ended before its first point still leaves a folder that says so
        with display, refused_exits() as refused:
            runner.run(points)
        for line in refused:
            self.console.print(safe_text.terminal(f"warning: {line}"), markup=False)

    def _meta(self, run_dir: Path, machine, dirs, seed, baseline: RunDocument | None,
              lanes: list | None) -> dict:
        """The run document's meta: where, when, what, on which device and lanes."""
        meta = {**host_env(), "run_id": run_dir.name, "run_dir": str(run_dir), "seed": seed,
                "device": machine.device, "families": list(dirs),
                "timing": self.request.config.timing.to_dict(),
                "revisions": revisions(GPUBENCH_DIR, dirs),
                "started": time.strftime(TIME_FORMAT)}
        meta["revisions"]["families"].update(self.request.recorded_revisions or {})
        if baseline is not None:
            meta["baseline"] = baseline.meta.get("run_dir") or baseline.meta.get("run_id")
        if lanes:
            meta["lanes"] = [lane.slot.label for lane in lanes]
            if self.request.cluster:
                meta["cluster"] = self.request.cluster
        return meta

    def _conclude(self, runner: Runner, saver: RunSaver, points, machine,
                  baseline: RunDocument | None, write_json) -> int:
        """After the last point: --trace, the final save, the epilogue and the extra
        outputs (--baseline's summary, --json, --report, --markdown); the exit code."""
        folder = saver.folder
        if self.request.trace:
            self._trace(points, saver.results(), machine, folder.path)
        final = saver.document(final=True)  # one document: saved, printed and reported alike
        results = list(final.results)
        paths = folder.save(final)
        timeline.mark("parent: final save (the clock stops)")
        self.epilogue(results, paths, time.perf_counter() - saver.started)
        for line in leaderboard_lines(points, results):
            self.console.print(safe_text.terminal(line), markup=False, soft_wrap=True)
        if final.incomplete:
            self.console.print(f"[bold red]error:[/] the run is incomplete: "
                               f"{escape(final.incomplete)}", soft_wrap=True)
        if baseline is not None:
            against = compare_runs(baseline, final, level=baseline_level(baseline))
            self.console.print(safe_text.terminal(
                f"vs --baseline {saver.meta['baseline']}: {summary_line(against)}"),
                markup=False, soft_wrap=True)
        if write_json is not None:
            write_json(final.to_json() + "\n")
        if self.request.report:
            self._write_report(final, folder.path, baseline)
        if self.request.markdown:
            self._print_markdown(results, final.env.get("gpu") or "CPU")
        if self.say_folder_problem(folder):
            return errors.EXIT_OUTPUT
        if final.incomplete:  # a point without a status is not a run that passed
            return errors.EXIT_VARIANT_FAILED
        return R.exit_code(results)

    def _print_markdown(self, results: list[R.Result], device: str) -> None:
        """Every group's table as markdown, in run order, on stdout (plain print: rich
        would wrap the long table lines)."""
        print("\n".join(group_markdown(g, device) for g in groups_of(results)), flush=True)

    def _write_report(self, run: RunDocument, run_dir: Path,
                      baseline: RunDocument | None) -> None:
        """`--report`: report.html in the run folder (with --baseline, the compare view on
        top); a page that cannot be written is said, and costs no result."""
        runs = [(str(run_dir), run)]
        if baseline is not None:
            runs.insert(0, (str(baseline.meta.get("run_dir") or "baseline"), baseline))
        try:
            path = write_report(runs, run_dir / "report.html")
        except errors.GpubenchError as exc:
            self.console.print(safe_text.terminal(f"--report: {exc}"), markup=False,
                               soft_wrap=True)
            return
        self.console.print(safe_text.terminal(f"report: {path}"), markup=False, soft_wrap=True)

    def say_folder_problem(self, folder: RunFolder) -> bool:
        """Print where the results went when the run folder failed us; True if it did."""
        if folder.problem:
            problem = escape(safe_text.terminal(folder.problem))
            self.console.print(f"[bold red]error:[/] {problem}", soft_wrap=True)
        return folder.problem is not None

    def _trace(self, points, results: list[R.Result], machine, run_dir: Path) -> None:
        """`--trace`: the passing points again, a few calls each, under torch.profiler."""
        passed = {(r.family, r.variant, r.shape, r.dtype) for r in results if r.passed}
        chosen = [p for p in points
                  if (p.family.name, p.variant.name, p.shape, p.dtype) in passed]
        if not chosen:
            self.console.print("--trace: no passing variant to trace")
            return
        try:
            show_trace(trace_points(chosen, machine.device, run_dir), self.console)
        except errors.GpubenchError as exc:
            self.console.print(safe_text.terminal(f"--trace: {exc}"), soft_wrap=True,
                               markup=False)

    def epilogue(self, results: list[R.Result], paths: list[Path], wall_s: float) -> None:
        """The skipped and failed points' summaries, the wall time and where the results are
        (no paths: nothing could be saved, which the folder's problem says next)."""
        full = paths[1] if paths else ""  # results.json: the full text of a message cut here
        for line in skipped_summary(results):
            self.console.print(f"[dim]{escape(safe_text.terminal(line, where=str(full)))}[/]")
        for line in failure_summary(results):
            self.console.print(f"[red]{escape(safe_text.terminal(line, where=str(full)))}[/]")
        for log in failure_logs(results) if self.request.verbose else ():
            self.console.print(safe_text.terminal(log, limit=None), markup=False, soft_wrap=True)
        first_mode = results[0].mode if results else ""
        compile_s = sum(r.compile_s or 0.0 for r in results
                        if r.kind == "cuda" and r.mode == first_mode)
        saved = f"results: {paths[0]} and {paths[1].name}" if paths else "results: not saved"
        self.console.print(safe_text.terminal(
            f"wall time {wall_s:.1f} s (C++/CUDA builds {compile_s:.1f} s); {saved}"),
            markup=False)


def leaderboard_lines(points, results: list[R.Result]) -> list[str]:
    """The leaderboard's own score of each problem run with --problem, labelled as such."""
    lines = []
    for family in {p.family.name: p.family for p in points}.values():
        scoring = getattr(family, "scoring", None)
        if scoring is not None:
            lines += score_lines(scoring, family.name, results)
    return lines


def _parallel_note(lanes: list | None, cluster: str | None) -> str:
    if not lanes:
        return ""
    where = f"Dask cluster {cluster}" if cluster else ", ".join(lane.slot.label for lane in lanes)
    return f" {len(lanes)} workers in parallel ({where})."


def row_names(points) -> tuple[str, ...]:
    """The planned variants' names as the table's rows show them: 'torch (base)'."""
    return tuple(dict.fromkeys(p.variant.name + (" (base)" if p.variant.baseline else "")
                               for p in points))


def new_seed() -> int:
    """A fresh seed per run, recorded in the results so the run can be repeated."""
    return random.SystemRandom().randrange(0, 2**31 - 2)


@contextlib.contextmanager
def reserved_stdout():
    """Point file descriptor 1 (and sys.stdout) at stderr for the duration, so that
    nothing a spec, a library or a child process prints can mix into the JSON; yields a
    function that writes to the real stdout."""
    sys.stdout.flush()
    saved = os.dup(1)
    os.dup2(2, 1)
    real = os.fdopen(saved, "w")
    previous, sys.stdout = sys.stdout, sys.stderr

    def write(text: str) -> None:
        real.write(text)
        real.flush()

    try:
        yield write
    finally:
        sys.stdout = previous
        os.dup2(saved, 1)
        real.close()
