"""`gpubench ab FAMILY --base DIR|--base-rev REV [--new DIR]`: two versions of a family timed
in pairs in one worker, and the paired verdicts (analysis/ab.py) shown and saved.

Per point (shape, dtype) and variant present in both versions, one task goes to the
worker (Task.base_dir): it builds both, checks both with the judge, and times them in
interleaved pairs until the pairs' interval decides at --threshold or --max-time is spent
(run/ab/pair.py). Variants whose sources are the same in both versions are controls.
The record is a run folder like `run`'s: NEW's rows under their names, BASE's as
'NAME@base', the verdicts in meta["ab"] (RunDocument.pairs), so `report`, `compare` and
`gpubench.load_run` read it.
"""

from __future__ import annotations

import io
import os
import subprocess
import tarfile
import time
from dataclasses import dataclass, field, fields, replace
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from gpubench import errors, safe_text
from gpubench.analysis.ab import (
    AB_THRESHOLD,
    FAILED,
    SUSPECT,
    PairEntry,
    drift_notes,
    judge_pairs,
    regressions,
)
from gpubench.build.cache import cache_root
from gpubench.families import compiled
from gpubench.families.discovery import family_dirs, load_family, resolve_families
from gpubench.families.versions import changed_variants
from gpubench.records import completeness as C
from gpubench.records import result as R
from gpubench.records.ab import base_name
from gpubench.records.run import TIME_FORMAT, RunDocument
from gpubench.report.ab_view import ab_markdown, ab_table
from gpubench.report.files import new_run_dir
from gpubench.run.ab.pair import PAIRED_MODES
from gpubench.run.config import RunConfig
from gpubench.run.folders.folder import RunFolder
from gpubench.run.lanes.lane import Lane, Outcome, default_lane
from gpubench.run.machine import detect_machine
from gpubench.run.plan import Point, choose_dtypes, choose_shapes, group_seed
from gpubench.timing.envinfo import host_env
from gpubench.timing.hostload import busy_factor, busy_reason
from gpubench.timing.settings import TimingSettings
from gpubench.timing.timers import modes_for_device
from gpubench.verdicts.derive import finish_group

PROFILES = Path("profiles")
SEED = 0


@dataclass(frozen=True)
class ABRequest:
    """What `gpubench ab` was asked for, built once by the CLI."""

    family: str
    config: RunConfig = field(default_factory=RunConfig)  # shapes, dtypes, variants, timing
    base: Path | None = None
    new: Path | None = None
    base_rev: str | None = None
    threshold: float = AB_THRESHOLD
    device: str = "auto"
    out: Path | None = None
    fail_on_regression: bool = False
    markdown: bool = False

    @classmethod
    def from_options(cls, family: str, config: RunConfig, threshold: float,
                     options: dict) -> ABRequest:
        """The command line's options that this request names (the rest are in config)."""
        named = {f.name for f in fields(cls)} - {"family", "config", "threshold"}
        return cls(family, config, threshold=threshold,
                   **{k: v for k, v in options.items() if k in named})


@dataclass(frozen=True)
class Versions:
    """The two family folders, and how the run names them."""

    base: Path
    new: Path
    base_label: str
    new_label: str


def execute(request: ABRequest, console: Console) -> int:
    """The command's one entry (every command module has it: cli.py calls it)."""
    return ABCommand(request, console).execute()


