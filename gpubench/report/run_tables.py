"""A run's tables on one terminal: the same columns in every table, one legend after the last.

Each table fitted alone (table.group_table) keeps the columns its own cells leave room
for, so at 80 columns one group showed ±CI and the next did not, and the legend repeated
under each. Here the columns are decided at the first table, for the run: with room left
for the cells later groups usually hold (RESERVE) and the longest planned variant name.
A later table shows the same columns; one that cannot fit them whole (a longer status, a
column met only now, such as 'kernels') drops more, and every later table with it, so the
set only shrinks. The legend (report/legend.py) gathers every group's notes and is
printed once, ending with the columns the width left out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from rich.table import Table

from gpubench.records import result as R
from gpubench.report.legend import Legend
from gpubench.report.table import (
    COLUMNS,
    ELSEWHERE,
    JUSTIFY,
    FittedTable,
    drop_order,
    dropped_note,
    fit_columns,
    group_title,
    table_rows,
)

# The widest cell each column holds in most runs, reserved by the first table so that the
# later ones fit the same columns: a failed row's status ("CRASHED", "SUSPECT", 7), a median
# of 4 digits and its unit, a CI or IQR of 10-99%, up to 9999 samples, a GPU's bandwidth in
# GB/s ("3350" on an H100, 4 digits), "100% comp". Rarer and wider ("BUILD ERROR", 11) are
# not reserved: at 80 columns each reserved character may cost a column in every table.
RESERVE = {"check": "CRASHED", "median": "99.99 ms", "±CI": "10.0%", "IQR": "10.0%",
           "n": "9999", "GB/s": "3350", "of roof": "100% comp"}


@dataclass
class RunTables:
    """The tables of one run at a terminal `width` (None: as wide as they are), sharing
    their columns and their legend. `variants`: every planned variant's name as its row
    shows it ('torch (base)'), so the first table leaves room for the longest."""

    width: int | None
    variants: Sequence[str] = ()
    legend: Legend = field(default_factory=Legend)
    kept: list[str] | None = None  # the run's columns, once the first table decided them
    dropped: list[str] = field(default_factory=list)  # in the order they were dropped
    shown: int = 0  # tables built so far

    def table(self, group: list[R.Result], device: str = "") -> Table:
        """`group`'s table with the run's columns; its notes join the run's legend."""
        headers, rows = table_rows(group)
        self.legend.add(group, headers)
        self.shown += 1
        columns = self._columns(group, headers, rows)
        cells = [{h: row.get(h, "-") for h in columns} for row in rows]
        return FittedTable(group_title(group, device), columns, cells, JUSTIFY).table(None)

    def legend_text(self) -> str:
        """The run's one legend, ending with the columns the width left out."""
        note = dropped_note(self.width, self.dropped, ELSEWHERE) if self.width else ""
        return self.legend.text(also=note)

    def _columns(self, group: list[R.Result], headers: list[str], rows: list[dict]
                 ) -> list[str]:
        """The run's columns so far, joined by those of `group`'s that the run has not
        dropped; fitted to the width, a column met only now going first."""
        kept = self.kept or []
        wanted = [h for h, _ in COLUMNS
                  if h in kept or (h in headers and h not in self.dropped)]
        if self.width is None:
            self.kept = wanted
            return wanted
        new = [h for h in wanted if self.kept is not None and h not in kept]
        order = drop_order(group)
        sample = [*rows, self._reserve(wanted)]
        fitted, dropped = fit_columns(wanted, sample, self.width,
                                      (*[h for h in order if h in new], *order))
        self.kept = fitted
        self.dropped += [h for h in dropped if h not in self.dropped]
        return fitted

    def _reserve(self, headers: list[str]) -> dict[str, str]:
        """A row of no result: the widths RESERVE and the planned variants call for."""
        longest = max(self.variants, key=len, default="")
        return {h: "" for h in headers} | RESERVE | {"variant": longest}
