"""`gpubench report`: one self-contained HTML page of one or more runs. Pure: builds a string.

The page must open years later on a machine with no internet (GPU nodes often have
none, and CI artifacts outlive CDNs), so everything is inside it: the chart library
(vendor/, read as package data), the chart specs (charts.py) as JSON, a little CSS and
a sortable-table script. Nothing is fetched when the page is viewed.

Per run: the environment; per family a sortable table (the same cells as the terminal
table, from table.table_layout), its warnings, the roofline and the sweeps; then what
failed, was SUSPECT (right output, a time not to be trusted: red, never a speedup, never
on a chart) or was skipped, and why. Given several runs, each later run is compared with the
first (the compare view: ratios, CIs, verdicts).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from importlib import resources

from gpubench import format as fmt
from gpubench import safe_text
from gpubench.analysis.comparison import RunComparison
from gpubench.records import result as R
from gpubench.records.run import RunDocument
from gpubench.records.strict_json import strict_dumps
from gpubench.report import charts
from gpubench.report.chart_style import VariantColors
from gpubench.report.compare_view import HEADERS as COMPARE_HEADERS
from gpubench.report.compare_view import caption as compare_caption
from gpubench.report.compare_view import compare_cells
from gpubench.report.page_template import PAGE, SCRIPT, STYLE
from gpubench.report.table import COLUMNS, group_notes, groups_of, note, plain, table_layout
from gpubench.safe_text import html as _e  # one escaping for every page (safe_text.py)

NCU_HINT = "ncu top hint"  # a column when the run had --ncu
VENDOR_SCRIPTS = ("vega.min.js", "vega-lite.min.js", "vega-embed.min.js")


@dataclass(frozen=True)
class RunComparisonView:
    """One compare section: the names the user gave and the comparison itself."""
    base_name: str
    new_name: str
    comparison: RunComparison


class Charts:
    """Collects chart specs while the page is built; each gets a div and an id. `colors`:
    the report's variant colours, one map for every chart of every run on the page."""

    def __init__(self, colors: VariantColors) -> None:
        self.specs: dict[str, dict] = {}
        self.colors = colors
        self.run_label = False

    def place(self, spec: dict | None, css: str = "chart") -> str:
        if spec is None:
            return ""
        chart_id = f"chart-{len(self.specs)}"
        self.specs[chart_id] = spec
        return f'<div class="{css}" id="{chart_id}" data-chart></div>'


def render_report(runs: Sequence[tuple[str, RunDocument]],
                  comparisons: Sequence[RunComparisonView] = (),
                  generated: str = "") -> str:
    """The whole page. `runs` pairs each run's name (its folder) with its document."""
    sections, chart_set = _sections(runs, comparisons)
    title = "gpubench report: " + ", ".join(name for name, _ in runs)
    return whole_page(title, "\n".join(sections), chart_set.specs, generated)


def whole_page(title: str, body: str, specs: dict[str, dict], generated: str = "") -> str:
    """A self-contained page: `body` (HTML, its user text escaped already), the chart
    specs its divs name, the chart library inlined, the sorting script."""
    return PAGE.format(title=_e(title), heading=_e(title), generated=_e(generated),
                       style=STYLE, body=body, specs=_script_json(specs),
                       vendor=_vendor_scripts(), script=SCRIPT)


def chart_specs(runs: Sequence[tuple[str, RunDocument]],
                comparisons: Sequence[RunComparisonView] = ()) -> list[dict]:
    """Every chart of the page, in page order (`report --svg/--png` writes each to a file)."""
    return list(_sections(runs, comparisons)[1].specs.values())


def _sections(runs: Sequence[tuple[str, RunDocument]],
              comparisons: Sequence[RunComparisonView]) -> tuple[list[str], Charts]:
    """The comparisons first, with their overlaid sweeps; then each run. Given comparisons,
    a run's own section has no sweep charts: they are drawn once, overlaid with BASE."""
    chart_set = Charts(VariantColors(r for _, run in runs for r in run.results))
    documents = dict(runs)
    sections = [_compare_section(c, chart_set, documents) for c in comparisons]
    chart_set.run_label = len(runs) > 1  # several rooflines of one family: say whose
    sections += [_run_section(name, run, chart_set, sweeps=not comparisons)
                 for name, run in runs]
    return sections, chart_set


# ---------------------------------------------------------------- one run


