"""`gpubench bisect FAMILY --good REV --bad REV`: the commit that made a family slower.

First an `ab` of BAD against GOOD (every chosen point): no SLOWER point means no culprit.
Otherwise the points that moved (their variants) are probed: each probe is an in-process
`ab` of one commit that changed the family's folder against GOOD (analysis/bisect.py
chooses which), and the first SLOWER commit is confirmed by an `ab` against its parent.
Every `ab` is a run folder under the bisect's folder (probe-N, confirm); the bisect's own
results.json holds the confirming A/B's rows and, in meta["bisect"], the probes.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, fields, replace
from pathlib import Path

from gpubench import errors, safe_text
from gpubench.analysis.ab import FAILED, SUSPECT
from gpubench.analysis.bisect import NOT_SLOWER, SKIP, SLOWER, Bisection
from gpubench.commands import ab
from gpubench.commands.command import Command
from gpubench.commands.revision_ab import ab_of_revisions
from gpubench.families.discovery import family_dirs, resolve_families
from gpubench.records.ab import PairVerdict
from gpubench.records.kernel_change import explanations
from gpubench.report.explain_view import explain_view
from gpubench.report.files import new_run_dir
from gpubench.run.ab.commits import Commit, changes_between, commit_of
from gpubench.run.config import RunConfig
from gpubench.store.folder import RunFolder, load_run

PROFILES = Path("profiles")


@dataclass(frozen=True)
class BisectRequest:
    family: str
    good: str
    bad: str
    config: RunConfig = field(default_factory=RunConfig)  # shapes, dtypes, variants, timing
    threshold: float = ab.AB_THRESHOLD
    device: str = "auto"
    out: Path | None = None
    markdown: bool = False
    explain: bool = False  # --explain: the confirming A/B profiles its moved points (ncu)

    @classmethod
    def from_options(cls, family: str, config: RunConfig, threshold: float,
                     options: dict) -> BisectRequest:
        """The command line's options that this request names (the rest are in config)."""
        named = {f.name for f in fields(cls)} - {"family", "config", "threshold"}
        return cls(family=family, config=config, threshold=threshold,
                   **{k: v for k, v in options.items() if k in named})


@dataclass(frozen=True)
class Probe:
    commit: Commit
    against: str  # the revision it was paired with
    outcome: str  # analysis/bisect's SLOWER, NOT_SLOWER or SKIP
    verdicts: tuple[PairVerdict, ...]
    folder: Path

    def change(self) -> str:
        """The slowest point's change with its interval: '+300% [+296%, +305%] work ...'."""
        timed = [v for v in self.verdicts if v.ratio == v.ratio]
        if not timed:
            return "no timed point"
        v = max(timed, key=lambda v: v.ratio)
        return (f"{v.change:+.2%} [{v.low - 1:+.2%}, {v.high - 1:+.2%}] {v.variant} "
                f"{v.shape} {v.dtype} {v.mode}")


