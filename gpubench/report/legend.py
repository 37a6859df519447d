"""The legend of the results tables: what each column, mark and unusual cell means.

A table printed alone carries its own (its caption); a run's tables share one, printed
once after the last (report/run_tables.py): the legend repeated under every table was
~6 lines a group at 80 columns saying the same thing. So a Legend is built up group by
group, each sentence once, in the order first met. Pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from gpubench.families import compiled
from gpubench.records import result as R
from gpubench.records.features import EXTRAS
from gpubench.timing import precision

KERNELS_HEADER = "kernels"
BASELINE_HEADER = "vs --baseline"
# What the median cell of a correctness-only row says (records/result.correctness_only).
INTERPRETED = "interp."

COLUMNS = ("±CI: 95% CI of the median; IQR: spread; both as % of the median. TFLOP/s, GB/s: "
           "the family's napkin-math FLOPs and bytes. of roof: share of the measured roofline "
           "at this intensity (mem/comp-bound). vs base: baseline median / variant median "
           "± its 95% CI (bootstrap), "
           "same mode, PASS rows only.")
PRECISION_NOTE = (" of roof 'tf32' (or another precision): the variant computes in that "
                  "precision, and its roof is that precision's measured ceiling.")
ALLOC_NOTE = (" (alloc): the variant returns a new output tensor; allocating it is part of its "
              "time.")
COMPILED_NOTE = (" compiled: torch.compile of the family's reference, the compiler's own kernel "
                 "(Inductor; its mode in results.json); its build is the first call at the "
                 "shape, compile included ('cached': Inductor's FX-graph cache had it).")
INTERPRETED_NOTE = (f" {INTERPRETED}: {R.CORRECTNESS_ONLY} (no speedup, rate or roof "
                    "share).")
KERNELS_CAPTION = (" kernels: device work per call (k kernels + m memsets/copies) when a call "
                   "does more than one thing, and which time the median is: span = first start "
                   "to last end, gaps included (kernel sum in results.json); sum = kernels "
                   "only.")
BASELINE_CAPTION = (" vs --baseline: this run's median against the --baseline run's, and "
                    "the verdict of `gpubench compare` (FASTER/SLOWER/SAME/UNSURE).")


@dataclass
class Legend:
    """The legend of one table or of a run's tables: the timing methods met, then the fixed
    explanation of the columns, then each note that some row or shown column called for."""

    methods: dict[str, None] = field(default_factory=dict)  # "cold: cuda-events ..."
    notes: dict[str, None] = field(default_factory=dict)  # ordered set of sentences

    @classmethod
    def of(cls, group: Sequence[R.Result], headers: Iterable[str]) -> Legend:
        return cls().add(group, headers)

    def add(self, group: Sequence[R.Result], headers: Iterable[str]) -> Legend:
        """Adds what `group`'s rows and its shown `headers` need explained."""
        self.methods.update(dict.fromkeys(sorted({f"{r.mode}: {r.method}" for r in group
                                                  if r.method})))
        self.notes.update(dict.fromkeys(group_notes(group, set(headers))))
        return self

    def text(self, also: str = "") -> str:
        """The legend as one paragraph; `also`: a sentence to end it with (which columns
        the width left out)."""
        timing = "; ".join(self.methods) if self.methods else "nothing was timed"
        return f"median of n samples ({timing}). {COLUMNS}{''.join(self.notes)}{also}"


def group_notes(group: Sequence[R.Result], headers: set[str]) -> list[str]:
    """The notes `group` calls for, in the order a table's caption has always had them."""
    notes = []
    if any(precision.differs(r.roof, r.dtype) for r in group):
        notes.append(PRECISION_NOTE)
    if any(r.build.allocates_output for r in group):
        notes.append(ALLOC_NOTE)
    if any(r.kind == compiled.KIND for r in group):
        notes.append(COMPILED_NOTE)
    notes.extend(spec.mark_caption for r in group for spec in marking(r))
    if any(r.correct and R.correctness_only(r) for r in group):
        notes.append(INTERPRETED_NOTE)
    if BASELINE_HEADER in headers:
        notes.append(BASELINE_CAPTION)
    if KERNELS_HEADER in headers:
        notes.append(KERNELS_CAPTION)
    notes.extend(spec.table.caption for spec in EXTRAS
                 if spec.table is not None and spec.table.header in headers)
    return list(dict.fromkeys(notes))


def marking(result: R.Result) -> list:
    """The extras of a result that mark its check cell with a '*' (their ExtraSpecs)."""
    return [e.spec for e in result.extras.values()
            if e.spec.marks_check is not None and e.spec.marks_check(e.value)]
