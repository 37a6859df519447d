"""`gpubench report --svg DIR` / `--png DIR`: each chart of the page as a file, for a PR.

The charts are Vega-Lite specs that vega (JavaScript, vendored in report/vendor/) draws, so
a file of one needs a JavaScript engine. gpubench's dependencies have none: matplotlib would
mean drawing every chart twice, and vl-convert (vega in Rust) is a ~30 MB wheel. Headless
Chromium, which the report's tests already use, draws the same specs with the same vendored
vega as the page, so a file is exactly the chart on the page: one Chromium run draws them all
(`view.toSVG()`, `view.toImageURL('png')`) and leaves each, base64 in the DOM, for
`--dump-dom` to hand back. Without Chromium, --svg and --png say so and write nothing.
"""

from __future__ import annotations

import base64
import re
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from importlib import resources
from pathlib import Path

from gpubench import errors, safe_text
from gpubench.records.strict_json import strict_dumps

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
FORMATS = ("svg", "png")
# A file's width in CSS pixels: a GitHub PR comment column is ~900 px; the legend sits
# inside it. PNGs are drawn at twice that (sharp on a high-DPI screen, ~100 kB each).
FILE_WIDTH, PNG_SCALE = 900, 2
# Vega draws ~40 charts in a few seconds; a minute of virtual time leaves room on a loaded
# machine, and a real-time cap stops a wedged browser.
VIRTUAL_TIME_MS, TIMEOUT_S = 60_000, 300
_PUT = re.compile(r'<pre id="(svg|png|error)-(\d+)">([A-Za-z0-9+/=:;,.\-]*)</pre>')


def find_browser() -> str | None:
    return next(filter(None, map(shutil.which, BROWSERS)), None)


def write_chart_files(specs: Sequence[dict], folder: Path, kind: str) -> list[Path]:
    """Write each spec as `NN-<title>.svg` (or .png) in `folder`; returns the paths.
    ToolMissing (exit 6) without Chromium; OutputError (exit 12) when a file cannot be
    written or the browser fails."""
    browser = find_browser()
    if browser is None:
        raise errors.ToolMissing(
            f"--{kind} draws the charts with headless Chromium (the charts are Vega-Lite, "
            "drawn by JavaScript), and none is installed here: apt install chromium (or put "
            "chromium or google-chrome on PATH). The HTML report itself needs no browser.")
    drawn = _draw(browser, [_fixed_width(spec) for spec in specs], kind)
    try:
        folder.mkdir(parents=True, exist_ok=True)
        paths = []
        for index, name in enumerate(file_names(specs)):
            path = folder / f"{name}.{kind}"
            path.write_bytes(drawn[index])
            path.chmod(0o644)
            paths.append(path)
    except OSError as exc:
        raise errors.OutputError(f"cannot write the charts to {folder}: "
                                 f"{exc.strerror or exc}") from None
    return paths


def file_names(specs: Sequence[dict]) -> list[str]:
    """'03-softmax-float32-cold-rows-4096-time': page order, then the title, in characters
    every shell and file system takes."""
    names = []
    for index, spec in enumerate(specs, 1):
        slug = re.sub(r"[^a-z0-9]+", "-", str(spec.get("title", "chart")).lower()).strip("-")
        names.append(f"{index:02d}-{slug[:80].rstrip('-') or 'chart'}")
    return names


def _fixed_width(spec: dict) -> dict:
    """A page chart is as wide as its column ("container"); a file has one width."""
    if spec.get("width") != "container":
        return spec
    legend_px = 160  # the legends beside the plot, inside FILE_WIDTH
    return {**spec, "width": FILE_WIDTH - legend_px}


def _draw(browser: str, specs: list[dict], kind: str) -> dict[int, bytes]:
    """Each spec drawn by Chromium: index -> the file's bytes."""
    with tempfile.TemporaryDirectory(prefix="gpubench-charts-") as tmp:
        page = Path(tmp) / "charts.html"
        page.write_text(_page(specs, kind), encoding="utf-8")
        try:
            done = subprocess.run(
                [browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                 f"--user-data-dir={tmp}/profile", f"--virtual-time-budget={VIRTUAL_TIME_MS}",
                 "--dump-dom", page.resolve().as_uri()],
                capture_output=True, text=True, timeout=TIMEOUT_S)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise errors.OutputError(f"{browser} did not draw the charts: {exc}") from None
    found = {(what, int(i)): text for what, i, text in _PUT.findall(done.stdout)}
    failures = [base64.b64decode(text).decode(errors="replace")
                for (what, _), text in found.items() if what == "error"]
    drawn = {i: _decode(text) for (what, i), text in found.items() if what == kind}
    if failures or len(drawn) != len(specs):
        why = failures[0] if failures else (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise errors.OutputError(f"{browser} drew {len(drawn)} of {len(specs)} charts: {why}")
    return drawn


def _decode(text: str) -> bytes:
    """A PNG arrives as a data URL, an SVG as base64 of its UTF-8 text."""
    return base64.b64decode(text.split(",", 1)[1] if text.startswith("data:") else text)


def _page(specs: list[dict], kind: str) -> str:
    folder = resources.files("gpubench.report") / "vendor"
    vendor = "".join(f"<script>{(folder / name).read_text(encoding='utf-8')}</script>"
                     for name in ("vega.min.js", "vega-lite.min.js", "vega-embed.min.js"))
    data = safe_text.script_json(strict_dumps(specs))
    return (f'<!DOCTYPE html><html><head><meta charset="utf-8"></head><body>'
            f'<div id="charts"></div><script type="application/json" id="specs">{data}'
            f"</script>{vendor}<script>{_SCRIPT.replace('KIND', kind)}"
            f"</script></body></html>").replace("PNG_SCALE", str(PNG_SCALE))


_SCRIPT = """
(function () {
  var specs = JSON.parse(document.getElementById("specs").textContent);
  function put(what, i, text) {  // base64 only: the DOM dump hands it back untouched
    var pre = document.createElement("pre");
    pre.id = what + "-" + i; pre.textContent = text; document.body.appendChild(pre);
  }
  function b64(text) { return btoa(unescape(encodeURIComponent(text))); }
  specs.forEach(function (spec, i) {
    var div = document.createElement("div");
    div.id = "c" + i; document.getElementById("charts").appendChild(div);
    vegaEmbed(div, spec, {mode: "vega-lite", renderer: "svg", actions: false})
      .then(function (result) {
        return "KIND" === "svg" ? result.view.toSVG().then(function (svg) {
          put("svg", i, b64(svg)); })
          : result.view.toImageURL("png", PNG_SCALE).then(function (url) { put("png", i, url); });
      })
      .catch(function (error) { put("error", i, b64("chart " + i + ": " + error)); });
  });
})();
"""
