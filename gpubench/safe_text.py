"""Text from user code or files, made safe where it is shown. Pure.

A family's name is its folder's name, a variant's description and its error message are
whatever the spec (or the code it ran) wrote: any character at all. Shown raw they act
instead of being read: an escape sequence clears the terminal or sets its title, `</script>`
or `<!--` ends the report page's script elements, a CSV cell starting with `=` is a
spreadsheet formula, a newline or `|` splits a markdown table row. Each function here
makes a text safe for one place it is shown; results.json keeps the full text as it was
(strict JSON escapes what JSON must), so nothing is lost by showing less.
"""

from __future__ import annotations

import html as _html
import re

# What a terminal acts on rather than shows: C0 controls (ESC starts every ANSI/OSC
# sequence, CR overwrites the line, BS erases), DEL and the C1 controls (0x9b is a
# one-byte CSI), and the bidirectional overrides and isolates that reorder what a reader
# sees (the "Trojan Source" characters). Tab and newline are layout, kept by `terminal`.
_ACTING = "\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069"
_CONTROL = re.compile(f"[{_ACTING}]")
# One line: line breaks and tabs too (U+2028/2029 break lines in editors and browsers).
_LINE_CONTROL = re.compile(f"[{_ACTING}\t\n\u2028\u2029]")
_NAMED = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}

# The terminal shows at most this much of one message: a 200,000-character error
# printed in full buries the table (and was printed twice); compiler output and
# tracebacks the user needs fit well within it.
TERMINAL_LIMIT = 4000
# A name or table cell on one line: longer is no name, and a table cannot show it.
LINE_LIMIT = 500
# A results.csv field: Python's csv refuses fields over 131,072 characters by default
# (spreadsheets over 32,767); results.json keeps the rest.
CSV_LIMIT = 10_000
# A CSV cell starting with one of these is a formula to Excel, LibreOffice and Google
# Sheets (OWASP "CSV injection"): a leading quote makes it text.
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
# JSON inside <script>: '<' could start '</script>' or '<!--' (which changes how the
# HTML parser reads the rest of the element), '>' and '&' are escaped alongside, and
# U+2028/2029 end a line in older JavaScript. All are legal JSON string escapes.
_SCRIPT_ESCAPES = {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028",
                   "\u2029": "\\u2029"}
_SCRIPT_UNSAFE = re.compile("[<>&\u2028\u2029]")


def _escape(match: re.Match) -> str:
    """'\\x1b', '\\n', '\\u202e': the character as Python writes it in a string."""
    char = match.group()
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def capped(text: str, limit: int | None, where: str = "") -> str:
    """`text` cut to `limit` characters (None: no limit), saying how many more there are
    and `where` the full text is ('results.json'), if it is anywhere."""
    if limit is None or len(text) <= limit:
        return text
    rest = f"; full text in {where}" if where else ""
    return f"{text[:limit]} ... [{len(text) - limit:,} more characters{rest}]"


# A path in a message: its first and last PATH_END characters (the folder it starts from,
# the file it names), so that the reason after it is never cut off with it.
PATH_END = 60


def short_path(path: object) -> str:
    """`path` as a message shows it: whole when short, else its two ends around how many
    characters were left out."""
    text = str(path)
    if len(text) <= 3 * PATH_END:
        return text
    return f"{text[:PATH_END]}...[{len(text) - 2 * PATH_END:,} characters]...{text[-PATH_END:]}"


def terminal(text: object, limit: int | None = TERMINAL_LIMIT, where: str = "") -> str:
    """A message for the terminal: control characters shown as escapes ('\\x1b[2J'),
    newlines and tabs kept, at most `limit` characters (see `capped`)."""
    return _CONTROL.sub(_escape, capped(str(text), limit, where))


def one_line(text: object, limit: int | None = LINE_LIMIT, where: str = "") -> str:
    """A name or table cell: `terminal`, with newlines and tabs escaped too."""
    return _LINE_CONTROL.sub(_escape, capped(str(text), limit, where))


def markdown(text: object, limit: int | None = TERMINAL_LIMIT, where: str = "") -> str:
    """A markdown table cell, heading or list item: one line, '|' escaped, and '<' as
    '&lt;' (GitHub renders HTML: '<!--' would hide the rest of a PR comment)."""
    return one_line(text, limit, where).replace("|", "\\|").replace("<", "&lt;")


def csv_cell(value):
    """A results.csv field: text capped at CSV_LIMIT, its acting control characters written
    out as escapes (a `cat results.csv` must not drive the terminal; line breaks stay, CSV
    quotes them) and, when a spreadsheet would take it for a formula, prefixed with a
    single quote; numbers and the rest as they are."""
    if not isinstance(value, str):
        return value
    value = terminal(value, CSV_LIMIT, "results.json")
    return "'" + value if value.startswith(_FORMULA_START) else value


def html(text: object) -> str:
    """Text for an HTML page's elements and attributes: what acts in a terminal shown as an
    escape (as `terminal`), then &, <, >, and both quotes as entities."""
    return _html.escape(terminal(text, None), quote=True)


def script_json(json_text: str) -> str:
    """JSON text safe inside an HTML <script> element: '<', '>', '&', U+2028 and U+2029 as
    \\u escapes (outside strings JSON has none of them, so only strings change)."""
    return _SCRIPT_UNSAFE.sub(lambda m: _SCRIPT_ESCAPES[m.group()], json_text)
