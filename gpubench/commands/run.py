"""`gpubench run`: plan the points, run them through a worker, show and save the run document."""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from gpubench import errors, safe_text
from gpubench.analysis.baseline_pass import BaselineComparison
from gpubench.analysis.comparison import compare_runs
from gpubench.commands.run_places import RunPlaces
from gpubench.commands.run_request import RunRequest, start_workers
from gpubench.families import compiled
from gpubench.families.discovery import family_dirs, load_family, refused_exits, resolve_families
from gpubench.families.leaderboard.score import score_lines
from gpubench.records import completeness as C
from gpubench.records import events as E
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
from gpubench.store.folder import RunFolder, has_results, load_run
from gpubench.store.report_page import write_report
from gpubench.timing.envinfo import host_env
from gpubench.timing.revision import GPUBENCH_DIR, revisions
from gpubench.tools.ncu.run_pass import NcuCheck, NcuSummary
from gpubench.tools.sanitizer.run_pass import SanitizeMarks
from gpubench.tools.trace_points import show_trace, trace_points

PROFILES = Path("profiles")
# The passes a run's groups go through, in this order (run/pipeline.py): memcheck's marks
# and ncu's durations first and the --baseline verdicts next (the table shows them all),
# then --ncu's summary (its own table follows the group's). Each is enabled by its flag.
PASSES = (SanitizeMarks, NcuCheck, BaselineComparison, NcuSummary)


