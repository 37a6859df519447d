"""gpubench/safe_text.py: each place a user's text is shown gets it harmless, and says
where the rest is when it is cut."""

import csv
import io
import json

from gpubench import safe_text

ESC = "\x1b]0;title\x07\x1b[2J"


def test_terminal_escapes_what_a_terminal_acts_on_and_keeps_layout():
    shown = safe_text.terminal(f"a{ESC}\rb\u202ec\x9bd\x7f\x00\ttab\nline")
    assert shown == "a\\x1b]0;title\\x07\\x1b[2J\\rb\\u202ec\\x9bd\\x7f\\x00\ttab\nline"
    assert not any(ord(ch) < 32 and ch not in "\t\n" for ch in shown)
    assert safe_text.terminal("plain ünïcode → ok") == "plain ünïcode → ok"


def test_one_line_escapes_line_breaks_too():
    assert safe_text.one_line("a\nb\tc\u2028d") == "a\\nb\\tc\\u2028d"


def test_a_long_message_is_capped_and_says_where_the_rest_is():
    shown = safe_text.terminal("x" * 200_000, where="run/results.json")
    assert len(shown) < safe_text.TERMINAL_LIMIT + 100
    assert shown.endswith("[196,000 more characters; full text in run/results.json]")
    assert safe_text.terminal("x" * 10, limit=None) == "x" * 10
    assert "more characters]" in safe_text.one_line("y" * 1000)


def test_csv_cells_are_never_formulas_and_never_too_long():
    for formula in ("=1+1", "+1", "-2+3", "@SUM(1+9)", "\tx"):
        assert safe_text.csv_cell(formula) == "'" + formula
    # a carriage return (it moves the cursor) is written out, and then starts no formula
    assert safe_text.csv_cell("\rx") == "\\rx"
    assert safe_text.csv_cell("a\x1b]0;T\x07b\nc") == "a\\x1b]0;T\\x07b\nc"
    assert safe_text.csv_cell("matmul") == "matmul"
    assert safe_text.csv_cell(-1.5) == -1.5 and safe_text.csv_cell(None) is None
    long = safe_text.csv_cell("z" * 200_000)
    assert len(long) < safe_text.CSV_LIMIT + 100 and "results.json" in long
    sink = io.StringIO()
    csv.writer(sink).writerow([long, safe_text.csv_cell("=x")])
    assert next(csv.reader(io.StringIO(sink.getvalue())))[1] == "'=x"


def test_markdown_cells_stay_in_their_row():
    cell = safe_text.markdown("a|b\nc <!-- d")
    assert "\n" not in cell and "<" not in cell
    assert cell == "a\\|b\\nc &lt;!-- d"


def test_script_json_cannot_end_or_comment_out_its_element():
    data = {"name": "x</script><!--<script>&\u2028\u2029"}
    text = safe_text.script_json(json.dumps(data, ensure_ascii=False))
    for unsafe in ("<", ">", "&", "\u2028", "\u2029"):
        assert unsafe not in text
    assert json.loads(text) == data
