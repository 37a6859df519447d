"""A table of one line per row at any width: what `gpubench list` and `gpubench runs` print.

A list is read down one column (which family, which run), so a row that wraps over four
lines costs more than a cell cut short: every column but one keeps its widest cell, and
the `flex` column (free text: variant names, a command) takes what is left of the line and
is cut with '…' there; the full text is one command away (`list FAMILY`, results.json).
When even a short flex column does not fit, whole columns go, in `order`, and
`dropped(width)` names them for a caption. No borders: two spaces between columns, which
is what a list of 100 runs can afford at 80 columns.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderResult
from rich.text import Text

from gpubench import safe_text

GAP = 2  # spaces between columns: one reads as a typo inside a name, three waste a column
# The flex column's narrowest useful width: three or four short names, or a command's verb
# and first argument. Below it, columns of `order` go instead.
MIN_FLEX = 16


@dataclass
class LineTable:
    headers: list[str]
    # header -> str, Text (keeps its style), or a function width -> str (a cell that knows
    # how to shorten itself: '+3 more' rather than a word cut by '…')
    rows: list[dict]
    flex: str  # the column that takes the rest of the line; cut with '…'
    justify: Mapping[str, str] = field(default_factory=dict)  # a header not in it: left
    order: tuple[str, ...] = ()  # dropped first to last when the line is too short

    def __post_init__(self) -> None:
        """Cells may hold the user's text (names, commands): made one safe line each."""
        self.rows = [{h: row.get(h, "") if callable(row.get(h)) else _safe(row.get(h, ""))
                      for h in self.headers} for row in self.rows]

    def shown(self, width: int) -> list[str]:
        """The columns that fit in `width`, the flex one at least MIN_FLEX wide (or as wide
        as its widest cell, when that is narrower)."""
        headers = list(self.headers)
        for victim in (None, *self.order):
            if victim in headers:
                headers.remove(victim)
            if self._flex_room(headers, width) >= min(MIN_FLEX, self._natural(self.flex)):
                break
        return headers

    def dropped(self, width: int) -> list[str]:
        shown = self.shown(width)
        return [h for h in self.headers if h not in shown]

    def lines(self, width: int) -> list[Text]:
        headers = self.shown(width)
        widths = {h: self._natural(h) for h in headers if h != self.flex}
        widths[self.flex] = max(1, min(self._natural(self.flex), self._flex_room(headers, width)))
        head = {h: Text(h, style="bold") for h in headers}
        return [self._line(cells, headers, widths) for cells in (head, *self.rows)]

    def _line(self, cells: dict, headers: list[str], widths: dict[str, int]) -> Text:
        line = Text()
        for i, header in enumerate(headers):
            cell = cells[header]
            cell = _safe(cell(widths[header])) if callable(cell) else cell.copy()
            cell.truncate(widths[header], overflow="ellipsis")
            if header != headers[-1]:
                pad = widths[header] - cell_len(cell.plain)
                cell = (Text(" " * pad) + cell if self.justify.get(header) == "right"
                        else cell + Text(" " * pad))
            line.append_text(cell)
            if i < len(headers) - 1:
                line.append(" " * GAP)
        line.rstrip()
        return line

    def _natural(self, header: str) -> int:
        """The column's widest cell, header included."""
        return max([cell_len(header), *(cell_len(_plain(row[header])) for row in self.rows)])

    def _flex_room(self, headers: list[str], width: int) -> int:
        fixed = sum(self._natural(h) for h in headers if h != self.flex)
        return width - fixed - GAP * (len(headers) - 1)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        for line in self.lines(options.max_width):
            line.no_wrap = True
            yield line


def _plain(cell) -> str:
    """A cell's text at its widest."""
    return _safe(cell(UNBOUNDED)).plain if callable(cell) else cell.plain


UNBOUNDED = 10**6  # the width a shortening cell is asked for its whole text


def _safe(cell) -> Text:
    """A cell as one line of Text, its control characters escaped; a Text keeps its style
    (escape before making one: Text() drops BEL and CR unseen). Never rich markup: '[axes
    M, N]' would vanish as an unknown tag."""
    if isinstance(cell, Text):
        safe = safe_text.one_line(cell.plain)
        return cell if safe == cell.plain else Text(safe, style=cell.style)
    return Text(safe_text.one_line(cell))
