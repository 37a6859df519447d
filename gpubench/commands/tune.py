"""`gpubench tune FAMILY --variant V`: every config of the variant's space checked on its own,
then raced (tune/racing.py) in a worker like `run`'s, the table shown, the run record saved
and the pick pinned for this GPU, dtype and shape (tune/pinned.py), which `run` then uses.

Phases: (1) check: one task per config, check only (tasks 'V@INDEX', Task.check_only),
over several workers at once, so CUDA configs build and Triton configs compile in parallel;
(2) race: the configs that passed, timed round by round in one worker (one process, one
GPU: the rounds' samples compare); (3) the pick, the table, the record and the pinned file.
Ctrl-C in (1) or (2) keeps what was measured: the record is saved, marked incomplete.
"""

from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path

from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from gpubench import errors, safe_text
from gpubench.commands.command import Command
from gpubench.families.discovery import family_dirs, load_family, resolve_families
from gpubench.records import completeness as C
from gpubench.records import result as R
from gpubench.records.build_info import BuildInfo
from gpubench.records.point import PointKey
from gpubench.records.run import TIME_FORMAT, RunDocument
from gpubench.records.shape import ShapeChoice
from gpubench.report.files import new_run_dir
from gpubench.report.tune_table import markdown, tune_table
from gpubench.run.lanes.lane import Lane, Slot
from gpubench.run.machine import detect_machine
from gpubench.run.plan import Point, choose_dtypes, choose_shapes, group_seed
from gpubench.run.worker.execute import times_on_cpu
from gpubench.run.worker.tune_apply import Tuning
from gpubench.store.folder import RunFolder
from gpubench.timing.envinfo import host_env
from gpubench.timing.settings import TimingSettings
from gpubench.timing.stats import summarize
from gpubench.timing.timers import modes_for_device
from gpubench.tools.cuobjdump import build_resources
from gpubench.tune import pinned as P
from gpubench.tune.racing import FAILED, FIRST_BUDGET_S, Choice, Race, choose
from gpubench.tune.space import TuneConfig, config_name
from gpubench.tune.summary import rows, tune_meta

PROFILES = Path("profiles")
# Check workers at once: each holds torch and a CUDA context (~500 MB of GPU memory) and
# compiles on one core; 8 builds 16 configs in two waves without crowding a 16-core host.
MAX_CHECK_WORKERS = 8
SEED = 0
RACE_WARMUP_S = 0.025
# --exhaustive's time per config without --min-time: ~10^4 samples of a 100 us kernel,
# a CI far inside the 2% the racing pick is held to.
EXHAUSTIVE_S = 1.0
CPU_SKIP = ("timing skipped: no GPU here; Triton-interpreted and CPU-built times say nothing "
            "of which config is fastest on a GPU, so every config was checked and none chosen")
# The same after Ctrl-C: not every config was checked, and the count is the document's.
CPU_SKIP_INTERRUPTED = ("timing skipped: no GPU here, and interrupted before every config "
                        "was checked; none chosen")


@dataclass(frozen=True)
class TuneRequest:
    """What `gpubench tune` was asked for, built once by the CLI."""

    family: str
    variant: str
    shapes: ShapeChoice = field(default_factory=ShapeChoice)  # one shape; empty: the first
    dtype: str | None = None
    device: str = "auto"
    kernels_dirs: tuple[Path, ...] = ()
    exhaustive: bool = False  # every config timed for the whole --min-time, nothing dropped
    min_time_s: float | None = None  # --exhaustive's time per config; racing's first round's
    threshold: float = 0.01
    out: Path | None = None
    pin: bool = True  # write the pinned-config file
    jobs: int | None = None  # check workers
    markdown: bool = False  # also print the table as markdown


@dataclass
class Tally:
    """What the phases found, per config index."""

    statuses: dict[int, str] = field(default_factory=dict)  # check label: PASS, FAIL, ...
    facts: dict[int, dict] = field(default_factory=dict)  # registers, shared, occupancy
    workers: dict[int, object] = field(default_factory=dict)  # the last WorkerResult
    env: dict = field(default_factory=dict)