def _by_family(results: Sequence[R.Result]) -> dict[str, list[R.Result]]:
    families: dict[str, list[R.Result]] = {}
    for result in results:
        families.setdefault(result.family, []).append(result)
    return families


def _run_section(name: str, run: RunDocument, chart_set: Charts, sweeps: bool = True) -> str:
    if run.meta.get("kind") == "profile":
        return _profile_section(name, run, chart_set)
    parts = [f'<section class="run"><h2>Run {_e(name)}</h2>', _environment(run),
             _status_line(run.results)]
    for family, results in _by_family(run.results).items():
        title = f"{family}: roofline" + (f" ({name})" if chart_set.run_label else "")
        parts.append(_family_section(family, results, run.env.get("ceilings"), chart_set,
                                     sweeps, title))
    parts.append(_failures(run.results))
    parts.append("</section>")
    return "\n".join(parts)


def _status_line(results: Sequence[R.Result]) -> str:
    counts: dict[str, int] = {}
    for r in results:
        counts[r.status] = counts.get(r.status, 0) + 1
    text = ", ".join(f"{n} {_status_label(s)}" for s, n in counts.items())
    return f'<p class="status-line">{len(results)} results: {_e(text)}</p>'


def _environment(run: RunDocument) -> str:
    """What a reader needs to trust or reproduce the numbers, in a two-column list."""
    rows = [(label, value) for label, value in environment_rows(run) if value not in (None, "")]
    items = "".join(f"<dt>{_e(k)}</dt><dd>{_e(str(v))}</dd>" for k, v in rows)
    check = (run.env.get("ceilings_check") or {})
    stale = (f'<p class="warning">{_e(check["message"])}</p>'
             if check.get("stale") and check.get("message") else "")
    if run.incomplete:
        stale += f'<p class="warning">Incomplete run: {_e(run.incomplete)}.</p>'
    return f'<dl class="env">{items}</dl>{stale}'


def environment_rows(run: RunDocument) -> list[tuple[str, object]]:
    """(label, value) of the run's header: device, clocks, software, command, date."""
    env, meta = run.env, run.meta
    gpu = env.get("gpu")
    device = (f"{gpu} (sm_{str(env.get('compute_capability', '')).replace('.', '')}, "
              f"{env.get('sm_count')} SMs, {_gib(env.get('memory_bytes'))})" if gpu
              else f"CPU {env.get('cpu', '')}, {env.get('cpu_threads', '?')} threads "
                   "(host-clock timings)")
    clocks = (f"SM {env.get('sm_clock_mhz')} MHz at start, max {env.get('sm_clock_max_mhz')} "
              f"MHz; memory {env.get('mem_clock_mhz')} MHz; power limit "
              f"{env.get('power_limit_w')} W; {env.get('temperature_c')} C" if gpu else None)
    versions = ", ".join(f"{k} {env[k]}" for k in ("driver", "cuda_runtime", "torch", "triton",
                                                   "python") if env.get(k))
    return [("device", device), ("clocks", clocks), ("software", versions),
            ("gpubench", f"{meta.get('gpubench', '')} (commit {meta.get('git_commit', '?')})"),
            ("command", meta.get("command")), ("started", meta.get("started")),
            ("wall time", f"{meta['wall_s']:.1f} s" if meta.get("wall_s") else None),
            ("seed", meta.get("seed")), ("timing", _timing_text(meta.get("timing") or {})),
            ("ceilings", _ceilings_text(env.get("ceilings")))]


def _gib(value) -> str:
    return f"{value / 2**30:.0f} GiB" if value else "? GiB"


def _timing_text(timing: dict) -> str:
    if not timing:
        return ""
    modes = ",".join(timing.get("modes") or [])
    return (f"modes {modes}; warmup {timing.get('warmup_s', 0) * 1e3:g} ms; sampling "
            f"{timing.get('min_time_s', 0) * 1e3:g}-{timing.get('max_time_s', 0) * 1e3:g} ms "
            f"until the CI is within +-{timing.get('target_rel_ci', 0) * 100:g}%")


def _ceilings_text(ceilings: dict | None) -> str | None:
    if not ceilings:
        return None
    rates = ", ".join([f"{d} {fmt.rate(v)}" for d, v in (ceilings.get("tflops") or {}).items()]
                      + [f"{name} unknown" for name in ceilings.get("unmeasured") or {}
                         if name not in ("copy", "copy_curve")])
    return (f"copy {fmt.rate(ceilings.get('bandwidth_gbps'))} GB/s; matmul TFLOP/s {rates} "
            f"(gpubench peak, measured {ceilings.get('measured', '?')})")


