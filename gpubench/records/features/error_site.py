"""Where a failed row went wrong: {"file", "line", "source", "log"} (records/error_site.py),
set on the rows of a point the worker reported as ERROR, FAIL or BUILD ERROR with a site or
a traceback. The row's `error` already starts with "file:line:"; this keeps the line of
source the notes print under it, and the whole traceback or compiler log (`--verbose`
prints it) in results.json, capped at error_site.DETAIL_LIMIT."""

from gpubench.records.extras import ExtraSpec

ERROR_SITE = ExtraSpec("error_site")
