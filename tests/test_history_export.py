"""`history --export rows.csv`: every text cell passes results.csv's rule
(safe_text.csv_cell), so a variant, family or commit subject named like a formula is text
to a spreadsheet, and an ESC byte in it never reaches a terminal that `cat`s the file."""

import csv

from gpubench.commands import history
from gpubench.records.series import HistoryRow


def test_formula_names_are_text_and_escape_bytes_are_gone(tmp_path):
    row = HistoryRow("/r/1", "r1", 1.0, "=1+1", "@SUM(A1)", "float32", "n=1", "cold", "ok",
                     1e-3, 0.9e-3, 1.1e-3, "+GPU", "-events", commit="abc",
                     subject='=HYPERLINK("http://x","y")', gpubench_commit="\x1b]0;pwn\x07")
    path = tmp_path / "rows.csv"
    history._export([row], path)
    raw = path.read_bytes()
    assert b"\x1b" not in raw and b"\x07" not in raw
    (cells,) = list(csv.DictReader(path.open(newline="")))
    assert cells["family"] == "'=1+1" and cells["variant"] == "'@SUM(A1)"
    assert cells["subject"] == "'=HYPERLINK(\"http://x\",\"y\")"
    assert cells["gpu"] == "'+GPU" and cells["method"] == "'-events"
    assert cells["gpubench_commit"] == "\\x1b]0;pwn\\x07"
    assert cells["commit"] == "abc" and float(cells["median_s"]) == 1e-3
