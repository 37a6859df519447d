"""`gpubench run --sanitize`: memcheck's outcome on a variant, on each of its rows.

The value is what tools/sanitizer/run_pass.py records (run_mark): {"tool", "findings", "error",
"rows"}; results.csv gets the number of findings, and the check cell a '*' when there
are any (the notes carry the first one, as a warning)."""

from gpubench.records.extras import Column, ExtraSpec, value_of


def _found(mark) -> bool:
    return bool((mark or {}).get("findings"))


SANITIZER = ExtraSpec(
    "sanitizer",
    columns=(Column("sanitizer_findings", lambda r: value_of(r, "sanitizer", "findings")),),
    marks_check=_found,
    mark_caption=" *: memcheck (--sanitize) found errors in this variant: see the notes.",
)
