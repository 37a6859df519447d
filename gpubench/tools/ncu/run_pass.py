"""The passes of `gpubench run --ncu-check` and `gpubench run --ncu`, on each finished group.

--ncu-check (before the table: its `vs ncu` column is in it) runs the group's passing
points once under ncu for their durations (check.py); --ncu (after the table: its own
short table follows the results') profiles each passing variant and keeps a summary
(points.py). Neither prints: a problem with ncu is a message, said once per group (once
per run for a CPU run) and costing no result.
"""

from __future__ import annotations

from gpubench import errors
from gpubench.records import result as R
from gpubench.run.pipeline import RunContext
from gpubench.tools.ncu.check import check_group, passing_points
from gpubench.tools.ncu.points import NcuOptions, ncu_summary, profile_points
from gpubench.tools.ncu.view import summary_table


class NcuCheck:
    """`--ncu-check`: ncu's duration for each passing point of the group (one ncu run)."""

    name = "ncu-check"
    after_table = False

    def __init__(self) -> None:
        self.said_cpu = False

    def enabled(self, request) -> bool:
        return bool(request.ncu_check)

    def apply(self, group: list[R.Result], ctx: RunContext) -> list[R.Result]:
        if not ctx.machine.has_cuda:
            if not self.said_cpu:
                ctx.say("--ncu-check: skipped — it compares with Nsight Compute, which needs "
                        "ncu and a CUDA GPU; this run timed on the CPU", soft_wrap=True)
                self.said_cpu = True
            return group
        try:
            return check_group(group, ctx.points, ctx.run_dir)
        except errors.GpubenchError as exc:
            ctx.say(f"  --ncu-check: {exc}", soft_wrap=True)
            return group


class NcuSummary:
    """`--ncu`: each passing variant of the group profiled once; its short form shown
    (after the group's table) and kept as the results' "ncu" extra."""

    name = "ncu"
    after_table = True

    def enabled(self, request) -> bool:
        return bool(request.ncu)

    def apply(self, group: list[R.Result], ctx: RunContext) -> list[R.Result]:
        if not ctx.machine.has_cuda:
            ctx.say("  --ncu: skipped, Nsight Compute needs a CUDA GPU")
            return group
        try:
            outcomes = profile_points(passing_points(group, ctx.points), ctx.run_dir,
                                      NcuOptions())
        except errors.GpubenchError as exc:  # ncu missing: say so once per group, go on
            ctx.say(f"  --ncu: {exc}", soft_wrap=True)
            return group
        summaries = {o.variant: ncu_summary(o) for o in outcomes}
        ctx.say(summary_table(summaries))
        return [r.with_derived(ncu=summaries.get(r.variant)) for r in group]