# ---------------------------------------------------------------- one family


def _family_section(family: str, results: list[R.Result], ceilings: dict | None,
                    chart_set: Charts, sweeps: bool = True, roof_title: str = "") -> str:
    table, caption, notes = _family_table(results)
    roof = chart_set.place(charts.roofline_spec(results, ceilings,
                                                roof_title or f"{family}: roofline",
                                                chart_set.colors))
    sweep_divs = [chart_set.place(spec) for sweep in charts.sweeps(results)
                  for spec in charts.sweep_specs(sweep, family, chart_set.colors)] if sweeps \
        else []
    no_roof = "" if roof or not charts.measured(results) else (
        '<p class="muted">No roofline: the family gives no FLOP count, or no ceilings were '
        "measured.</p>")
    no_roof += _left_out(results)
    notes_html = ("<details><summary>warnings and notes "
                  f"({len(notes)})</summary><ul>{''.join(f'<li>{_e(n)}</li>' for n in notes)}"
                  "</ul></details>") if notes else ""
    return (f'<section class="family"><h3>{_e(family)}</h3><div class="table-scroll">{table}'
            "</div>"
            f'<p class="caption">{_e(caption)}</p>{notes_html}{roof}{no_roof}'
            f'<div class="sweeps">{"".join(sweep_divs)}</div></section>')


def _family_table(results: list[R.Result]) -> tuple[str, str, list[str]]:
    """One sortable table for the family's groups: the terminal table's cells, with the
    shape and dtype in front and a sort key for every number."""
    layouts = [(group, *table_layout(group, baseline_column=False)) for group in groups_of(results)]
    shown = {h for _, headers, _, _ in layouts for h in headers}
    headers = ["shape", "dtype"] + [h for h, _ in COLUMNS if h in shown]
    if any((r.ncu or {}).get("top_hint") for r in results):
        headers.append(NCU_HINT)
    right = {h for h, justify in COLUMNS if justify == "right"}
    head = "".join(f'<th class="{"num" if h in right else ""}">{_e(h)}</th>' for h in headers)
    rows, notes = [], []
    for group, _, cells_list, _ in layouts:
        notes += [f"{group[0].shape.label()} {group[0].dtype}: {n}" for n in group_notes(group)]
        for result, cells in zip(group, cells_list, strict=True):
            cells = {**cells, "shape": result.shape.label(), "dtype": result.dtype,
                     NCU_HINT: charts.ncu_hint(result.ncu or {})}
            rows.append(_table_row(result, cells, headers, right))
    caption = layouts[0][3] if layouts else ""
    table = (f'<table class="results sortable"><thead><tr>{head}</tr></thead>'
             f'<tbody>{"".join(rows)}</tbody></table>')
    return table, caption, notes


def _table_row(result: R.Result, cells: dict, headers: list[str], right: set[str]) -> str:
    keys = sort_keys(result)
    tds = []
    for header in headers:
        key = keys.get(header)
        sort = f' data-sort="{key:.6g}"' if key is not None and math.isfinite(key) else ""
        css = ("num " if header in right else "") + (
            f"status-{result.status}" if header == "check" else "")
        tds.append(f'<td class="{_e(css.strip())}"{sort}>{_e(plain(cells.get(header, "")))}</td>')
    return f"<tr>{''.join(tds)}</tr>"


def sort_keys(result: R.Result) -> dict[str, float | None]:
    """The numbers behind a row's cells, so sorting orders 1.2 ms after 900 us."""
    s = result.summary if result.correct else None
    keys: dict[str, float | None] = {"build": result.compile_s}
    if s is not None:
        keys.update({"median": s.median, "±CI": s.rel_ci, "IQR": s.rel_iqr, "n": s.n,
                     "TFLOP/s": result.tflops, "GB/s": result.gbps,
                     "of roof": result.roof.fraction if result.roof else None,
                     "vs base": result.speedup})
    keys["shape"] = math.prod(result.shape.values()) if len(result.shape) else None
    return keys


