"""`gpubench run`: plan the points, run them through a worker, show and save the run document."""

from __future__ import annotations

import contextlib
import os
import random
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from gpubench import errors
from gpubench.analysis.comparison import compare_runs
from gpubench.families.discovery import family_dirs, load_family, resolve_families
from gpubench.records import result as R
from gpubench.records.run import RunDocument
from gpubench.report.compare_view import summary_line
from gpubench.report.files import new_run_dir
from gpubench.report.live import RunDisplay, failure_summary, skipped_summary
from gpubench.run.config import RunConfig
from gpubench.run.folder import RunFolder, load_run
from gpubench.run.lane import choose_gpus, visible_gpus
from gpubench.run.machine import describe, detect_machine
from gpubench.run.plan import plan_points
from gpubench.run.runner import Runner
from gpubench.timing.envinfo import host_env

PROFILES = Path("profiles")


@dataclass(frozen=True)
class RunRequest:
    """Everything `gpubench run` was asked for, built once by the CLI and passed along."""

    config: RunConfig
    device: str = "auto"  # --device: auto, cuda or cpu
    out: Path | None = None  # --out; None: profiles/<run-id>
    as_json: bool = False  # --json: the run document alone on stdout
    ncu: bool = False  # --ncu: a short Nsight Compute summary per passing variant
    trace: bool = False  # --trace: a Chrome trace of the passing variants
    force: bool = False  # reuse an --out that holds results
    baseline: str | None = None  # --baseline: a run to compare every group with
    ncu_check: bool = False  # --ncu-check: ncu's duration beside every passing point
    markdown: bool = False  # --markdown: every group's table as markdown at the end
    report: bool = False  # --report: the run's HTML page, beside its results
    sanitize: bool = False  # --sanitize: memcheck once per variant before timing
    devices: str | None = None  # --devices all|0,2,3: one worker per GPU
    workers: int | None = None  # --workers N: N CPU workers (or local Dask CPU workers)
    cluster: str | None = None  # --cluster ADDRESS|local: Dask workers, one GPU each


