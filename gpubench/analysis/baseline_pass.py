"""The pass of `gpubench run --baseline RUN`: each finished group compared with RUN, point
by point (comparison.py), before its table is shown. The Comparison of each result goes
in its "vs_baseline" extra (records/features/vs_baseline.py), which the table's
`vs --baseline` column reads; a result with no counterpart in RUN gets None."""

from __future__ import annotations

from gpubench.analysis.comparison import compare_runs
from gpubench.records import result as R
from gpubench.records.features.vs_baseline import VS_BASELINE
from gpubench.records.run import RunDocument
from gpubench.timing.ratio_ci import family_level


class BaselineComparison:
    """Reads ctx.baseline (the loaded RUN), ctx.meta and ctx.env() (this run so far)."""

    name = "baseline"
    after_table = False

    def enabled(self, request) -> bool:
        return bool(request.baseline)

    def apply(self, group: list[R.Result], ctx) -> list[R.Result]:
        compared = compare_runs(ctx.baseline, RunDocument(ctx.meta, ctx.env(), tuple(group)),
                                level=baseline_level(ctx.baseline))
        verdicts = {key: point.comparison for key, point in compared.by_key().items()}
        return [r.with_extra(VS_BASELINE, verdicts.get(r.key.text())) for r in group]


def baseline_level(baseline: RunDocument) -> float:
    """The level every `--baseline` interval is taken at: family-wise over the baseline's
    points (timing/ratio_ci.family_level), the same for each group's table as for the
    run's closing summary, which compares all groups at once."""
    return family_level(len(baseline.results))
