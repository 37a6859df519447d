"""`gpubench run --ncu-check`: ncu's duration of each passing point beside ours.

The value is what analysis/ncu_agreement.py decides: {"ncu_s", "deviation", "within",
"target", "compared", "judged", "cause", ...}; results.csv gets ncu's time and the
deviation, the table a `vs ncu` column after `vs --baseline`."""

from gpubench.records.extras import Column, ExtraSpec, TableColumn, value_of

CAPTION = (" vs ncu: our kernel time (the kernel sum of a multi-kernel call) against the "
           "sum of its kernels' ncu gpu__time_duration, run once per point (--ncu-check); "
           "! = beyond the target (±2% from 20 us, ±5% from 3 us, none below): see the "
           "warning; warm and wall measure something else and are not judged.")


def cell(check: dict | None) -> str:
    """'+0.4%', '+6.1% !' beyond the target, '-' without an ncu time."""
    if not check or check.get("deviation") is None:
        return "-"
    mark = " !" if check.get("within") is False else ""
    return f"{check['deviation']:+.1%}{mark}"


NCU_CHECK = ExtraSpec(
    "ncu_check",
    columns=(Column("ncu_s", lambda r: value_of(r, "ncu_check", "ncu_s")),
             Column("vs_ncu", lambda r: value_of(r, "ncu_check", "deviation"))),
    # Shown after `vs --baseline`, dropped right after ±CI in a narrow terminal.
    table=TableColumn("vs ncu", cell, after="vs --baseline", drop_after="±CI",
                      caption=CAPTION),
)