@dataclass
class RunSaver:
    """Keeps the run folder's results.json and results.csv current: after each group,
    once every pass has run on it, and after every point (or every batch of points that
    finished together on several workers) when the runner is idle: a `kill -9` of
    gpubench, which nothing can catch, then costs at most the points in progress."""

    folder: RunFolder
    meta: dict
    runner: Runner
    points: list = field(default_factory=list)  # every planned point
    started: float = field(default_factory=time.perf_counter)
    unsaved: bool = False
    # When the first point went to a worker and the last one came back (perf_counter):
    # the run's measuring span; the rest of its wall time is fixed cost (worker starts,
    # the interference reference, saving), which benchmarks/scale_out.py reports.
    first_started: float | None = None
    last_done: float | None = None

    def __call__(self, event: E.Event) -> None:
        if isinstance(event, E.PointStarted) and self.first_started is None:
            self.first_started = time.perf_counter()
            timeline.mark("parent: first point handed out")
        if isinstance(event, E.PointDone):
            self.last_done = time.perf_counter()
            self.unsaved = True
        elif isinstance(event, E.Idle) and self.unsaved:
            self.unsaved = False
            self.save()
        elif isinstance(event, E.GroupComplete):
            self.save()

    def document(self, final: bool = False) -> RunDocument:
        """The run so far. `finished` only in a final document where every planned point
        has a status; any other lists the points still without one as NOT_RUN and is
        marked incomplete (records/completeness.py), so a gpubench killed or ended early
        after this save leaves a folder that says so."""
        unrun = self.runner.unrun(self.points, C.NO_STATUS_YET if not final else C.NO_STATUS)
        meta = {**self.meta, "wall_s": time.perf_counter() - self.started}
        if self.first_started is not None and self.last_done is not None:
            meta["points_span_s"] = round(self.last_done - self.first_started, 3)
            meta["startup_s"] = round(self.first_started - self.started, 3)
        if unrun:
            total = len(self.runner.results) + len(unrun)
            meta[C.INCOMPLETE] = C.incomplete_reason(len(unrun), total, final)
        elif final:
            meta["finished"] = time.strftime(TIME_FORMAT)
        return RunDocument(meta, self.runner.env, (*self.runner.results, *unrun))

    def save(self, final: bool = False) -> list[Path]:
        return self.folder.save(self.document(final))


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
        """With --json, stdout carries the JSON document alone: anything else written to
        it (a spec that prints at import, a library's chatter) goes to stderr."""
        if not self.request.as_json:
            return self._execute(None)
        with reserved_stdout() as write_json:
            return self._execute(write_json)

    def _execute(self, write_json) -> int:
        self.places.check_parallel_options()
        if not self.request.cluster:
            if self.prestart is None:  # the CLI starts them before importing this module
                self.prestart = start_workers(self.request)
            try:
                return self._plan_and_run(write_json, detect_machine(self.request.device),
                                          None)
            finally:
                self.prestart.close()
        if self.request.cluster == "local":
            return self._run_on_local_cluster(write_json)
        from gpubench.run.cluster.lanes import Cluster

        device = "cpu" if self.request.device == "cpu" else "cuda"
        with Cluster(self.request.cluster, device) as cluster:
            machine = self.places.cluster_machine(cluster)
            cluster.device = machine.device
            cluster.start_lanes()  # each worker's gpubench worker, while this one plans
            return self._plan_and_run(write_json, machine, cluster)

    def _run_on_local_cluster(self, write_json) -> int:
        """The cluster starts first, beside this process's imports and plan
        (run/cluster/early.py); it logs into the run folder, so that is chosen and made
        first, and removed again if this run made it and saved nothing there."""
        run_dir = self.request.out or new_run_dir(PROFILES, list(self.family_folders()))
        made = not run_dir.exists()
        shape = guessed_cluster(self.request.device, self.request.devices,
                                self.request.workers)
        early = None
        if shape is not None and (self.request.force or not has_results(run_dir)):
            run_dir.mkdir(parents=True, exist_ok=True)
            early = EarlyCluster(shape, run_dir)
        try:
            return self._plan_and_run(write_json, detect_machine(self.request.device), None,
                                      run_dir, early)
        finally:
            if early is not None:
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

    def _plan_and_run(self, write_json, machine, cluster, run_dir: Path | None = None,
                      early: EarlyCluster | None = None) -> int:
        timeline.mark("parent: machine detected (torch imported)")
        with self.compiled_settings(machine):
            return self._plan_and_run_compiled(write_json, machine, cluster, run_dir, early)

    def _plan_and_run_compiled(self, write_json, machine, cluster, run_dir: Path | None,
                               early: EarlyCluster | None) -> int:
        # Loaded before anything is measured: a wrong --baseline costs no run.
        baseline = load_run(self.request.baseline) if self.request.baseline else None
        dirs = self.family_folders()
        seed = self.request.config.seed if self.request.config.seed is not None else new_seed()
        points = self.plan(dirs, machine, seed)
        timeline.mark("parent: plan made")
        run_dir = run_dir or self.request.out or new_run_dir(PROFILES, list(dirs))
        parent = None if self.request.out else PROFILES
        folder = RunFolder(run_dir, self.request.force, parent).claim()
        try:
            with contextlib.ExitStack() as stack:
                if self.request.cluster == "local":
                    cluster = stack.enter_context(self.places.local_cluster(machine, folder.path,
                                                                      early))
                lanes = self.places.lanes_for(machine, folder.path, cluster)
                return self._run(folder, machine, dirs, points, seed, write_json, baseline,
                                 lanes)
        finally:
            folder.release()

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
        context = RunContext(self.request, machine, folder.path, points, meta, baseline)
        timing = self.request.config.timing
        remote = bool(self.request.cluster) and self.request.cluster != "local"
        builds = build_phase_for(points, machine, folder.path, timing.build_timeout_s, lanes,
                                 remote)
        runner = Runner(machine.device, folder.path, timing, lanes=lanes,
                        pipeline=Pipeline.of(PASSES, context), builds=builds)
        if self.prestart is not None:
            self.prestart.hand_over(runner.lanes, machine.device)
        timeline.mark("parent: clock started (plan made, lanes adopted)")
        return runner, RunSaver(folder, meta, runner, points)

    def measure(self, runner: Runner, saver: RunSaver, points, tables: bool = True,
                progress: bool | None = None) -> None:
        """Run `points`, shown and saved as they finish: one iteration of `run` (and of
        `run --watch`, which passes tables=False after its first). KeyboardInterrupt
        (Ctrl-C, SIGTERM) propagates; what was measured is in the saver."""
        progress = not self.request.as_json if progress is None else progress
        display = RunDisplay(self.console, len(points), show_progress=progress, tables=tables,
                             legend=self.request.legend, variants=row_names(points))
        for listener in (display, RunNotes(self.console, ceilings=tables), saver):
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
        folder, results = saver.folder, runner.results
        if self.request.trace:
            self._trace(points, results, machine, folder.path)
        final = saver.document(final=True)  # one document: saved, printed and reported alike
        paths = folder.save(final)
        timeline.mark("parent: final save (the clock stops)")
        self.epilogue(results, paths, time.perf_counter() - saver.started)
        for line in leaderboard_lines(points, results):
            self.console.print(safe_text.terminal(line), markup=False, soft_wrap=True)
        if final.incomplete:
            self.console.print(f"[bold red]error:[/] the run is incomplete: "
                               f"{escape(final.incomplete)}", soft_wrap=True)
        if baseline is not None:
            self.console.print(safe_text.terminal(
                f"vs --baseline {saver.meta['baseline']}: "
                f"{summary_line(compare_runs(baseline, final))}"), markup=False, soft_wrap=True)
        if write_json is not None:
            write_json(final.to_json() + "\n")
        if self.request.report:
            self._write_report(final, folder.path, baseline)
        if self.request.markdown:
            self._print_markdown(results, runner.env.get("gpu") or "CPU")
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
