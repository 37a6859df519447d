"""A run folder's saves, made in time proportional to what changed, not to the run.

A run saves results.json and results.csv after every point (store/folder.py), so that a
`kill -9` loses at most the points in progress; each save used to serialise every row again
(every sample of every mode: 2.7 MB of JSON for 177 points), ~0.1-0.3 s a save near the end
of a run, which a lane waits for: on 2 H200s the parent's gap between points was 0.16 s,
most of it this (docs/journal/perf-notes.md, issue 32). A finished row never changes (a group
that completes replaces its rows by new objects), so each row's JSON text and CSV record is
made once, kept by the row's identity, and reused by every later save.

The text is exactly strict_dumps' of the whole document (tests/test_saved_rows.py): the
document's head is dumped as it is, and each row's own dump is indented to its depth.
results.csv likewise: each row's line is made once (for the run's columns so far), each
cell by itself (csv_cell): pandas' to_csv makes the whole file again at every save, 14-22 ms
of the parent's 24-32 ms save at 177 rows on the CPU machine, time a lane waits and
in which the parent's other threads (a Dask client's, a local scheduler's) wait for it.
"""

from __future__ import annotations

import csv
import io
import json
import math
import numbers

from gpubench import safe_text
from gpubench.records.strict_json import mark_nonfinite, strict_dumps

# A row inside the document: two levels down (the document's "results" list), two
# spaces a level (strict_dumps' indent).
ROW_INDENT = " " * 4


class SavedRows:
    """Each row's JSON text and CSV record, made once per row object."""

    def __init__(self):
        self._texts: dict[int, tuple[object, str]] = {}
        self._records: dict[int, tuple[object, dict]] = {}
        self._lines: dict[int, tuple[object, tuple[tuple, str]]] = {}  # (columns, line)

    def document_json(self, document) -> str:
        """strict_dumps(document.to_dict()), reusing the rows' texts."""
        head = {"schema": document.schema, "meta": document.meta, "env": document.env}
        results = document.results
        self._forget_all_but(results)
        if not results:
            return strict_dumps({**head, "results": []})
        rows = ",\n".join(self._text(r) for r in results)
        text = json.dumps(mark_nonfinite(head), indent=2, default=str, allow_nan=False)
        return f'{text[:-2]},\n  "results": [\n{rows}\n  ]\n}}'

    def records(self, results) -> list[dict]:
        """[r.to_record() for r in results], reusing the rows' records."""
        return [self._kept(self._records, r, lambda row: row.to_record()) for r in results]

    def csv_text(self, results) -> str:
        """results.csv: a header of every record's columns (in order of appearance), then
        one line per row, reusing each row's line while the columns stay the same."""
        records = self.records(results)
        columns = tuple(dict.fromkeys(name for record in records for name in record))
        lines = [csv_line([safe_text.csv_cell(name) for name in columns])]
        for result, record in zip(results, records, strict=True):
            hit = self._lines.get(id(result))
            if hit is None or hit[0] is not result or hit[1][0] != columns:
                hit = (result, (columns, csv_line([csv_cell(record.get(c)) for c in columns])))
                self._lines[id(result)] = hit
            lines.append(hit[1][1])
        return "".join(lines)

    def _text(self, result) -> str:
        return self._kept(self._texts, result, lambda row: "\n".join(
            ROW_INDENT + line for line in strict_dumps(row.to_dict()).splitlines()))

    @staticmethod
    def _kept(store: dict, result, make):
        """The value for this very object (its id, checked: ids are reused once freed)."""
        hit = store.get(id(result))
        if hit is not None and hit[0] is result:
            return hit[1]
        value = make(result)
        store[id(result)] = (result, value)
        return value

    def _forget_all_but(self, results) -> None:
        """Drop what rows no longer in the document had (replaced by their finished
        versions): memory stays one copy of the run's text."""
        alive = {id(r) for r in results}
        for store in (self._texts, self._records, self._lines):
            for key in [k for k in store if k not in alive]:
                del store[key]


def csv_cell(value) -> str:
    """One results.csv cell, whatever the other rows hold: empty for None and NaN, numbers
    as Python writes them (an integer axis stays 4096 where another family lacks it, which
    pandas wrote 4096.0), text made safe for a spreadsheet (safe_text.csv_cell)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, numbers.Integral):
        return str(int(value))
    if isinstance(value, numbers.Real):
        return "" if math.isnan(value) else repr(float(value))
    return safe_text.csv_cell(value if isinstance(value, str) else str(value))


def csv_line(cells: list[str]) -> str:
    """Cells as one CSV line (quoted where Python's csv module quotes), with its newline."""
    sink = io.StringIO()
    csv.writer(sink, lineterminator="\n").writerow(cells)
    return sink.getvalue()