def _left_out(results: Sequence[R.Result]) -> str:
    """Lines saying which rows are not on the charts (charts.measured leaves them out): SUSPECT
    rows (a time that games the timer drawn beside honest ones would read as a win) and
    correctness-only rows (the Triton interpreter's time, not a kernel's)."""
    suspects = sum(r.status == R.SUSPECT for r in results)
    interpreted = sum(r.passed and charts.correctness_only(r) for r in results)
    lines = []
    if suspects:
        lines.append(f'<p class="status-suspect">{suspects} SUSPECT row(s) left out of the '
                     "charts: their output is right but their time is not to be trusted "
                     "(why: under Failures, SUSPECT rows and skips).</p>")
    if interpreted:
        lines.append(f'<p class="muted">{interpreted} correctness-only row(s) left out of '
                     "the charts: Triton kernels run by the interpreter on the CPU "
                     "(TRITON_INTERPRET=1); their output is checked, their time is the "
                     "interpreter's.</p>")
    return "".join(lines)


# ---------------------------------------------------------------- failures

FAILURES_TITLE = "<h3>Failures, SUSPECT rows and skips</h3>"


def _failures(results: Sequence[R.Result]) -> str:
    """Every result that did not pass (SUSPECT included, with its reason), one row per
    (family, variant, status, reason) with the points it covers: a CUDA-only variant
    skipped at 12 shapes is one row."""
    rows: dict[tuple, list[str]] = {}
    for r in results:
        if r.status == R.OK:
            continue
        reason = note(r) or "-"
        rows.setdefault((r.family, r.variant, r.status, reason), []).append(
            f"{r.shape.label()} {r.dtype} {r.mode}")
    if not rows:
        return FAILURES_TITLE + '<p class="muted">None: every point passed.</p>'
    body = "".join(
        f'<tr><td>{_e(f)}</td><td>{_e(v)}</td><td class="status-{_e(s)}">'
        f"{_e(_status_label(s))}</td><td>{_e(', '.join(points))}</td>"
        f'<td class="reason">{_e(reason)}</td></tr>'
        for (f, v, s, reason), points in rows.items())
    return (FAILURES_TITLE + '<table class="results sortable"><thead><tr>'
            "<th>family</th><th>variant</th><th>status</th><th>points</th><th>why</th>"
            f"</tr></thead><tbody>{body}</tbody></table>")


def _status_label(status: str) -> str:
    from gpubench.report.table import STATUS_STYLE

    return STATUS_STYLE.get(status, (status, ""))[0]


# ---------------------------------------------------------------- gpubench profile


def _profile_section(name: str, run: RunDocument, chart_set: Charts) -> str:
    """A `gpubench profile` document: the program, its exit, the GPU's busy fraction and
    gaps, a chart of the top kernels and the table of all of them."""
    from gpubench.format import compact_name

    profile = run.meta["profile"]
    what = "kernels" if profile["device"] else "CPU ops"
    kept = profile["region_instances"] - profile["skipped_instances"]
    head = [("program", " ".join(run.meta.get("program") or [])),
            ("exit", "timed out" if run.meta.get("timed_out") else run.meta.get("exit_code")),
            ("device", run.env.get("gpu") or "CPU (no CUDA: CPU ops only)"),
            ("region", f"{profile['region']} ({kept} of {profile['region_instances']} "
                       "instances)" if profile["region"] else "the whole program"),
            ("finished", run.meta.get("finished"))]
    if profile["device"] and profile["busy_fraction"] is not None:
        head.append(("GPU busy", f"{profile['busy_fraction'] * 100:.1f}% of "
                                 f"{fmt.duration(profile['window_us'] * 1e-6)}"))
    items = "".join(f"<dt>{_e(k)}</dt><dd>{_e(str(v))}</dd>" for k, v in head)
    gaps = "".join(f"<li>{_e(fmt.duration(g['duration_us'] * 1e-6))} between {_e(g['after'])} "
                   f"and {_e(g.get('before', ''))}</li>" for g in profile["gaps"])
    rows = "".join(
        f'<tr><td class="name" title="{_e(g["name"])}">{_e(compact_name(g["name"]))}</td>'
        f"<td>{_e(g['origin'])}</td>"
        f'<td class="num" data-sort="{_e(g["calls"])}">{_e(g["calls"])}</td>'
        f'<td class="num" data-sort="{g["total_us"]:.6g}">'
        f"{_e(fmt.duration(g['total_us'] * 1e-6))}</td>"
        f'<td class="num" data-sort="{g["share"]:.6g}">{_e(fmt.percent(g["share"]))}</td>'
        f"<td>{_e(', '.join(g['ranges']))}</td></tr>" for g in profile["groups"])
    chart = chart_set.place(charts.kernels_spec(profile["groups"], f"top {what} by time"))
    return (f'<section class="run"><h2>Profile {_e(name)}</h2><dl class="env">{items}</dl>'
            f"{chart}<h3>{_e(what)} by name</h3>"
            '<table class="results sortable"><thead><tr><th>name</th><th>origin</th>'
            '<th class="num">calls</th><th class="num">total</th><th class="num">share</th>'
            f"<th>ranges</th></tr></thead><tbody>{rows}</tbody></table>"
            + (f"<h3>Largest idle gaps</h3><ul>{gaps}</ul>" if gaps else "") + "</section>")


