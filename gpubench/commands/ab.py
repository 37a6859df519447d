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

import os
import sys
import time
from dataclasses import dataclass, field, fields
from pathlib import Path

from gpubench import errors, safe_text
from gpubench.analysis.aa import calibrate, noise_thresholds, own_thresholds, with_resolution
from gpubench.analysis.ab import AB_THRESHOLD, drift_notes, gate_reasons
from gpubench.analysis.suite import ab_summary
from gpubench.commands.command import Command
from gpubench.commands.explain import explain_pairs
from gpubench.families import compiled
from gpubench.families.discovery import load_family
from gpubench.families.versions import changed_variants
from gpubench.records import completeness as C
from gpubench.records.run import TIME_FORMAT, RunDocument
from gpubench.report.ab_view import aa_table, ab_markdown, ab_table, budget_line
from gpubench.report.explain_view import explain_view
from gpubench.report.files import new_run_dir
from gpubench.run.ab.measure import measure_pairs
from gpubench.run.ab.modules import refuse_shared
from gpubench.run.ab.pair import paired_timing
from gpubench.run.ab.rows import pair_verdicts
from gpubench.run.ab.versions import Versions, aa_versions, resolve_versions
from gpubench.run.config import RunConfig
from gpubench.run.lanes.lane import Outcome, default_lane
from gpubench.run.machine import detect_machine
from gpubench.run.plan import Point, choose_dtypes, choose_shapes, group_seed
from gpubench.store.aa_calibration import load_calibration, save_calibration
from gpubench.store.folder import RunFolder
from gpubench.timing.envinfo import device_model, host_env

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
    aa: bool = False  # --aa: against an identical copy, to calibrate (analysis/aa.py)
    budget_s: float | None = None  # --budget: beyond --max-time, for the blocks (pair.py)
    threshold_from_aa: bool = False  # each point's threshold from its A/A (analysis/aa.py)
    explain: bool = False  # --explain: ncu on both sides of each moved point (explain.py)

    @classmethod
    def from_options(cls, family: str, config: RunConfig, threshold: float,
                     options: dict) -> ABRequest:
        """The command line's options that this request names (the rest are in config)."""
        named = {f.name for f in fields(cls)} - {"family", "config", "threshold"}
        return cls(family, config, threshold=threshold,
                   **{k: v for k, v in options.items() if k in named})