class ABCommand:
    def __init__(self, request: ABRequest, console: Console):
        self.request, self.console = request, console
        self.started = time.perf_counter()

    def execute(self) -> int:
        request = self.request
        machine = detect_machine(request.device)
        if not machine.has_cuda:  # as the worker: before any @triton.jit runs
            os.environ.setdefault("TRITON_INTERPRET", "1")
        os.environ.setdefault("GPUBENCH_CEILINGS", "0")  # no roofline column here
        versions = resolve_versions(request)
        timing = self._timing(machine)
        points, controls = self._plan(versions, machine)
        out = request.out or new_run_dir(PROFILES, [request.family, "ab"])
        folder = RunFolder(out, latest_base=None if request.out else PROFILES).claim()
        lane = default_lane(machine.device, folder.path, "ab-worker")
        outcomes: list[Outcome | None] = [None] * len(points)
        interrupted = None
        try:
            measure_pairs(lane, points, versions.base, timing, outcomes, self.console)
        except KeyboardInterrupt as exc:
            interrupted = exc
        finally:
            lane.kill() if interrupted else lane.stop()
        try:
            code = self._conclude(points, controls, outcomes, versions, timing, folder,
                                  lane.env, interrupted)
        finally:
            folder.release()
        if interrupted is not None:
            raise interrupted
        return code

    def _timing(self, machine) -> TimingSettings:
        return paired_timing(self.request.config.timing, machine.device, self.request.threshold)

    def _plan(self, versions: Versions, machine) -> tuple[list[Point], set[str]]:
        """The points (NEW's variants that BASE has too, at NEW's shapes) and the controls."""
        name, config = self.request.family, self.request.config
        base = load_family(name, versions.base)
        new = load_family(name, versions.new)
        # not the compiled row: torch.compile generates its code in each process and
        # autotunes it there, so BASE's and NEW's may differ with no source changed (the
        # A/A in docs/measurement.md, "A/B in one process")
        shared = [v for v in new.variants if v.name in {b.name for b in base.variants}
                  and v.kind != compiled.KIND]
        wanted = set(config.variants or ())
        chosen = [v for v in shared if not wanted or v.name in wanted]
        if not chosen:
            raise errors.UsageError(
                f"no variant of {name} to pair: BASE has {_names(base.variants)}, NEW has "
                f"{_names(new.variants)}" + (f", asked for {', '.join(sorted(wanted))}"
                                             if wanted else ""))
        self._say_unpaired(base, new)
        changed = changed_variants(name, versions.base, versions.new, new, machine)
        controls = set() if changed is None else {v.name for v in chosen} - set(changed)
        points = []
        for dtype in choose_dtypes(new, config.dtypes):
            for shape in choose_shapes(new, config.shapes, machine):
                seed = group_seed(config.seed if config.seed is not None else SEED, name,
                                  dtype, shape)
                points += [Point(new, v, shape, dtype, seed) for v in chosen
                           if not v.unavailable_reason(dtype, machine)]
        return points, controls

    def _say_unpaired(self, base, new) -> None:
        only_base = sorted({v.name for v in base.variants} - {v.name for v in new.variants})
        only_new = sorted({v.name for v in new.variants} - {v.name for v in base.variants})
        for side, names in (("BASE", only_base), ("NEW", only_new)):
            if names:
                self.console.print(safe_text.terminal(
                    f"only in {side}, not paired: {', '.join(names)}"), markup=False)

    # ------------------------------------------------------------ the record

    def _conclude(self, points, controls, outcomes, versions, timing, folder, env,
                  interrupted) -> int:
        rows, verdicts = pair_verdicts(points, outcomes, timing, env, controls,
                                       self.request.threshold)
        meta = {**host_env(), "run_id": folder.path.name, "run_dir": str(folder.path),
                "command": "ab", "device": env.get("device") or
                ("cuda" if env.get("gpu") else "cpu"), "families": [self.request.family],
                "timing": timing.to_dict(), "wall_s": time.perf_counter() - self.started,
                "ab": {"threshold": self.request.threshold, "base": versions.base_label,
                       "new": versions.new_label, "base_dir": str(versions.base),
                       "new_dir": str(versions.new), "controls": sorted(controls),
                       "verdicts": [v.to_dict() for v in verdicts]}}
        if interrupted is not None:
            unrun = sum(o is None for o in outcomes)
            meta[C.INCOMPLETE] = f"interrupted: {unrun} of {len(outcomes)} pairs not run"
        else:
            meta["finished"] = time.strftime(TIME_FORMAT)
        paths = folder.save(RunDocument(meta, env, tuple(rows)))
        title = (f"ab {self.request.family}: NEW {versions.new_label} against BASE "
                 f"{versions.base_label} on {env.get('gpu') or 'CPU'}")
        self.console.print(ab_table(verdicts, title, self.request.threshold))
        for note in drift_notes(verdicts):
            self.console.print(safe_text.terminal(note), markup=False, soft_wrap=True)
        if self.request.markdown:
            self.console.print(ab_markdown(verdicts, title), markup=False, soft_wrap=True)
        self.console.print(f"saved: {paths[0] if paths else folder.path}", markup=False,
                           soft_wrap=True)
        if self.request.fail_on_regression and regressions(verdicts):
            return errors.EXIT_REGRESSION
        return errors.EXIT_OK


