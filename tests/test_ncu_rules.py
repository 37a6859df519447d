"""ncu_rules: markup cleaning, ranking, hint keys and hint changes. Pure: no ncu_report needed.

Ranking is checked on hints parsed from real ncu console text (tests/fixtures/ncu); the small
RuleResult objects built here only pin down the ordering rules themselves.
"""

from __future__ import annotations

from pathlib import Path

from gpubench.tools.ncu import console as ncu_console
from gpubench.tools.ncu import rules as ncu_rules
from gpubench.tools.ncu.rules import RuleResult

FIXTURES = Path(__file__).parent / "fixtures" / "ncu"


def _rule(rule_id: str, type_: str = "OPT", speedup: float | None = None,
          speedup_type: str | None = None, title: str = "") -> RuleResult:
    return RuleResult(rule_id=rule_id, section_id="S", name=rule_id, title=title, type=type_,
                      message="m", raw_message="m", speedup_type=speedup_type,
                      estimated_speedup_pct=speedup)


# --- clean_message ---------------------------------------------------------------------------


def test_section_markup_becomes_its_title():
    raw = "Look at @section:LaunchStats:Launch Statistics@ for more details."
    assert ncu_rules.clean_message(raw) == "Look at Launch Statistics for more details."


def test_section_title_may_hold_parentheses():
    raw = "Check the @section:SourceCounters:Warp Stall Sampling (All Samples)@ table"
    assert ncu_rules.clean_message(raw) == "Check the Warp Stall Sampling (All Samples) table"


def test_url_markup_keeps_link_text_and_url():
    raw = ("See the @url:CUDA Best Practices Guide:https://docs.nvidia.com/cuda/"
           "cuda-c-best-practices-guide/index.html#occupancy@ for more details.")
    assert ncu_rules.clean_message(raw) == (
        "See the CUDA Best Practices Guide (https://docs.nvidia.com/cuda/"
        "cuda-c-best-practices-guide/index.html#occupancy) for more details.")


def test_url_markup_with_one_word_text():
    raw = "to their @url:fused:https://docs.nvidia.com/cuda/floating-point/#x@, higher"
    assert ncu_rules.clean_message(raw) == (
        "to their fused (https://docs.nvidia.com/cuda/floating-point/#x), higher")


def test_no_markup_left_and_whitespace_collapsed():
    raw = "A @section:A:B@  and\n @url:C:https://d.e/f@ and @other:key:Shown@   end "
    cleaned = ncu_rules.clean_message(raw)
    assert "@" not in cleaned
    assert cleaned == "A B and C (https://d.e/f) and Shown end"


def test_host_names_with_at_signs_are_not_markup():
    assert ncu_rules.clean_message("python3.12@127.0.0.1") == "python3.12@127.0.0.1"


# --- rank ------------------------------------------------------------------------------------


def test_rank_global_before_local_then_no_estimate():
    rules = [_rule("noest"), _rule("local99", speedup=99.0, speedup_type="local"),
             _rule("global5", speedup=5.0, speedup_type="global"),
             _rule("global90", speedup=90.0, speedup_type="global"),
             _rule("warn", type_="WRN", speedup=50.0, speedup_type="global")]
    ranked = [r.rule_id for r in ncu_rules.rank(rules)]
    assert ranked == ["global90", "warn", "global5", "local99", "noest"]


def test_rank_errors_first_info_only_on_request():
    rules = [_rule("opt", speedup=10.0, speedup_type="global"), _rule("info", type_="INF"),
             _rule("err", type_="ERROR")]
    assert [r.rule_id for r in ncu_rules.rank(rules)] == ["err", "opt"]
    assert [r.rule_id for r in ncu_rules.rank(rules, include_info=True)] == ["err", "opt", "info"]


def test_rank_small_grid_console_puts_grid_too_small_first():
    """Real text of the grid-4 launch: the 96.97% global 'grid too small' hint ranks first."""
    text = (FIXTURES / "h200" / "square_small_grid_console.txt").read_text()
    (kernel,) = ncu_console.parse_details_hints(text)
    ranked = ncu_rules.rank(kernel.rules)
    assert ranked[0].estimated_speedup_pct == 96.97
    assert ranked[0].speedup_type == "global"
    assert ranked[0].message.startswith("The grid for this launch is configured to execute only 4")
    # the local 87.89% comes after the global 6.226%, however large it is
    assert [r.estimated_speedup_pct for r in ranked] == [96.97, 6.226, 87.89, None]


# --- hint_key and compare_hints --------------------------------------------------------------


def test_hint_key_tells_two_findings_of_one_rule_apart():
    first = _rule("CPIStall", title="Lg Throttle Stalls")
    second = _rule("CPIStall", title="Long Scoreboard Stalls")
    assert ncu_rules.hint_key(first) != ncu_rules.hint_key(second)
    assert ncu_rules.hint_key(_rule("AchievedOccupancy")) == "AchievedOccupancy"


def test_compare_hints_new_gone_shrank_grew_same():
    before = [_rule("a", speedup=50.0, speedup_type="global"),
              _rule("b", speedup=20.0, speedup_type="global"),
              _rule("c", speedup=10.0, speedup_type="global"),
              _rule("gone", speedup=5.0, speedup_type="global")]
    after = [_rule("a", speedup=10.0, speedup_type="global"),
             _rule("b", speedup=40.0, speedup_type="global"),
             _rule("c", speedup=10.5, speedup_type="global"),
             _rule("new", speedup=30.0, speedup_type="local")]
    changes = {c.key: c for c in ncu_rules.compare_hints(before, after)}
    assert changes["a"].change == ncu_rules.SHRANK
    assert (changes["a"].before_pct, changes["a"].after_pct) == (50.0, 10.0)
    assert changes["b"].change == ncu_rules.GREW
    assert changes["c"].change == ncu_rules.SAME  # within the 1-point tolerance
    assert changes["new"].change == ncu_rules.NEW and changes["new"].before_pct is None
    assert changes["gone"].change == ncu_rules.GONE and changes["gone"].after_pct is None


def test_compare_hints_ignores_info_unless_asked():
    before = [_rule("i", type_="INF")]
    assert ncu_rules.compare_hints(before, []) == []
    (gone,) = ncu_rules.compare_hints(before, [], include_info=True)
    assert gone.change == ncu_rules.GONE


def test_speedup_text():
    assert ncu_rules.speedup_text(_rule("x", speedup=96.9697, speedup_type="global")) == \
        "96.97% global"
    assert ncu_rules.speedup_text(_rule("x")) == ""