@dataclass
class RunCommand:
    request: RunRequest
    console: Console

    def execute(self) -> int:
        """With --json, stdout carries the JSON document alone: anything else written to
        it (a spec that prints at import, a library's chatter) goes to stderr."""
        if not self.request.as_json:
            return self._execute(None)
        with reserved_stdout() as write_json:
            return self._execute(write_json)

    def _execute(self, write_json) -> int:
        self._check_parallel_options()
        if not self.request.cluster or self.request.cluster == "local":
            # A local cluster is started once the run folder exists (its logs go there).
            return self._plan_and_run(write_json, detect_machine(self.request.device), None)
        from gpubench.run.cluster import Cluster

        device = "cpu" if self.request.device == "cpu" else "cuda"
        with Cluster(self.request.cluster, device) as cluster:
            machine = self._cluster_machine(cluster)
            cluster.device = machine.device
            return self._plan_and_run(write_json, machine, cluster)

    def _check_parallel_options(self) -> None:
        """--devices, --workers and --cluster: the combinations that mean something."""
        if self.request.devices and self.request.workers:
            raise errors.UsageError("--devices (one worker per GPU) and --workers (CPU "
                                    "workers) exclude each other")
        if self.request.devices and self.request.device == "cpu":
            raise errors.UsageError("--devices picks GPUs; with --device cpu use --workers N")
        if self.request.devices and self.request.cluster and self.request.cluster != "local":
            raise errors.UsageError("--devices picks this machine's GPUs: with a remote "
                                    "--cluster each Dask worker owns its GPU")
        if self.request.workers and self.request.cluster and self.request.cluster != "local":
            raise errors.UsageError("--workers sizes a local cluster; a remote --cluster "
                                    "has the workers it was started with")

    def _cluster_machine(self, cluster):
        """The cluster's workers decide what runs (this machine may have no GPU)."""
        from gpubench.families.spec import Machine

        facts = cluster.machine_facts()
        if self.request.device == "cuda" and not facts["has_cuda"]:
            raise errors.EnvironmentProblem(f"--device cuda: the workers of --cluster "
                                            f"{self.request.cluster} see no CUDA GPU")
        use_cuda = facts["has_cuda"] and self.request.device != "cpu"
        return Machine(has_cuda=use_cuda, has_triton=facts["has_triton"],
                       device_name="cuda" if use_cuda else "cpu")

    def _local_cluster(self, machine, run_dir: Path):
        """`--cluster local`: one Dask worker per GPU (those of --devices, else all), or
        --workers CPU workers (2 by default); their logs go to the run folder."""
        from gpubench.run.cluster import Cluster

        if machine.has_cuda and self.request.workers:
            raise errors.UsageError("--cluster local on a GPU has one worker per GPU "
                                    "(pick them with --devices); --workers sizes a "
                                    "CPU cluster")
        if machine.has_cuda or self.request.devices:
            return Cluster("local", "cuda", self._chosen_gpus(machine), log_dir=run_dir)
        return Cluster("local", "cpu", cpu_workers=self.request.workers or 2, log_dir=run_dir)

    def _chosen_gpus(self, machine) -> list[str]:
        """--devices (all when not given) as GPU ids; a CPU run (no GPU, or --device cpu)
        cannot have any."""
        if not machine.has_cuda:
            raise errors.UsageError("--devices needs CUDA GPUs and this run has none (for "
                                    "parallel CPU workers use --workers N)")
        return choose_gpus(self.request.devices or "all", visible_gpus())

    def _lanes(self, machine, run_dir: Path, cluster) -> list | None:
        """The places points run: None for the one default worker."""
        from gpubench.run.lane import Lane, Slot, cpu_slots

        if cluster is not None:
            return cluster.lanes()
        if self.request.devices:
            return [Lane(Slot("cuda", f"cuda:{gpu}", visible=gpu), run_dir, f"worker-cuda{gpu}")
                    for gpu in self._chosen_gpus(machine)]
        if self.request.workers:
            if machine.has_cuda:
                raise errors.UsageError("--workers runs CPU workers; on a GPU machine use "
                                        "--devices (one worker per GPU), or --device cpu")
            return [Lane(slot, run_dir, f"worker-cpu{slot.label[4:]}")
                    for slot in cpu_slots(self.request.workers)]
        return None

    def _plan_and_run(self, write_json, machine, cluster) -> int:
        # Loaded before anything is measured: a wrong --baseline costs no run.
        baseline = load_run(self.request.baseline) if self.request.baseline else None
        known = family_dirs(self.request.config.kernels_dirs)
        self.request.config.check_family_names(known)
        dirs = resolve_families(self.request.config.families, known)
        families = [load_family(name, folder) for name, folder in dirs.items()]
        seed = self.request.config.seed if self.request.config.seed is not None else new_seed()
        choices = {f.name: self.request.config.shapes_for(f.name) for f in families}
        points = plan_points(families, machine, choices, self.request.config.dtypes,
                             self.request.config.variants, seed)
        run_dir = self.request.out or new_run_dir(PROFILES, list(dirs))
        parent = None if self.request.out else PROFILES
        folder = RunFolder(run_dir, self.request.force, parent).claim()
        try:
            with contextlib.ExitStack() as stack:
                if self.request.cluster == "local":
                    cluster = stack.enter_context(self._local_cluster(machine, folder.path))
                lanes = self._lanes(machine, folder.path, cluster)
                return self._run(folder, machine, dirs, points, seed, write_json, baseline,
                                 lanes)
        finally:
            folder.release()

    def _run(self, folder: RunFolder, machine, dirs, points, seed, write_json,
             baseline: RunDocument | None, lanes: list | None) -> int:
        run_dir = folder.path
        meta = {**host_env(), "run_id": run_dir.name, "run_dir": str(run_dir), "seed": seed,
                "device": machine.device, "families": list(dirs),
                "timing": self.request.config.timing.to_dict(),
                "started": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
        if baseline is not None:
            meta["baseline"] = baseline.meta.get("run_dir") or baseline.meta.get("run_id")
        self.console.print(f"gpubench: {len(points)} points of {', '.join(dirs)}. "
                           f"{describe(machine)}{_parallel_note(lanes, self.request.cluster)}")
        if lanes:
            meta["lanes"] = [lane.slot.label for lane in lanes]
            if self.request.cluster:
                meta["cluster"] = self.request.cluster
        started = time.perf_counter()
        runner = Runner(machine.device, run_dir, self.request.config.timing, lanes=lanes)

        def document() -> RunDocument:
            return RunDocument({**meta, "wall_s": time.perf_counter() - started,
                                "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z")},
                               runner.env, tuple(runner.results))

        def save() -> list[Path]:
            return folder.save(document())

        def on_group(group: list[R.Result]) -> None:
            if self.request.ncu:
                runner.replace(self._ncu_summaries(group, machine, run_dir, points))
            save()

        def against_baseline(group: list[R.Result]) -> dict:
            compared = compare_runs(baseline, RunDocument(meta, runner.env, tuple(group)))
            return {key: point.comparison for key, point in compared.by_key().items()}

        marks = self._sanitize(points, machine, run_dir) if self.request.sanitize else {}

        def before_show(group: list[R.Result]) -> list[R.Result]:
            if marks:
                from gpubench.commands.sanitize import mark_result

                group = [mark_result(r, marks.get((r.family, r.variant))) for r in group]
                runner.replace(group)
            if not self.request.ncu_check:
                return group
            checked = self._ncu_check(group, machine, run_dir, points)
            runner.replace(checked)
            return checked

        against_md = against_baseline if baseline is not None else None
        display = RunDisplay(self.console, len(points), on_group=on_group,
                             show_progress=not self.request.as_json,
                             against=against_baseline if baseline is not None else None,
                             before_show=before_show)
        runner.callbacks = display.callbacks()
        show_point = runner.callbacks.point_done

        unsaved = []

        def point_done(rows: list[R.Result]) -> None:
            show_point(rows)
            unsaved.append(rows)

        def idle() -> None:
            # Saved after every point (or every batch of points that finished together
            # on several workers), not only every group: a `kill -9` of gpubench, which
            # nothing can catch, then costs at most the points in progress.
            if unsaved:
                unsaved.clear()
                save()

        runner.callbacks.point_done = point_done
        runner.callbacks.idle = idle
        show_worker = runner.callbacks.worker_started

        def worker_started(env: dict) -> None:  # the run's first worker only
            show_worker(env)
            self._say_ceilings_check(env)

        runner.callbacks.worker_started = worker_started
        runner.callbacks.interference = self._say_interference
        try:
            with display:
                runner.run(points)
        except KeyboardInterrupt as stop:
            paths = save()
            self.console.print(f"{stop or 'interrupted'}: results so far in {paths[0].parent}",
                               markup=False)
            self._say_folder_problem(folder)
            return errors.interruption_code(stop)
        if self.request.trace:
            self._trace(points, runner.results, machine, run_dir)
        paths = save()
        self._epilogue(runner.results, paths, time.perf_counter() - started)
        if baseline is not None:
            self.console.print(f"vs --baseline {meta['baseline']}: "
                               f"{summary_line(compare_runs(baseline, document()))}",
                               markup=False, soft_wrap=True)
        if write_json is not None:
            write_json(document().to_json() + "\n")
        if self.request.report:
            self._write_report(document(), run_dir, baseline)
        if self.request.markdown:
            self._print_markdown(runner.results, runner.env.get("gpu") or "CPU", against_md)
        if self._say_folder_problem(folder):
            return errors.EXIT_OUTPUT
        return errors.EXIT_OK if R.exit_status(runner.results) else errors.EXIT_VARIANT_FAILED

    def _print_markdown(self, results: list[R.Result], device: str, against) -> None:
        """Every group's table as markdown, in run order, on stdout (plain print: rich
        would wrap the long table lines)."""
        from gpubench.report.table import group_markdown, groups_of

        print("\n".join(group_markdown(g, device, against(g) if against else None)
                        for g in groups_of(results)), flush=True)

    def _write_report(self, run: RunDocument, run_dir: Path,
                      baseline: RunDocument | None) -> None:
        """`--report`: report.html in the run folder (with --baseline, the compare view on
        top); a page that cannot be written is said, and costs no result."""
        from gpubench.commands.report import write_report

        runs = [(str(run_dir), run)]
        if baseline is not None:
            runs.insert(0, (str(baseline.meta.get("run_dir") or "baseline"), baseline))
        try:
            path = write_report(runs, run_dir / "report.html")
        except errors.GpubenchError as exc:
            self.console.print(f"--report: {exc}", markup=False, soft_wrap=True)
            return
        self.console.print(f"report: {path}", markup=False, soft_wrap=True)

    def _say_ceilings_check(self, env: dict) -> None:
        """Once, before the first table: the cached ceilings disagree with this run's copy
        probe (gpubench/timing/ceilings.py), so its "of roof" figures are off by that much."""
        check = env.get("ceilings_check") or {}
        if check.get("stale"):
            self.console.print(f"[yellow]warning:[/] {escape(check.get('message', ''))}",
                               soft_wrap=True)

    def _say_interference(self, interference) -> None:
        """Once, before the first table, with several lanes: what the reference showed."""
        if interference is None:
            return
        self.console.print(escape(interference.summary()), soft_wrap=True)
        if interference.warning():
            self.console.print(f"[yellow]warning:[/] {escape(interference.warning())}",
                               soft_wrap=True)

    def _say_folder_problem(self, folder: RunFolder) -> bool:
        """Print where the results went when the run folder failed us; True if it did."""
        if folder.problem:
            self.console.print(f"[bold red]error:[/] {escape(folder.problem)}", soft_wrap=True)
        return folder.problem is not None

    def _trace(self, points, results: list[R.Result], machine, run_dir: Path) -> None:
        """`--trace`: the passing points again, a few calls each, under torch.profiler."""
        from gpubench.commands.trace import show_trace, trace_points

        passed = {(r.family, r.variant, r.shape, r.dtype) for r in results if r.passed}
        chosen = [p for p in points
                  if (p.family.name, p.variant.name, p.shape, p.dtype) in passed]
        if not chosen:
            self.console.print("--trace: no passing variant to trace")
            return
        try:
            show_trace(trace_points(chosen, machine.device, run_dir), self.console)
        except errors.GpubenchError as exc:
            self.console.print(f"--trace: {exc}", soft_wrap=True, markup=False)

    def _ncu_summaries(self, group: list[R.Result], machine, run_dir: Path,
                       points) -> list[R.Result]:
        """`--ncu`: profile each passing variant of the group once, show the short form;
        returns the group's results with their ncu summary."""
        from gpubench.commands.ncu import NcuOptions, ncu_summary, profile_points
        from gpubench.commands.ncu_check import passing_points
        from gpubench.tools.ncu.view import summary_table

        if not machine.has_cuda:
            self.console.print("  --ncu: skipped, Nsight Compute needs a CUDA GPU")
            return group
        try:
            outcomes = profile_points(passing_points(group, points), run_dir, NcuOptions())
        except errors.GpubenchError as exc:  # ncu missing: say so once per group, go on
            self.console.print(f"  --ncu: {exc}", soft_wrap=True, markup=False)
            return group
        summaries = {o.variant: ncu_summary(o) for o in outcomes}
        self.console.print(summary_table(summaries))
        return [r.with_derived(ncu=summaries.get(r.variant)) for r in group]

    def _ncu_check(self, group: list[R.Result], machine, run_dir: Path,
                   points) -> list[R.Result]:
        """`--ncu-check`: ncu's duration for each passing point of the group (one ncu run),
        set beside ours; a problem with ncu is said once and costs no result."""
        from gpubench.commands.ncu_check import check_group

        if not machine.has_cuda:
            if not self._said_ncu_check:
                self.console.print("--ncu-check: skipped — it compares with Nsight Compute, "
                                   "which needs ncu and a CUDA GPU; this run timed on the CPU",
                                   markup=False, soft_wrap=True)
                self._said_ncu_check = True
            return group
        try:
            return check_group(group, points, run_dir)
        except errors.GpubenchError as exc:
            self.console.print(f"  --ncu-check: {exc}", soft_wrap=True, markup=False)
            return group

    _said_ncu_check = False

    def _sanitize(self, points, machine, run_dir: Path) -> dict[tuple[str, str], dict]:
        """`--sanitize`: memcheck on each variant once, at its smallest planned shape, before
        anything is timed; {(family, variant): what run_mark records}. Without a GPU or the
        tool it says so once and the run goes on."""
        from gpubench.commands.sanitize import Sanitized, run_mark, sanitize_task, sources_of
        from gpubench.tools.find import find_tool

        if not machine.has_cuda:
            self.console.print("--sanitize: skipped — compute-sanitizer checks CUDA kernels, "
                               "and this run has no CUDA GPU", markup=False)
            return {}
        try:
            sanitizer = find_tool("compute-sanitizer")
        except errors.GpubenchError as exc:
            self.console.print(f"--sanitize: {exc}", markup=False)
            return {}
        first: dict[tuple[str, str], object] = {}
        for point in points:
            key = (point.family.name, point.variant.name)
            if not point.skip and (key not in first or _size(point) < _size(first[key])):
                first[key] = point
        marks = {}
        for key, point in first.items():
            self.console.print(f"--sanitize: memcheck on {key[0]}/{key[1]} "
                               f"{point.shape.label()} ...", markup=False)
            try:
                outcome = sanitize_task(sanitizer, point.task(0), run_dir / "sanitize",
                                        ("memcheck",), 600.0,
                                        sources_of(point.family, point.variant))
            except errors.GpubenchError as exc:
                outcome = Sanitized(key[1], error=exc)
            marks[key] = run_mark(outcome)
        return marks

    def _epilogue(self, results: list[R.Result], paths: list[Path], wall_s: float) -> None:
        for line in skipped_summary(results):
            self.console.print(f"[dim]{escape(line)}[/]")
        for line in failure_summary(results):
            self.console.print(f"[red]{escape(line)}[/]")
        first_mode = results[0].mode if results else ""
        compile_s = sum(r.compile_s or 0.0 for r in results
                        if r.kind == "cuda" and r.mode == first_mode)
        self.console.print(f"wall time {wall_s:.1f} s (C++/CUDA builds {compile_s:.1f} s); "
                           f"results: {paths[0]} and {paths[1].name}")


def _parallel_note(lanes: list | None, cluster: str | None) -> str:
    if not lanes:
        return ""
    where = f"Dask cluster {cluster}" if cluster else ", ".join(lane.slot.label for lane in lanes)
    return f" {len(lanes)} workers in parallel ({where})."


def _size(point) -> int:
    """A shape's element count, to find a variant's smallest point."""
    import math

    return math.prod(point.shape.values())


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
