"""ncu's rule results ("hints"): what one is, readable messages, a ranking, and changes
between variants. Pure.

A report keeps each message with ncu's cross-reference markup (`@section:Id:Title@`,
`@url:Text:URL@`); `clean_message` renders it the way `ncu --page details` prints it, so a
message read from a report equals the one in ncu's own listing. The ranking follows ncu's
estimated speedups, global ones first: a global estimate is a share of the whole kernel's time,
a local one only of the part it names (one pipeline, one stall reason), so the two do not compare.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

ERROR, OPT, WRN, INF = "ERROR", "OPT", "WRN", "INF"
GLOBAL, LOCAL = "global", "local"


class FocusMetric(NamedTuple):
    """A metric a rule points at, with ncu's advice about it."""

    name: str
    value: float | str | None
    info: str = ""


@dataclass(frozen=True)
class RuleResult:
    """One ncu rule result (a 'hint'), from a report or parsed from ncu's console text."""

    rule_id: str  # 'LaunchConfiguration'; '' when parsed from console text
    section_id: str  # 'LaunchStats'; '' when parsed from console text
    name: str  # the rule's name: 'Launch Configuration'
    title: str  # the message's title: 'Small Grid'; '' for many rules
    type: str  # 'OPT', 'WRN', 'INF' or 'ERROR'
    message: str  # markup rendered, whitespace collapsed
    raw_message: str  # as stored, with ncu's @section:..@ / @url:..@ markup
    speedup_type: str | None = None  # 'global', 'local', or None without an estimate
    estimated_speedup_pct: float | None = None
    focus_metrics: tuple[FocusMetric, ...] = ()
    section_name: str = ""  # 'Launch Statistics', as ncu's console prints it

    @property
    def heading(self) -> str:
        """What to call the hint in one line: its title, else the rule's name, else its section."""
        return self.title or self.name or self.section_name or self.rule_id


# `@kind:body@`; the kind is a word, so text such as "python3.12@127.0.0.1" never matches.
_MARKUP = re.compile(r"@(?P<kind>[A-Za-z_]+):(?P<body>[^@]*)@")
_URL_BODY = re.compile(r"^(?P<text>.*?):?(?P<url>[A-Za-z][\w+.-]*://.*)$")


def clean_message(text: str) -> str:
    """Markup rendered as ncu prints it ('Title', 'Text (URL)'), whitespace collapsed."""
    return " ".join(_MARKUP.sub(_render_markup, text or "").split())


def _render_markup(match: re.Match) -> str:
    kind, body = match["kind"], match["body"]
    if kind == "url":
        return _render_url(body)
    # @section:Id:Title@ and any other @kind:key:text@ form: the last field is the readable one.
    return body.rsplit(":", 1)[-1] if ":" in body else body


def _render_url(body: str) -> str:
    """'CUDA Guide:https://x' -> 'CUDA Guide (https://x)'; split at the URL's scheme, not at ':'."""
    match = _URL_BODY.match(body)
    if match is None:
        text, _, url = body.partition(":")
    else:
        text, url = match["text"], match["url"]
    if not url:
        return text
    return f"{text} ({url})" if text else url


def hint_key(rule: RuleResult) -> str:
    """What identifies 'the same hint' in two variants: the rule id, plus its title when it has one.

    The title is needed because one rule can fire twice for one kernel with different findings
    (matmul.ncu-rep has CPIStall twice: 'Lg Throttle Stalls' and 'Long Scoreboard Stalls'), and
    a rule whose title changes (SOLBottleneck: 'Latency Issue' -> 'Small Grid') says something new.
    Rules parsed from console text have no id; their section name stands in.
    """
    base = rule.rule_id or rule.section_name or rule.section_id
    return f"{base}/{rule.title}" if rule.title else base


def rank(rules: Iterable[RuleResult], include_info: bool = False) -> list[RuleResult]:
    """ERROR first, then OPT and WRN by estimated speedup (global before local), INF on request.

    Within the OPT/WRN block: global estimates by size, then local ones by size, then hints
    without an estimate, each in ncu's order when equal.
    """
    shown = [r for r in rules if r.type != INF or include_info]
    return sorted(shown, key=_rank_key)


def _rank_key(rule: RuleResult) -> tuple:
    group = {ERROR: 0, OPT: 1, WRN: 1}.get(rule.type, 2)
    speedup = rule.estimated_speedup_pct
    if speedup is None:
        return (group, 3, 0.0)
    return (group, 0 if rule.speedup_type == GLOBAL else 1 if rule.speedup_type == LOCAL else 2,
            -speedup)


def speedup_text(rule: RuleResult) -> str:
    """'96.97% global', '87.89% local', or '' when ncu gave no estimate."""
    if rule.estimated_speedup_pct is None:
        return ""
    kind = f" {rule.speedup_type}" if rule.speedup_type else ""
    return f"{rule.estimated_speedup_pct:.4g}%{kind}"


# --- changes between two variants ------------------------------------------------------------

NEW, GONE, SHRANK, GREW, SAME = "new", "gone", "shrank", "grew", "same"


@dataclass(frozen=True)
class HintChange:
    """One hint of the next variant compared with the previous one."""

    key: str
    heading: str
    change: str  # NEW, GONE, SHRANK, GREW or SAME
    type: str
    before_pct: float | None
    after_pct: float | None
    speedup_type: str | None
    section_name: str = ""


def compare_hints(before: Sequence[RuleResult], after: Sequence[RuleResult],
                  include_info: bool = False, tolerance_pct: float = 1.0) -> list[HintChange]:
    """Which hints appear, disappear, shrink or grow from `before` to `after`.

    A change in estimated speedup of `tolerance_pct` points or less counts as SAME: repeated
    profiles of one kernel differ by about that much. Order: the hints of `after` as ranked,
    then those that are gone, as they ranked in `before`.
    """
    old = _by_key(rank(before, include_info))
    new = _by_key(rank(after, include_info))
    changes = [_change(key, old.get(key), rule, tolerance_pct) for key, rule in new.items()]
    changes += [_change(key, rule, None, tolerance_pct) for key, rule in old.items()
                if key not in new]
    return changes


def _by_key(ranked: list[RuleResult]) -> dict[str, RuleResult]:
    """First (best ranked) rule of each key: a duplicate key keeps its largest estimate."""
    keyed: dict[str, RuleResult] = {}
    for rule in ranked:
        keyed.setdefault(hint_key(rule), rule)
    return keyed


def _change(key: str, old: RuleResult | None, new: RuleResult | None,
            tolerance_pct: float) -> HintChange:
    shown = new or old
    assert shown is not None
    before = old.estimated_speedup_pct if old else None
    after = new.estimated_speedup_pct if new else None
    if old is None:
        change = NEW
    elif new is None:
        change = GONE
    elif before is not None and after is not None and abs(after - before) > tolerance_pct:
        change = SHRANK if after < before else GREW
    else:
        change = SAME
    return HintChange(key=key, heading=shown.heading, change=change, type=shown.type,
                      before_pct=before, after_pct=after, speedup_type=shown.speedup_type,
                      section_name=shown.section_name)