def paired_timing(timing: TimingSettings, device: str, threshold: float) -> TimingSettings:
    """run's settings for pairs: the threshold as their target (they stop once their
    interval decides at it, run/ab/pair.py, or after --max-time); a mode whose samples are
    not one call each is a UsageError."""
    unpaired = [m for m in modes_for_device(timing.modes, device) if m not in PAIRED_MODES]
    if unpaired:
        raise errors.UsageError(f"ab times in pairs, one call a sample: mode(s) "
                                f"{', '.join(unpaired)} cannot; use "
                                f"{', '.join(m for m in PAIRED_MODES if m != 'cpu')}")
    return replace(timing, target_rel_ci=threshold)


def measure_pairs(lane: Lane, points: list[Point], base: Path, timing: TimingSettings,
                  outcomes: list, console: Console) -> None:
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
            task = replace(point.task(index + 1, timing), base_dir=str(base))
            # two builds and two checks: twice a point's limits
            outcomes[index] = lane.execute(task, 2 * timing.timeout_s,
                                           2 * timing.build_timeout_s)
            progress.advance(bar)


def pair_verdicts(points: list[Point], outcomes: list, timing: TimingSettings, env: dict,
                  controls: set[str], threshold: float) -> tuple[list, list]:
    """(both sides' rows, derived as `run` derives them; the PairVerdicts)."""
    modes = modes_for_device(timing.modes, "cuda" if env.get("gpu") else "cpu")
    rows = _rows(points, outcomes, modes, env)
    return rows, judge_pairs(_entries(points, outcomes, modes, rows, controls), threshold)


def _rows(points: list[Point], outcomes: list, modes: tuple[str, ...], env: dict) -> list:
    """Both sides' rows per point and mode, derived per group as `run` derives them (its
    SUSPECT rules included)."""
    where = {"device_id": env.get("device_id", ""),
             "device_name": env.get("gpu") or env.get("cpu") or ""}
    groups: dict[tuple, list] = {}
    for point, outcome in zip(points, outcomes, strict=True):
        for mode in modes:
            for row in _point_rows(point, outcome, mode):
                groups.setdefault((point.dtype, point.shape.text(), mode), []).append(
                    replace(row, **where))
    return [row for group in groups.values() for row in finish_group(group, None)]


def _point_rows(point: Point, outcome: Outcome | None, mode: str) -> list:
    if outcome is None:
        row = point.result(mode, R.NOT_RUN, error="not run: ab was interrupted")
        return [row, _as_base(row)]
    new = outcome.result
    if new is None:
        row = point.result(mode, outcome.failure or R.ERROR, error=outcome.error)
        return [row, _as_base(row)]
    base = new.base or new
    return [_side_row(point, new, mode), _as_base(_side_row(point, base, mode))]


def _side_row(point: Point, worker, mode: str):
    measurement = worker.measurements.get(mode)
    status = worker.status
    error = worker.error
    if status == R.OK and measurement is not None and measurement.error:
        status, error = (R.FAIL if measurement.recheck_failed else R.ERROR), measurement.error
    return point.result(mode, status, error=error, measurement=measurement,
                        check=worker.check, build=worker.build, device=worker.device)


def _as_base(row):
    return replace(row, key=replace(row.key, variant=base_name(row.key.variant)),
                   baseline=False)


def _entries(points: list[Point], outcomes: list, modes: tuple[str, ...], rows: list,
             controls: set[str]) -> list[PairEntry]:
    """Each point and mode as the verdicts need it: the pairs, or why a side has no
    trusted time (its derived row is failed or SUSPECT)."""
    by_key = {r.key.text(): r for r in rows}
    entries = []
    for point, outcome in zip(points, outcomes, strict=True):
        result = outcome.result if outcome is not None else None
        for mode in modes:
            key = point.key(mode)
            sides = (("new", by_key[key.text()]),
                     ("base", by_key[replace(key, variant=base_name(key.variant)).text()]))
            status, why = _untrusted(sides)
            paired = result.paired.get(mode) if result is not None else None
            why = why or (result.untimed if result is not None and result.untimed else "")
            busy = _busy_host(sides)
            entries.append(PairEntry(key.variant, key.dtype, key.shape.text(), mode,
                                     key.variant in controls, paired, status, why, *busy))
    return entries