@dataclass(eq=False)
class BisectCommand(Command[BisectRequest]):
    started: float = field(default_factory=time.perf_counter)
    probes: list[Probe] = field(default_factory=list)

    def execute(self) -> int:
        request = self.request
        folder = resolve_families((request.family,), family_dirs(
            request.config.kernels_dirs))[request.family]
        out = request.out or new_run_dir(PROFILES, [request.family, "bisect"])
        record = RunFolder(out, latest_base=None if request.out else PROFILES).claim()
        try:
            return self._bisect(folder, record)
        finally:
            record.release()

    def _bisect(self, folder: Path, record: RunFolder) -> int:
        request = self.request
        good, bad = (commit_of(folder, rev) for rev in (request.good, request.bad))
        commits = changes_between(folder, good.sha, bad.sha)
        first = self._probe(folder, bad, good.sha, record.path, request.config)
        moved = sorted({v.variant for v in first.verdicts if v.verdict == "SLOWER"})
        if first.outcome != SLOWER or not commits:
            return self._finish(record, None, None, "no culprit: BAD is not slower than GOOD"
                                if first.outcome != SLOWER else "no commit changed the "
                                "family's folder between GOOD and BAD")
        config = replace(request.config, variants=tuple(moved))
        state = Bisection(len(commits))
        state.record(len(commits) - 1, SLOWER)  # BAD, probed first
        while (index := state.next()) is not None:
            state.record(index, self._probe(folder, commits[index], good.sha, record.path,
                                            config).outcome)
        culprit = commits[state.culprit()]
        parent = commit_of(folder, f"{culprit.sha}^")
        confirm = self._probe(folder, culprit, parent.sha, record.path, config, "confirm",
                              explain=request.explain)
        doubt = [commits[i].sha[:12] for i in state.skipped_before()]
        return self._finish(record, culprit, confirm, "", doubt)

    def _probe(self, folder: Path, commit: Commit, against: str, root: Path,
               config: RunConfig, name: str = "", explain: bool = False) -> Probe:
        """One `ab` of `commit` against `against`, quietly, into its own run folder."""
        name = name or f"probe-{len(self.probes) + 1}"
        try:
            verdicts = ab_of_revisions(self.request.family, folder, against, commit.sha,
                                       root / name, config, self.request.threshold,
                                       self.request.device, explain)
        except errors.GpubenchError as exc:
            verdicts, outcome = (), SKIP
            self._say(f"{name} {commit.sha[:12]}: skipped ({exc})")
        else:
            outcome = probe_outcome(verdicts)
        probe = Probe(commit, against, outcome, verdicts, root / name)
        self.probes.append(probe)
        self._say(f"{name} {commit.sha[:12]} {commit.subject[:50]!r} against "
                  f"{against[:12]}: {outcome.upper()}, {probe.change()}")
        return probe

    def _finish(self, record: RunFolder, culprit: Commit | None, confirm: Probe | None,
                none_why: str, doubt: list[str] | None = None) -> int:
        wall = time.perf_counter() - self.started
        count = len(self.probes)
        lines = [f"bisect {self.request.family}: {count} probe{'s' * (count != 1)}, "
                 f"{wall:.1f} s"]
        if culprit is None:
            lines.append(none_why)
        else:
            confirmed = confirm is not None and confirm.outcome == SLOWER
            lines.append(f"culprit: {culprit.sha[:12]} {culprit.subject!r} ({culprit.date})"
                         f", {'confirmed' if confirmed else 'NOT confirmed'} against its "
                         f"parent: {confirm.change() if confirm else '-'}")
            if doubt:
                lines.append(f"doubt: skipped commits just before it: {', '.join(doubt)}")
        for line in lines:
            self._say(line)
        if confirm is not None and self.request.explain:
            self.console.print(explain_view(explanations(load_run(confirm.folder).meta)))
        if self.request.markdown:
            self.console.print("\n".join(["**" + safe_text.markdown(lines[0]) + "**", "",
                                          *(f"- {safe_text.markdown(x)}" for x in lines[1:]),
                                          *(f"- probe {p.commit.sha[:12]}: {p.outcome}, "
                                            f"{safe_text.markdown(p.change())}"
                                            for p in self.probes)]),
                               markup=False, soft_wrap=True)
        self._save(record, culprit, confirm, lines, wall)
        confirmed = culprit is not None and confirm is not None and confirm.outcome == SLOWER
        return errors.EXIT_REGRESSION if confirmed else errors.EXIT_OK

    def _save(self, record: RunFolder, culprit, confirm, lines, wall) -> None:
        """The bisect's record: the confirming A/B's (or the first probe's) document, with
        meta["bisect"] saying what was probed and found."""
        source = confirm or (self.probes[0] if self.probes else None)
        if source is None or not (source.folder / "results.json").is_file():
            return
        document = load_run(source.folder)
        meta = {**document.meta, "command": "bisect", "run_id": record.path.name,
                "run_dir": str(record.path), "wall_s": wall,
                "bisect": {"good": self.request.good, "bad": self.request.bad,
                           "culprit": culprit.sha if culprit else None, "lines": lines,
                           "probes": [{"commit": p.commit.sha, "against": p.against,
                                       "outcome": p.outcome, "change": p.change(),
                                       "folder": str(p.folder)} for p in self.probes]}}
        record.save(replace(document, meta=meta))

    def _say(self, text: str) -> None:
        self.console.print(safe_text.terminal(text), markup=False, soft_wrap=True)


def probe_outcome(verdicts: tuple[PairVerdict, ...]) -> str:
    """SLOWER when any point is; SKIP when a side failed or was SUSPECT (nothing to read);
    else not slower."""
    if any(v.verdict == "SLOWER" for v in verdicts):
        return SLOWER
    if not verdicts or any(v.verdict in (FAILED, SUSPECT) for v in verdicts):
        return SKIP
    return NOT_SLOWER


execute = BisectCommand.entry  # the module's one entry (command.py): cli/app.py calls it
