"""The history page: one chart per series (the median and its 95% CI by run, the change
points as rules between two runs, labelled with their size and commit range, SUSPECT and
failed runs as marks along the top, the runs where the software changed as grey rules),
and a table of the change points. Self-contained
like the report (html.whole_page): it opens offline. Pure: builds a string."""

from __future__ import annotations

import time
from collections.abc import Sequence

from gpubench.analysis.history import Series, SeriesChange
from gpubench.report.chart_style import VariantColors
from gpubench.report.history_view import (
    change_commits,
    change_text,
    mark_text,
    series_folder,
    series_title,
    summary_line,
)
from gpubench.report.html import Charts, whole_page
from gpubench.safe_text import html as _e

MEDIAN, CHANGE, MARK = "median, 95% CI", "change point", "not timed (mark)"
ENV = "software changed"
# grey for the environment: a fact about the runs, not a finding about the code
COLORS = {MEDIAN: "#1f77b4", CHANGE: "#c62828", MARK: "#a86b00", ENV: "#757575"}


def render_history(series: Sequence[Series], worse: Sequence[tuple[Series, SeriesChange]],
                   generated: str = "", summary: str | None = None) -> str:
    charts = Charts(VariantColors(()))
    body = [f"<p>{_e(summary or summary_line(series, worse))}</p>", _changes_table(series)]
    for one in series:
        if one.timed:
            body.append(f"<h3>{_e(series_title(one))}</h3>")
            body.append(f'<p class="muted">{_e(one.first.method)}</p>')
            body.append(charts.place(history_spec(one)))
    return whole_page("gpubench history", "\n".join(body), charts.specs, generated)


def history_spec(series: Series) -> dict:
    """The series as a layered Vega-Lite chart, x the run's place in the series."""
    points, rules, marks, envs = [], [], [], []
    for place, row in enumerate(series.rows, start=1):
        common = {"run": place, "run_id": row.run_id, "commit": row.commit_label,
                  "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(row.started))
                  if row.started else "?"}  # 0: unknown (history_store.known_time)
        if row.timed:
            points.append({**common, "what": MEDIAN, "median_us": row.median_s * 1e6,
                           "low_us": row.ci_low_s * 1e6, "high_us": row.ci_high_s * 1e6})
        else:
            marks.append({**common, "what": MARK, "status": mark_text(row)})
        change = series.change_at(row)
        if change is not None:
            rules.append({**common, "what": CHANGE, "at": place - 0.5,
                          "label": change.percent, "detail": change_text(change)})
        if series.environment_at(row):
            envs.append({**common, "what": ENV, "at": place - 0.5,
                         "detail": f"env: {series.environment_at(row)}"})
    color = {"field": "what", "type": "nominal", "title": None,
             "scale": {"domain": list(COLORS), "range": list(COLORS.values())}}
    x = {"field": "run", "type": "quantitative", "title": "run (oldest first)",
         "axis": {"tickMinStep": 1}}
    tip = [{"field": "run_id", "title": "run"}, {"field": "when"},
           {"field": "commit"}]
    layers = [
        {"data": {"values": points}, "mark": {"type": "rule"},
         "encoding": {"x": x, "y": {"field": "low_us", "type": "quantitative",
                                    "scale": {"zero": False}, "title": "median (us)"},
                      "y2": {"field": "high_us"}, "color": color}},
        {"data": {"values": points}, "mark": {"type": "line", "point": True},
         "encoding": {"x": x, "y": {"field": "median_us", "type": "quantitative"},
                      "color": color,
                      "tooltip": [*tip, {"field": "median_us", "format": ".4g"},
                                  {"field": "low_us", "format": ".4g"},
                                  {"field": "high_us", "format": ".4g"}]}},
    ]
    if rules:
        layers.append({"data": {"values": rules},
                       "mark": {"type": "rule", "strokeDash": [4, 3], "strokeWidth": 2},
                       "encoding": {"x": {"field": "at", "type": "quantitative"},
                                    "color": color,
                                    "tooltip": [*tip, {"field": "detail"}]}})
        layers.append({"data": {"values": rules},
                       "mark": {"type": "text", "align": "left", "dx": 4, "dy": -4,
                                "baseline": "top", "fontWeight": "bold"},
                       "encoding": {"x": {"field": "at", "type": "quantitative"},
                                    "y": {"value": 0}, "text": {"field": "label"},
                                    "color": color}})
    if envs:
        layers.append({"data": {"values": envs}, "mark": {"type": "rule", "strokeDash": [1, 3]},
                       "encoding": {"x": {"field": "at", "type": "quantitative"},
                                    "color": color, "tooltip": [*tip, {"field": "detail"}]}})
    if marks:
        layers.append({"data": {"values": marks}, "mark": {"type": "point", "shape": "cross"},
                       "encoding": {"x": x, "y": {"value": 6}, "color": color,
                                    "tooltip": [*tip, {"field": "status"}]}})
    return {"$schema": "https://vega.github.io/schema/vega-lite/v5.json",
            "width": 640, "height": 220, "layer": layers}


def _changes_table(series: Sequence[Series]) -> str:
    changes = [(s, c) for s in series for c in s.changes]
    if not changes:
        return "<p>No change point found.</p>"
    head = "".join(f"<th>{h}</th>" for h in ("point", "GPU", "from run", "commits",
                                             "change [95% CI]", "p"))
    rows = []
    for one, change in changes:
        row = change.after
        point = one.first.point.replace("/", " ")
        if one.show_folder:
            point += f" [{series_folder(one)}]"
        cells = [point, row.gpu, row.run_id, change_commits(change),
                 change.percent,
                 f"{change.change.p_value:.2g}"]
        css = "verdict-SLOWER" if change.change.slower else "verdict-FASTER"
        rows.append("<tr>" + "".join(f'<td class="{css if i == 4 else ""}">{_e(c)}</td>'
                                     for i, c in enumerate(cells)) + "</tr>")
    return (f'<table class="results"><thead><tr>{head}</tr></thead><tbody>'
            f'{"".join(rows)}</tbody></table>')
