"""The report page's frame: its CSS, its script (sortable tables, charts drawn by
vega-embed) and the HTML around the sections. Text only; report/html.py fills it in.

Full width: the page takes the window (the charts are "container" wide), with sweep charts
two a row from 1100 px and one a row below, so at 1400 px nothing sits in a 60% column and at
800 px nothing is squeezed.
"""

STYLE = """
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 1em 0;
       padding: 0 1.5em; color: #1d1d1f; }
h1 { font-size: 1.5em; } h2 { border-bottom: 2px solid #ddd; padding-bottom: .2em; }
h3 { margin-top: 1.6em; }
dl.env { display: grid; grid-template-columns: max-content auto; gap: .15em 1em;
         font-size: 13px; background: #f6f6f8; padding: .7em 1em; border-radius: 6px; }
dl.env dt { font-weight: 600; } dl.env dd { margin: 0; font-family: ui-monospace, monospace; }
table.results { border-collapse: collapse; font-size: 13px; margin: .4em 0; }
table.results th, table.results td { padding: .25em .6em; border-bottom: 1px solid #e4e4e8;
         text-align: left; white-space: nowrap; }
table.results td.reason { white-space: normal; max-width: 40em; }
table.compare td:last-child { white-space: normal; min-width: 14em; }
table.results td.name { white-space: normal; word-break: break-all; max-width: 36em; }
table.results th { background: #f0f0f3; cursor: pointer; user-select: none; }
table.results th.sorted-asc::after { content: " \\25B2"; }
table.results th.sorted-desc::after { content: " \\25BC"; }
.num { text-align: right !important; font-variant-numeric: tabular-nums; }
.status-ok { color: #1a7f37; font-weight: 600; }
.status-fail, .status-error, .status-crashed, .status-timeout, .status-build_error,
.status-suspect { color: #c62828; font-weight: 700; }
.status-skipped, .status-not_run, .muted { color: #777; }
.verdict-FASTER { color: #1a7f37; font-weight: 700; }
.verdict-SLOWER, .verdict-SUSPECT, .verdict-FAILED { color: #c62828; font-weight: 700; }
.verdict-UNSURE { color: #a86b00; }
.caption { font-size: 12px; color: #555; max-width: 70em; }
.warning { background: #fff4d6; border-left: 4px solid #d89a00; padding: .4em .8em; }
.chart { margin: .8em 0; width: 100%; min-width: 0; }
.sweeps { display: grid; grid-template-columns: 1fr; gap: .5em 2em; }
@media (min-width: 1100px) { .sweeps { grid-template-columns: 1fr 1fr; } }
.table-scroll { overflow-x: auto; max-width: 100%; }
.overlay-note { font-size: 12px; color: #555; }
details { font-size: 13px; margin: .4em 0; }
"""

SCRIPT = """
(function () {
  // Sortable tables: click a header; numbers sort by their data-sort value.
  document.querySelectorAll("table.sortable").forEach(function (table) {
    table.querySelectorAll("th").forEach(function (th, column) {
      th.addEventListener("click", function () {
        var ascending = !th.classList.contains("sorted-asc");
        table.querySelectorAll("th").forEach(function (h) {
          h.classList.remove("sorted-asc", "sorted-desc"); });
        th.classList.add(ascending ? "sorted-asc" : "sorted-desc");
        var body = table.tBodies[0];
        var rows = Array.prototype.slice.call(body.rows);
        rows.sort(function (a, b) {
          var x = a.cells[column], y = b.cells[column];
          var kx = x.dataset.sort, ky = y.dataset.sort, r;
          if (kx !== undefined && ky !== undefined) { r = parseFloat(kx) - parseFloat(ky); }
          else if (kx !== undefined) { r = -1; } else if (ky !== undefined) { r = 1; }
          else { r = x.textContent.localeCompare(y.textContent); }
          return ascending ? r : -r;
        });
        rows.forEach(function (row) { body.appendChild(row); });
      });
    });
  });
  // Charts: every spec into its div as SVG; the body records how many rendered, so a
  // headless browser (and the tests) can tell a drawn page from a broken one.
  var specs = JSON.parse(document.getElementById("gb-specs").textContent);
  var rendered = 0, failed = 0;
  var jobs = Object.keys(specs).map(function (id) {
    return vegaEmbed("#" + id, specs[id], {mode: "vega-lite", renderer: "svg", actions: false})
      .then(function () { rendered += 1; })
      .catch(function (error) {
        failed += 1;
        document.getElementById(id).textContent = "chart failed: " + error;
      });
  });
  Promise.all(jobs).then(function () {
    document.body.setAttribute("data-charts-rendered", String(rendered));
    document.body.setAttribute("data-charts-failed", String(failed));
    // How tall the drawn page is: a headless screenshot of the whole page needs it.
    document.body.setAttribute("data-page-height",
                               String(document.documentElement.scrollHeight));
  });
})();
"""

PAGE = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="generator" content="gpubench">
<title>{title}</title><style>{style}</style></head>
<body data-charts-rendered="0">
<h1>{heading}</h1><p class="muted">{generated}</p>
{body}
<script type="application/json" id="gb-specs">{specs}</script>
{vendor}
<script>{script}</script>
</body></html>
"""