@dataclass(eq=False)
class ABCommand(Command[ABRequest]):
    started: float = field(default_factory=time.perf_counter)  # the record's wall_s from here
    thresholds: dict[str, float] = field(default_factory=dict)  # --threshold-from-aa's

    def execute(self) -> int:
        request = self.request
        machine = detect_machine(request.device)
        if not machine.has_cuda:  # as the worker: before any @triton.jit runs
            os.environ.setdefault("TRITON_INTERPRET", "1")
        pick = aa_versions if request.aa else resolve_versions
        versions = pick(request.family, request.config.kernels_dirs, base=request.base,
                        new=request.new, base_rev=request.base_rev)
        if versions.note:
            self.console.print(safe_text.terminal(versions.note), markup=False,
                               soft_wrap=True)
        points, controls = self._plan(versions, machine)
        timing = paired_timing(request.config.timing, machine.device, request.threshold,
                               len(points), request.budget_s)
        out = request.out or new_run_dir(PROFILES, [request.family, "ab"])
        folder = RunFolder(out, latest_base=None if request.out else PROFILES).claim()
        lane = default_lane(machine.device, folder.path, "ab-worker")
        outcomes: list[Outcome | None] = [None] * len(points)
        interrupted = None
        try:
            measure_pairs(lane, points, versions.base, timing, outcomes, self.console,
                          self._thresholds(machine))
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

    def _plan(self, versions: Versions, machine) -> tuple[list[Point], set[str]]:
        """The points (NEW's variants that BASE has too, at NEW's shapes) and the controls."""
        name, config = self.request.family, self.request.config
        base = load_family(name, versions.base)
        new = load_family(name, versions.new)
        refuse_shared(name, versions.base, versions.new)  # one helper would serve both
        # not the compiled row unless named: torch.compile generates its code in each
        # process and autotunes it there, so BASE's and NEW's may differ with no source
        # changed (the A/A in docs/measurement.md, "A/B in one process")
        wanted = set(config.variants or ())
        shared = [v for v in new.variants if v.name in {b.name for b in base.variants}
                  and (v.kind != compiled.KIND or v.name in wanted)]
        chosen = [v for v in shared if not wanted or v.name in wanted]
        if not chosen:
            raise errors.UsageError(
                f"no variant of {name} to pair: BASE has {_names(base.variants)}, NEW has "
                f"{_names(new.variants)}" + (f", asked for {', '.join(sorted(wanted))}"
                                             if wanted else ""))
        self._say_unpaired(base, new)
        changed = changed_variants(name, versions.base, versions.new, new, machine)
        controls = set() if changed is None else {v.name for v in chosen} - set(changed)
        points, skipped = [], {}
        for dtype in choose_dtypes(new, config.dtypes):
            for shape in choose_shapes(new, config.shapes, machine):
                seed = group_seed(config.seed if config.seed is not None else SEED, name,
                                  dtype, shape)
                for v in chosen:
                    if why := v.unavailable_reason(dtype, machine):
                        skipped.setdefault((v.name, why), []).append(shape)
                    else:
                        points.append(Point(new, v, shape, dtype, seed))
        self._say_skipped(name, skipped)
        return points, controls

    def _say_skipped(self, name: str, skipped: dict[tuple[str, str], list]) -> None:
        """What `run` says of a variant that cannot run here, so that an A/B of nothing
        says why rather than print an empty table."""
        for (variant, why), shapes in skipped.items():
            self.console.print(safe_text.terminal(
                f"skipped {len(shapes)} point(s) of {name}/{variant}: {why}"), markup=False,
                soft_wrap=True)

    def _say_unpaired(self, base, new) -> None:
        only_base = sorted({v.name for v in base.variants} - {v.name for v in new.variants})
        only_new = sorted({v.name for v in new.variants} - {v.name for v in base.variants})
        for side, names in (("BASE", only_base), ("NEW", only_new)):
            if names:
                self.console.print(safe_text.terminal(
                    f"only in {side}, not paired: {', '.join(names)}"), markup=False)

    # ------------------------------------------------------------ the record

    def _thresholds(self, machine) -> dict[str, float]:
        """--threshold-from-aa: each calibrated point's own threshold (analysis/aa.py), from
        `ab --aa` on this device model; said when there is none."""
        if not self.request.threshold_from_aa:
            return {}
        model = device_model(machine.device)
        self.thresholds = noise_thresholds(load_calibration(self.request.family, model))
        if not self.thresholds:
            self.console.print(safe_text.terminal(
                f"--threshold-from-aa: no A/A of {self.request.family} on {model} (run "
                f"`gpubench ab {self.request.family} --aa`): every point keeps --threshold"),
                markup=False, soft_wrap=True)
        return self.thresholds

    def _conclude(self, points, controls, outcomes, versions, timing, folder, env,
                  interrupted) -> int:
        rows, verdicts = pair_verdicts(points, outcomes, timing, env, controls,
                                       self.request.threshold, self.thresholds)
        model = env.get("gpu") or env.get("cpu") or ""
        explained = explain_pairs(self.request.family, versions.base, points, verdicts,
                                  folder.path) if self.request.explain and not interrupted else []
        calibrated = calibrate(verdicts) if self.request.aa else []
        own = own_thresholds(verdicts, self.thresholds)
        if not self.request.aa:
            verdicts = with_resolution(verdicts, load_calibration(self.request.family, model))
        meta = {**host_env(), "run_id": folder.path.name, "run_dir": str(folder.path),
                "command": "ab", "device": env.get("device") or
                ("cuda" if env.get("gpu") else "cpu"), "families": [self.request.family],
                "timing": timing.to_dict(), "wall_s": time.perf_counter() - self.started,
                "ab": {"threshold": self.request.threshold, "own_thresholds": own,
                       "base": versions.base_label,
                       "new": versions.new_label, "base_dir": str(versions.base),
                       "new_dir": str(versions.new), "controls": sorted(controls),
                       "verdicts": [v.to_dict() for v in verdicts],
                       # the suite line's figures (analysis/suite.py); older runs lack it
                       "suite": ab_summary(verdicts).to_dict(),
                       "aa": [c.to_dict() for c in calibrated],
                       "explain": [c.to_dict() for c in explained]}}
        if interrupted is not None:
            unrun = sum(o is None for o in outcomes)
            meta[C.INCOMPLETE] = f"interrupted: {unrun} of {len(outcomes)} pairs not run"
        else:
            meta["finished"] = time.strftime(TIME_FORMAT)
        paths = folder.save(RunDocument(meta, env, tuple(rows)))
        title = (f"ab {self.request.family}: NEW {versions.new_label} against BASE "
                 f"{versions.base_label} on {env.get('gpu') or 'CPU'}")
        self.console.print(ab_table(verdicts, title, self.request.threshold, own))
        if calibrated and interrupted is None:
            self.console.print(aa_table(calibrated, f"calibration of {self.request.family} "
                                                    f"on {model or 'this machine'}"))
            saved = save_calibration(self.request.family, model, calibrated)
            self.console.print(f"calibration: {saved}", markup=False, soft_wrap=True)
        self.console.print(budget_line(verdicts, timing), markup=False, soft_wrap=True)
        if explained:
            self.console.print(explain_view(explained))
        for note in drift_notes(verdicts):
            self.console.print(safe_text.terminal(note), markup=False, soft_wrap=True)
        if self.request.markdown:
            self.console.print(ab_markdown(verdicts, title, self.request.family), markup=False,
                               soft_wrap=True)
        self.console.print(f"saved: {paths[0] if paths else folder.path}", markup=False,
                           soft_wrap=True)
        reasons = gate_reasons(verdicts) if self.request.fail_on_regression else []
        for reason in reasons:  # where `compare`'s gate writes its reasons
            sys.stderr.write(safe_text.terminal(reason) + "\n")
        return errors.EXIT_REGRESSION if reasons else errors.EXIT_OK


def _names(variants) -> str:
    return ", ".join(v.name for v in variants) or "none"


execute = ABCommand.entry  # the module's one entry (command.py): cli/app.py calls it