def _busy_host(sides) -> tuple[float, str]:
    """(how many times slower the host's other work can have made a side's calls, why):
    (1.0, "") on a quiet host or a GPU (timing/hostload.py, as `compare` reads it)."""
    loads = [row.host_load for _, row in sides]
    reasons = [why for load in loads if (why := busy_reason(load))]
    return max((busy_factor(load) for load in loads), default=1.0), "; ".join(reasons)


def _untrusted(sides) -> tuple[str, str]:
    """(FAILED or SUSPECT, why) when a side's row is not a PASS; ("", "") when both are."""
    for verdict, untrusted in ((FAILED, lambda r: not r.correct),
                               (SUSPECT, lambda r: not r.passed)):
        for side, row in sides:
            if untrusted(row):
                label = R.status_label(row.status)
                return verdict, f"{side} {label}: {row.error or ''}".rstrip(": ")
    return "", ""


def _names(variants) -> str:
    return ", ".join(v.name for v in variants) or "none"


# ---------------------------------------------------------------- the two versions


def resolve_versions(request: ABRequest) -> Versions:
    """BASE's and NEW's family folders: --new or the family as found (--kernels-dir, the
    shipped ones); --base, or --base-rev's copy of NEW's folder at that git revision."""
    name = request.family
    if request.new is not None:
        new = family_folder(request.new, name, "--new")
    else:
        new = resolve_families((name,), family_dirs(request.config.kernels_dirs))[name]
    if (request.base is None) == (request.base_rev is None):
        raise errors.UsageError("give BASE: --base DIR (a folder holding the family) or "
                                "--base-rev REV (the family's folder at a git revision)")
    if request.base is not None:
        base = family_folder(request.base, name, "--base")
        return Versions(base, new, str(request.base), str(request.new or new))
    base, commit = export_revision(new, request.base_rev)
    return Versions(base, new, f"{request.base_rev} ({commit[:12]})",
                    "working tree" if request.new is None else str(request.new))


def family_folder(folder: Path, name: str, option: str) -> Path:
    """The family's folder given as FOLDER (holding spec.py) or as FOLDER/NAME."""
    folder = Path(folder)
    for candidate in (folder, folder / name):
        if (candidate / "spec.py").is_file():
            return candidate.resolve()
    raise errors.UsageError(f"{option} {folder}: no spec.py in it, nor in {folder / name}: "
                            "give the family's folder")


def export_revision(folder: Path, revision: str) -> tuple[Path, str]:
    """A copy of `folder` as it was at git `revision`, in gpubench's cache (kept: the same
    commit is exported once), and the commit's hash."""
    def git(*args: str, where: Path = folder) -> bytes:
        try:
            done = subprocess.run(["git", *args], cwd=where, capture_output=True,
                                  timeout=120)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise errors.UsageError(f"--base-rev needs git: {exc}") from None
        if done.returncode != 0:
            why = done.stderr.decode(errors="replace").strip().splitlines()
            raise errors.UsageError(f"--base-rev {revision}: git {args[0]} failed: "
                                    f"{why[-1] if why else done.returncode}")
        return done.stdout

    top = Path(git("rev-parse", "--show-toplevel").decode().strip())
    commit = git("rev-parse", "--verify", "--end-of-options",
                 f"{revision}^{{commit}}").decode().strip()
    relative = folder.resolve().relative_to(top.resolve())
    root = cache_root() / "ab-base" / commit
    target = root / relative
    if not (target / "spec.py").is_file():
        archive = git("archive", "--format=tar", commit, "--", str(relative), where=top)
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(root, filter="data")
    if not (target / "spec.py").is_file():
        raise errors.UsageError(f"--base-rev {revision}: {relative} has no spec.py at "
                                f"{commit[:12]}")
    return target, commit
