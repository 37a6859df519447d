"""The judge's ground truth for one task: inputs drawn from their seeds, references made
from them, the comparison, and a tally of every verdict (see this package's docstring).

The same class serves in the judge process (server.py) and, for the one-shot tools (ncu,
a trace), inside the worker, where no boundary is needed: they report no verdict.
"""

from __future__ import annotations

from pathlib import Path

from gpubench.families import sideeffects
from gpubench.families.check import CheckResult, compare
from gpubench.families.discovery import load_family
from gpubench.families.spec import Family
from gpubench.records.point import Task
from gpubench.run.judge import wire
from gpubench.run.judge.ruling import CHECK, INPUTS, JudgeSummary
from gpubench.run.worker.draws import draw_inputs, reference
from gpubench.run.worker.rotation import MAX_SETS
from gpubench.tune.space import split_name


class Judge:
    """Checks outputs and inputs of the task opened last; `close()` gives the tally."""

    def __init__(self, device: str):
        self.device = device
        self.families: dict[str, Family] = {}
        self.task: Task | None = None
        self.family: Family | None = None
        self.tolerance: tuple[float, float] = (0.0, 0.0)
        # The references of the point's own sets (the check's seed and the timing sets'
        # after it, run/worker/execute.py), kept while the point lasts: every variant of the point
        # is compared with the same ones, made once. Fresh-probe seeds are not kept.
        self.references: dict[int, object] = {}
        self.point: tuple | None = None
        self.warmed: set[str] = set()  # dtypes whose comparison ran once (prefetch)
        self.roles: dict[str, int] = {}
        self.wrong: dict[str, int] = {}
        self.batches = 0  # check_all calls made in this process (LocalJudge)
        self.seen: set[tuple] = set()  # (role, batch) already counted as a request
        self.wrong_batches: set[tuple] = set()  # (role, batch) already counted as wrong
        self.failure: str | None = None
        self.first_check: CheckResult | None = None

    def open(self, task: Task) -> None:
        self.task = task
        self.family = self._family(task)
        variant = self.family.variant(split_name(task.variant)[0])
        self.tolerance = self.family.tolerance(task.dtype, variant)
        point = (task.family_dir, tuple(sorted(task.shape.items())), task.dtype, task.seed)
        if point != self.point:
            self.point, self.references = point, {}
        self.roles, self.wrong, self.failure, self.first_check = {}, {}, None, None
        self.seen, self.wrong_batches = set(), set()

    def prefetch(self) -> None:
        """Make the checked call's reference now, while the worker builds and loads the
        variant: its first uses (a BLAS handle, kernels loaded on first launch: ~0.3 s at a
        run's first point on a GPU) then overlap the worker's, not the check's wait. A
        reference that fails here fails again when the check asks, and is reported then."""
        try:
            self._warm_compare(self._reference(self.task.seed))
        except Exception:  # reported when the check asks for it
            return

    def _warm_compare(self, made) -> None:
        """The comparison's kernels loaded once per dtype (a first launch loads each)."""
        import torch

        if self.task.dtype in self.warmed or not isinstance(made, torch.Tensor):
            return
        compare(made.to(getattr(torch, self.task.dtype)), made, *self.tolerance)
        self.warmed.add(self.task.dtype)

    def close(self) -> JudgeSummary:
        summary = JudgeSummary(dict(self.roles), self.failure, self.first_check,
                               dict(self.wrong))
        self.task = None
        return summary

    def check(self, role: str, seed: int, output, batch: int | None = None) -> CheckResult:
        """`output` against the reference of the inputs `seed` draws. Outputs of one
        `batch` (a mode's re-checks) are tallied as one request: the worker fails the
        mode once, whatever number of its copies are wrong."""
        self._require_open()
        result = compare(output, self._reference(seed), *self.tolerance)
        self._tally(role, None if result.passed else f"a {role} output wrong "
                    f"(inputs of seed {seed}): {result.summary()}", batch)
        if role == CHECK and self.first_check is None:
            self.first_check = result
        return result

    def check_all(self, role: str, outputs: list[tuple[int, object]]) -> list[CheckResult]:
        """Each (seed, output) of one batch (LocalJudge's side of RemoteJudge.check_all)."""
        self.batches += 1
        return [self.check(role, seed, output, self.batches) for seed, output in outputs]

    def mutated(self, seed: int, digests: list) -> list[str]:
        """The names of the inputs whose digests (wire.digest of the inputs as the worker
        holds them after the calls; None for a number) differ from a fresh draw's."""
        self._require_open()
        truth = [wire.digest(item) for item in self._draw(seed)]
        names = sideeffects.input_names(self.family.reference, len(truth))
        given = list(digests) + [None] * (len(truth) - len(digests))
        changed = [name for name, held, drawn in zip(names, given, truth, strict=False)
                   if drawn is not None and held != drawn]
        self._tally(INPUTS, f"inputs written by the variant: {', '.join(changed)}"
                    if changed else None)
        return changed

    def refuse(self, why: str) -> None:
        """A request the judge could not decide: the task cannot pass."""
        self._tally("error", why)

    def _tally(self, role: str, failure: str | None, batch: int | None = None) -> None:
        """Count a request (a batch once) and, when wrong, its role's wrong ones."""
        key = (role, batch)
        if batch is None or key not in self.seen:
            self.roles[role] = self.roles.get(role, 0) + 1
        if failure and (batch is None or key not in self.wrong_batches):
            self.wrong[role] = self.wrong.get(role, 0) + 1
            self.failure = self.failure or failure
            if batch is not None:
                self.wrong_batches.add(key)
        if batch is not None:
            self.seen.add(key)

    def _require_open(self) -> None:
        if self.task is None:
            raise RuntimeError("the judge was asked about outputs outside a task")

    def _draw(self, seed: int) -> tuple:
        return draw_inputs(self.family, self.task, self.device, seed)

    def _reference(self, seed: int):
        kept = self.task.seed <= seed <= self.task.seed + MAX_SETS
        if kept and seed in self.references:
            return self.references[seed]
        made = reference(self.family, self._draw(seed))
        if kept:
            self.references[seed] = made
        return made

    def _family(self, task: Task) -> Family:
        if task.family_dir not in self.families:
            self.families[task.family_dir] = load_family(task.family, Path(task.family_dir))
        return self.families[task.family_dir]
