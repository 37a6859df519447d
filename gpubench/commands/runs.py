"""`gpubench runs`: the recorded run folders, newest first, one line each.

From the index of runs (store/run_index.py), which every run joins at its first save wherever
--out put it, and each folder's results.json for what the index does not keep (the points,
their statuses, the GPU): a run still going, or interrupted, shows what it has saved so
far. The first column is what `compare`, `report` and `--baseline` take for the run
(latest, latest~1, ...), the same order resolve_run uses. Folders deleted since they were
recorded are skipped and counted.
"""

from __future__ import annotations

import datetime as dt
import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.text import Text

from gpubench import errors, safe_text
from gpubench.records import result as R
from gpubench.records.completeness import incomplete_of
from gpubench.report.line_table import LineTable
from gpubench.store import run_index
from gpubench.store.folder import LATEST, RESULTS_JSON

HEADERS = ["run", "when", "folder", "points", "status", "device", "command"]
# Narrow, the time goes first (a default run's folder name carries it), then the device;
# the folder (long: profiles/<UTC time>-<families>) is what `compare` and `report` take,
# so it goes last, at 80 columns, and 120 keep it (it was dropped first, issue 52); the
# reference, the outcome and the command (shortened) stay.
DROP_ORDER = ("when", "device", "folder")
# The order statuses are counted in: what passed, then what needs a look, then the rest.
STATUS_ORDER = (R.OK, R.SUSPECT, R.FAIL, R.ERROR, R.CRASHED, R.TIMEOUT, R.BUILD_ERROR,
                R.SKIPPED, R.NOT_RUN)


@dataclass(frozen=True)
class RunsRequest:
    """What `gpubench runs` was asked for, built once by the CLI."""

    last: int | None = 20  # the newest N; None: every recorded run


@dataclass(frozen=True)
class RunSummary:
    """One line of `gpubench runs`: what the index and the run's results.json say."""

    reference: str  # 'latest', 'latest~3'
    folder: Path
    started: float
    command: str
    points: int | None  # None: results.json unreadable
    status: str
    device: str


def execute(request: RunsRequest, console: Console) -> int:
    live, gone = run_index.newest_first()
    shown = live if request.last is None else live[:request.last]
    summaries = [summarize(entry, i) for i, entry in enumerate(shown)]
    for line in runs_view(summaries, len(live), len(gone), console.width):
        console.print(line)
    return errors.EXIT_OK


def summarize(entry: run_index.IndexEntry, back: int) -> RunSummary:
    reference = LATEST if back == 0 else f"{LATEST}~{back}"
    try:
        document = json.loads((entry.folder / RESULTS_JSON).read_text(encoding="utf-8"))
        results, meta = document["results"], document.get("meta", {})
        statuses = Counter(R.status_label(r.get("status", "?")) for r in results)
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        return RunSummary(reference, entry.folder, entry.started, entry.command, None,
                          f"unreadable: {type(exc).__name__}", "")
    return RunSummary(reference, entry.folder, entry.started, entry.command, len(results),
                      status_counts(statuses, incomplete_of(meta)),
                      device_name(document.get("env", {}), meta))


def status_counts(statuses: Counter, incomplete: str | None) -> str:
    """'20 PASS, 4 skipped' in STATUS_ORDER; ', incomplete' when the run was cut short."""
    order = [R.status_label(s) for s in STATUS_ORDER]
    labels = sorted(statuses, key=lambda s: order.index(s) if s in order else len(order))
    text = ", ".join(f"{statuses[label]} {label}" for label in labels) or "no results"
    return text + (", incomplete" if incomplete else "")


def device_name(env: dict, meta: dict) -> str:
    """'H200' (the vendor's name adds nothing in a column of them), or 'CPU'."""
    gpu = env.get("gpu") if isinstance(env, dict) else None
    if gpu:
        return str(gpu).removeprefix("NVIDIA ").strip()
    return "CPU" if meta.get("device") == "cpu" else str(meta.get("device") or "?")


def runs_view(summaries: list[RunSummary], recorded: int, gone: int,
              width: int) -> list:
    """The heading, one line per run, and what was left out."""
    if not recorded:
        return [Text("No runs recorded yet: `gpubench run` records each run it saves "
                     f"(in {run_index.index_path()})."),
                *_gone_line(gone)]
    table = LineTable(HEADERS, [_row(s) for s in summaries], flex="command",
                      justify={"points": "right"}, order=DROP_ORDER)
    heading = f"{recorded} run{'' if recorded == 1 else 's'} with results, newest first"
    if len(summaries) < recorded:
        heading += f"; the newest {len(summaries)} shown (--all: every one)"
    notes = [Text(heading, style="bold"), table, *_gone_line(gone)]
    dropped = table.dropped(width)
    if dropped:
        notes.append(Text(f"Not shown at {width} columns: {', '.join(dropped)}.", style="dim"))
    return notes


def _gone_line(gone: int) -> list[Text]:
    if not gone:
        return []
    one = gone == 1
    return [Text(f"{gone} recorded run{'' if one else 's'} skipped: "
                 f"{'its folder was' if one else 'their folders were'} deleted or moved.",
                 style="dim")]


def _row(summary: RunSummary) -> dict:
    failed = any(R.status_label(s) in summary.status for s in R.FAILED_STATUSES) or \
        summary.points is None
    return {"run": summary.reference,
            "when": dt.datetime.fromtimestamp(summary.started).strftime("%Y-%m-%d %H:%M"),
            "folder": shown_folder(summary.folder),
            "points": "?" if summary.points is None else str(summary.points),
            "status": Text(summary.status, style="red" if failed else "green"),
            # every one starts with 'gpubench': the rest is what tells runs apart
            "device": summary.device, "command": summary.command.removeprefix("gpubench ")}


def shown_folder(folder: Path) -> str:
    """Relative to the current folder when inside it, '~/...' inside the home folder."""
    for root, prefix in ((Path.cwd(), ""), (Path.home(), "~/")):
        try:
            return prefix + str(folder.relative_to(root))
        except ValueError:
            continue
    return safe_text.one_line(str(folder))