@dataclass(eq=False)
class TuneCommand(Command[TuneRequest]):
    started: float = field(default_factory=time.perf_counter)  # the record's wall_s from here

    def execute(self) -> int:
        machine = detect_machine(self.request.device)
        # The timer the race uses: cold L2, as `run`'s default (the host clock on a CPU).
        self.mode = modes_for_device(("cold",), machine.device)[0]
        if not machine.has_cuda:  # as the worker: before any @triton.jit runs (space below)
            os.environ.setdefault("TRITON_INTERPRET", "1")
        point, space = self._plan(machine)
        out = self.request.out or new_run_dir(PROFILES, [point.family.name, "tune"])
        # `latest` names a default folder, as after `run`
        folder = RunFolder(out, latest_base=None if self.request.out else PROFILES).claim()
        race = Race(space, self.request.threshold, exhaustive=self.request.exhaustive)
        tally, interrupted, timing_s = Tally(), None, 0.0
        # The workers skip the roofline ceilings (no "of roof" here): without a cache, each
        # of the check workers would measure them at once, on one GPU.
        os.environ.setdefault("GPUBENCH_CEILINGS", "0")
        lanes = self._lanes(machine, folder.path, len(space))
        try:
            self._check_all(lanes, point, space, race, tally)
            for lane in lanes[1:]:  # the race runs in the first; the others free the GPU
                lane.stop()
            # gpubench's own tests race on a CPU too (times_on_cpu), so the schedule's
            # plumbing runs in CI; those times mean nothing, and nothing is pinned
            if machine.has_cuda or times_on_cpu():
                timing_s = -time.perf_counter()
                self._race(lanes[0], point, race, tally)
        except KeyboardInterrupt as exc:
            interrupted = exc
        finally:
            timing_s += time.perf_counter() if timing_s < 0 else 0.0
            for lane in lanes:
                lane.kill() if interrupted else lane.stop()
        skipped = "" if machine.has_cuda or times_on_cpu() else \
            CPU_SKIP if interrupted is None else CPU_SKIP_INTERRUPTED
        try:
            code = self._conclude(point, race, tally, folder, timing_s, skipped, interrupted)
        finally:
            folder.release()
        if interrupted is not None:
            raise interrupted
        return code

    # ------------------------------------------------------------ plan

    def _plan(self, machine) -> tuple[Point, tuple[TuneConfig, ...]]:
        request = self.request
        dirs = resolve_families((request.family,), family_dirs(request.kernels_dirs))
        family = load_family(request.family, dirs[request.family])
        names = [v.name for v in family.variants]
        if request.variant not in names:
            raise errors.UsageError(f"{family.name} has no variant '{request.variant}' "
                                    f"(it has: {', '.join(names)})")
        variant = family.variant(request.variant)
        shapes = choose_shapes(family, request.shapes, machine)
        if len(shapes) > 1 and request.shapes:
            raise errors.UsageError(f"tune takes one shape at a time; got {len(shapes)}")
        dtype = request.dtype or choose_dtypes(family, None)[0]
        why = variant.unavailable_reason(dtype, machine)
        if why:
            raise errors.UsageError(f"{family.name}/{variant.name} cannot run here: {why}")
        space, _ = Tuning(machine).space(family, variant)
        if not space:
            raise errors.UsageError(
                f"{family.name}/{variant.name} has no config space: a Triton variant needs a "
                "@triton.autotune kernel in its module, a CUDA variant a tune={MACRO: "
                "(values, ...)} in its spec entry")
        seed = group_seed(SEED, family.name, dtype, shapes[0])
        return Point(family, variant, shapes[0], dtype, seed), space

    def _lanes(self, machine, log_dir: Path, configs: int) -> list[Lane]:
        cores = os.cpu_count() or 1
        count = max(1, min(configs, self.request.jobs or min(MAX_CHECK_WORKERS, cores)))
        if machine.has_cuda:
            slots = [Slot("cuda", f"cuda:{i}") for i in range(count)]
        else:
            threads = max(1, cores // count)
            slots = [Slot("cpu", f"cpu:{i}", threads=threads) for i in range(count)]
        return [Lane(slot, log_dir, f"tune-worker{i}") for i, slot in enumerate(slots)]

    def _timing(self) -> TimingSettings:
        """`run`'s settings but a shorter warmup: 100 ms covers the clocks' ramp from idle,
        and during a tune the GPU was busy with the previous config a moment ago; 25 ms
        still covers lazy loading and the caches (each config's first call is its check)."""
        return TimingSettings(warmup_s=RACE_WARMUP_S)

    # ------------------------------------------------------------ phase 1: check

    def _check_all(self, lanes: list[Lane], point: Point, space, race: Race,
                   tally: Tally) -> None:
        """Every config checked on its own (its own poisoned output, its own call), over
        all lanes at once; Ctrl-C stops handing out configs and kills the workers."""
        timing, pending, stop = self._timing(), list(space), []

        def work(lane: Lane) -> None:
            while pending and not stop:
                try:
                    config = pending.pop(0)  # list.pop is atomic under the GIL
                except IndexError:
                    return
                task = replace(point.task(config.index + 1, timing),
                               variant=config_name(point.variant.name, config.index),
                               check_only=True)
                outcome = lane.execute(task, timing.timeout_s, timing.build_timeout_s)
                if not stop:  # a worker killed by Ctrl-C did not fail the config
                    self._take(config.index, outcome, race, tally, checking=True)
                    progress.advance(bar)

        pool = ThreadPoolExecutor(len(lanes))
        with self._progress() as progress:
            bar = progress.add_task("check", total=len(space))
            try:
                for future in [pool.submit(work, lane) for lane in lanes]:
                    future.result()
            except KeyboardInterrupt:
                stop.append(True)
                for lane in lanes:
                    lane.kill()
                raise
            finally:
                pool.shutdown(wait=not stop)

    def _take(self, index: int, outcome, race: Race, tally: Tally, checking: bool) -> bool:
        """Record one task's outcome; False when the config failed (and left the race)."""
        tally.env = tally.env or outcome.device
        worker = outcome.result
        status = outcome.failure or (worker.status if worker else R.ERROR)
        error = outcome.error or (worker.error if worker else "") or ""
        if worker is not None:
            tally.workers[index] = worker
            facts = _facts(worker.build) if checking else None
            if facts:
                tally.facts[index] = facts
        measurement = worker.measurements.get(self.mode) if worker and not checking else None
        if status == R.OK and not checking and (measurement is None or measurement.error):
            status = R.FAIL if measurement and measurement.recheck_failed else R.ERROR
            error = measurement.error if measurement else f"no '{self.mode}' timing came back"
        if status != R.OK:
            if status == R.FAIL and worker is not None and worker.check:
                error = f"{error}: {worker.check.summary()}"
            tally.statuses[index] = R.status_label(status)
            race.fail(index, status, error)
            return False
        tally.statuses[index] = R.status_label(R.OK)
        if measurement is not None:
            race.add(index, measurement.samples_s)
        return True

    # ------------------------------------------------------------ phase 2: race

    def _race(self, lane: Lane, point: Point, race: Race, tally: Tally) -> None:
        base, ids = self._timing(), 1000
        with self._progress() as progress:
            while not race.done:
                budget = (self.request.min_time_s or EXHAUSTIVE_S) if self.request.exhaustive \
                    else race.budget_s(self.request.min_time_s or FIRST_BUDGET_S)
                timing = replace(base, min_time_s=budget, max_time_s=max(budget, 1e-3),
                                 timeout_s=max(base.timeout_s, 10 * budget))
                entrants = race.racing()
                bar = progress.add_task(f"round {race.round + 1}: {len(entrants)} configs, "
                                        f"{budget * 1e3:.0f} ms each", total=len(entrants))
                for index in entrants:
                    ids += 1
                    task = replace(point.task(ids, timing),
                                   variant=config_name(point.variant.name, index))
                    outcome = lane.execute(task, timing.timeout_s, timing.build_timeout_s)
                    self._take(index, outcome, race, tally, checking=False)
                    progress.advance(bar)
                race.end_round()

    def _progress(self) -> Progress:
        return Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                        TimeElapsedColumn(), console=self.console, transient=False)

    # ------------------------------------------------------------ phase 3: the pick

    def _conclude(self, point: Point, race: Race, tally: Tally, folder: RunFolder,
                  timing_s: float, skipped: str, interrupted) -> int:
        registers = {i: f.get("registers") for i, f in tally.facts.items()}
        choice = choose(race, registers) if not skipped else \
            Choice(None, (), None, skipped)
        summaries = {i: summarize(c.samples) for i, c in race.contenders.items()
                     if c.timed}
        table_rows = rows(race, choice, tally.statuses, tally.facts, summaries)
        document = self._document(point, race, choice, tally, folder, timing_s, skipped,
                                  interrupted)
        paths = folder.save(document)
        title = (f"tune {point.family.name}/{point.variant.name} {point.dtype} "
                 f"{point.shape.label()} on {tally.env.get('gpu') or 'CPU'}")
        caption = "" if skipped else _caption(race, timing_s)  # said once, below
        self.console.print(tune_table(table_rows, title, caption))
        if self.request.markdown:
            self.console.print(markdown(table_rows), markup=False, soft_wrap=True)
        self._say_choice(point, race, choice, tally, folder,
                         skipped or ("interrupted" if interrupted is not None else ""))
        self.console.print(f"saved: {paths[0] if paths else folder.path}", markup=False,
                           soft_wrap=True)
        if any(s != "PASS" for s in tally.statuses.values()) and choice.best is None:
            return errors.EXIT_VARIANT_FAILED
        return errors.EXIT_OK

    def _document(self, point: Point, race: Race, choice: Choice, tally: Tally,
                  folder: RunFolder, timing_s: float, skipped: str, interrupted) -> RunDocument:
        results = [self._result(point, race, index, tally) for index in race.contenders]
        meta = {**host_env(), "run_id": folder.path.name, "run_dir": str(folder.path),
                "command": "tune", "seed": point.seed,
                "device": "cuda" if tally.env.get("gpu") else "cpu",
                "families": [point.family.name],
                "timing": self._timing().to_dict(),
                "wall_s": time.perf_counter() - self.started,
                "tune": tune_meta(point.variant.name, race, choice, timing_s, skipped)}
        unrun = sum(r.status == R.NOT_RUN for r in results)
        if interrupted is not None:
            meta[C.INCOMPLETE] = (f"interrupted: {unrun} of {len(results)} configs not run, "
                                  "the race not finished")
        else:
            meta["finished"] = time.strftime(TIME_FORMAT)
        return RunDocument(meta, tally.env, tuple(results))

    def _result(self, point: Point, race: Race, index: int, tally: Tally) -> R.Result:
        """The config's row in the record: its check, its build, all its raced samples."""
        key = PointKey(point.family.name, config_name(point.variant.name, index), point.dtype,
                       point.shape, self.mode)
        worker, entry = tally.workers.get(index), race.contenders[index]
        where = {"device_id": tally.env.get("device_id", ""),
                 "device_name": tally.env.get("gpu") or tally.env.get("cpu") or ""}
        if worker is None:
            row = point.result(self.mode, R.NOT_RUN, error="not run: tune was interrupted")
            return replace(row, key=key, **where)
        measurement = worker.measurements.get(self.mode)
        if measurement is not None and entry.samples:
            measurement = replace(measurement, samples_s=tuple(entry.samples))
        failed = entry.state == FAILED
        row = point.result(self.mode, entry.status if failed else R.OK,
                           error=entry.reason if failed else None, measurement=measurement,
                           check=worker.check, build=worker.build, device=worker.device)
        return replace(row, key=key, **where)

    def _say_choice(self, point: Point, race: Race, choice: Choice, tally: Tally,
                    folder: RunFolder, skipped: str) -> None:
        """The pick, and its pinned file: none from an interrupted race (`skipped`), nor
        from CPU timings."""
        if choice.best is None:
            self.console.print(safe_text.terminal(f"no config chosen: {choice.why}"),
                               markup=False, soft_wrap=True)
            return
        config = race.contenders[choice.best].config
        self.console.print(safe_text.terminal(f"chosen: #{config.index} {config.label} "
                                              f"({choice.why})"), markup=False, soft_wrap=True)
        if skipped == "interrupted":
            self.console.print("not pinned: the race was interrupted", markup=False)
        if not self.request.pin or skipped or not tally.env.get("gpu"):
            return
        gpu = tally.env.get("gpu") or ""
        path = P.pinned_path(point.family.directory, gpu, point.variant.name, point.dtype,
                             point.shape.slug())
        labels = [race.contenders[i].config.label for i in choice.tied if i != choice.best]
        pinned = P.Pinned(point.family.name, point.variant.name, point.dtype,
                          point.shape.text(), gpu, config, str(folder.path), choice.why,
                          tuple(labels))
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(pinned.to_json())
        except OSError as exc:
            raise errors.OutputError(f"cannot write the pinned config {path}: "
                                     f"{exc.strerror or exc}") from None
        self.console.print(safe_text.terminal(f"pinned: {path} (`gpubench run` uses it for "
                                              f"{point.variant.name} on this GPU)"),
                           markup=False, soft_wrap=True)


def _facts(build: BuildInfo) -> dict | None:
    """A config's resources: the compiled Triton kernel's, which the worker read, or a CUDA
    build's, from cuobjdump (tools/cuobjdump.py); None when unknown."""
    config = build.config or {}
    facts = {k: config.get(k) for k in ("registers", "shared_bytes", "occupancy")}
    if any(v is not None for v in facts.values()):
        return facts
    return build_resources(build.build_dir)


def _caption(race: Race, timing_s: float) -> str:
    how = "exhaustive" if race.exhaustive else "racing (successive halving)"
    timed = sum(c.rounds for c in race.contenders.values())
    return (f"{how}: {race.round} rounds, {timed} timings, {timing_s:.1f} s timing; "
            "'tied': not told apart from the fastest (verdict SAME, or ratio CI holds 1); "
            "'dropped': stopped early, its note says why")


execute = TuneCommand.entry  # the module's one entry (command.py): cli/app.py calls it