# ---------------------------------------------------------------- compare


def _compare_section(view: RunComparisonView, chart_set: Charts,
                     documents: dict[str, RunDocument]) -> str:
    result = view.comparison
    head = "".join(f"<th>{_e(h)}</th>" for h in COMPARE_HEADERS)
    body = []
    for point in result.points:
        cells = compare_cells(point)
        verdict = cells[5].rstrip("*")
        tds = "".join(f'<td class="{"verdict-" + verdict if i == 5 else ""}">{_e(c)}</td>'
                      for i, c in enumerate(cells))
        body.append(f"<tr>{tds}</tr>")
    chart = chart_set.place(charts.compare_spec(
        result.points, f"NEW {view.new_name} / BASE {view.base_name}"))
    untrusted = sum(bool(p.status_verdict) for p in result.points)
    if untrusted:  # compare_spec charts speed verdicts only
        chart += (f'<p class="verdict-SUSPECT">{untrusted} point(s) SUSPECT or FAILED in NEW '
                  "after a PASS in BASE: regressions with no trusted time, so not on the chart "
                  "(why: in the table).</p>")
    return (f'<section class="compare"><h2>Compare: BASE {_e(view.base_name)}, NEW '
            f'{_e(view.new_name)}</h2>{chart}<div class="table-scroll">'
            f'<table class="results sortable compare"><thead><tr>{head}</tr></thead>'
            f'<tbody>{"".join(body)}</tbody></table></div>'
            f'<p class="caption">{_e(compare_caption(result, list_unmatched=False))}</p>'
            f"{_unmatched('BASE', result.only_base)}{_unmatched('NEW', result.only_new)}"
            f"{_overlays(view, chart_set, documents)}</section>")


def _overlays(view: RunComparisonView, chart_set: Charts,
              documents: dict[str, RunDocument]) -> str:
    """Each family's sweeps with BASE and NEW on the same charts: BASE dashed inside its
    noise band (the 95% CI of its median), NEW solid; a NEW line inside the band has not
    moved. '' when either run is not on the page (a comparison given without its runs)."""
    base, new = documents.get(view.base_name), documents.get(view.new_name)
    if base is None or new is None:
        return ""
    base_families, new_families = _by_family(base.results), _by_family(new.results)
    parts = []
    for family in dict.fromkeys([*base_families, *new_families]):
        found = charts.overlay_sweeps(base_families.get(family, []),
                                      new_families.get(family, []),
                                      view.base_name, view.new_name)
        divs = [chart_set.place(spec) for sweep in found
                for spec in charts.sweep_specs(sweep, family, chart_set.colors)]
        if divs:
            parts.append(f"<h3>{_e(family)}: BASE vs NEW</h3>"
                         f'<div class="sweeps">{"".join(divs)}</div>')
    if not parts:
        return ""
    return ('<p class="overlay-note">Sweeps, both runs on each chart: BASE dashed with its '
            "noise band (the 95% CI of its median), NEW solid; a variant keeps its colour on "
            "every chart, the family's baseline variant is black and thick.</p>"
            + "".join(parts))


def _unmatched(side: str, keys: Sequence[str]) -> str:
    """Points of one run only, folded: a full run against a one-family run has hundreds."""
    if not keys:
        return ""
    items = "".join(f"<li>{_e(k)}</li>" for k in keys)
    return (f"<details><summary>{len(keys)} point(s) only in {side}, not compared</summary>"
            f"<ul>{items}</ul></details>")


# ---------------------------------------------------------------- page


def _script_json(data: dict) -> str:
    """JSON safe inside a <script> element: '</script>' would end it early and '<!--'
    would make the parser swallow the elements after it (safe_text.script_json)."""
    return safe_text.script_json(strict_dumps(data))


def _vendor_scripts() -> str:
    folder = resources.files("gpubench.report") / "vendor"
    return "\n".join(f"<script>{(folder / name).read_text(encoding='utf-8')}</script>"
                     for name in VENDOR_SCRIPTS)
