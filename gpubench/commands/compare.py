"""`gpubench compare BASE NEW`: load two run documents, compare them, show the verdicts.
`gpubench compare AB_RUN`: an A/B run's own verdicts (commands/ab.py).

Made for CI gates, so nothing that proves nothing exits 0: two runs with no point in
common are a usage error (exit 2) naming what differs, and `--fail-on-regression` fails
(exit 13) on a SLOWER point, on a point that passed in BASE and is SUSPECT or failed in
NEW, on BASE points that NEW did not measure, and when no point got a speed verdict."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console

from gpubench import errors, safe_text
from gpubench.analysis.ab import GATE_NAMED, gate_reasons
from gpubench.analysis.comparison import RunComparison, compare_runs
from gpubench.analysis.run_overlap import what_differs
from gpubench.files import write_output
from gpubench.records.run import RunDocument
from gpubench.records.strict_json import strict_dumps
from gpubench.report.ab_view import ab_markdown, ab_table
from gpubench.report.compare_view import compare_markdown, compare_table, counts_text
from gpubench.store.folder import load_run, read_run, resolve_run
from gpubench.tune.summary import best_change

STDOUT = Path("-")  # --markdown -: the markdown on stdout, in place of the table


@dataclass(frozen=True)
class CompareRequest:
    """Everything `gpubench compare` was asked for, built once by the CLI."""

    base: str  # a run folder, 'latest' or 'latest~N'
    new: str | None  # None: BASE is an A/B run (`gpubench ab`), its own verdicts shown
    threshold: float  # a fraction: changes within +-it are SAME
    fail_on_regression: bool = False  # exit EXIT_REGRESSION on a regression (see the gate)
    markdown: Path | None = None  # the markdown table into this file; STDOUT: on stdout
    as_json: bool = False  # the comparison as JSON on stdout
    base_repeats: tuple[str, ...] = ()  # more runs of each side's code (analysis/repeats.py)
    new_repeats: tuple[str, ...] = ()


def execute(request: CompareRequest, console: Console) -> int:
    if request.new is None:
        return _paired(request, console)
    base_dir, new_dir = resolve_run(request.base), resolve_run(request.new)
    base, new = read_run(base_dir), read_run(new_dir)
    result = compare_runs(base, new, request.threshold,
                          [load_run(run) for run in request.base_repeats],
                          [load_run(run) for run in request.new_repeats])
    if not result.points:
        raise errors.UsageError(f"BASE {base_dir} and NEW {new_dir} have no point in common: "
                                f"{_differences(base, new)}")
    _show(request, result, str(base_dir), str(new_dir), console)
    tuned = best_change(base, new, request.threshold)  # two `gpubench tune` records
    if tuned and not request.as_json and request.markdown != STDOUT:
        console.print(safe_text.terminal(tuned), markup=False, soft_wrap=True)
    # An incomplete NEW's unrun points are NOT_RUN rows, which the gate counts missing;
    # the gate names the run too (it cannot vouch for a run that did not finish).
    warned = _incomplete_runs(("BASE", base_dir, base)) if request.fail_on_regression else \
        _incomplete_runs(("BASE", base_dir, base), ("NEW", new_dir, new))
    for line in warned:
        sys.stderr.write(f"warning: {line}\n")
    if request.fail_on_regression:
        return gate(result, _incomplete_runs(("NEW", new_dir, new)))
    return errors.EXIT_OK


def _paired(request: CompareRequest, console: Console) -> int:
    """One run: an A/B run's verdicts (its pairs were compared in one process, at the
    threshold the run was made with), and the gate on them."""
    folder = resolve_run(request.base)
    run = read_run(folder)
    if not run.pairs:
        raise errors.UsageError(f"{folder} is not an A/B run (`gpubench ab`): compare needs "
                                "BASE and NEW runs, or one A/B run")
    threshold = (run.meta.get("ab") or {}).get("threshold", request.threshold)
    title = f"ab {folder}: NEW {run.meta['ab'].get('new')} against BASE " \
            f"{run.meta['ab'].get('base')}"
    family = ",".join(run.meta.get("families") or ())
    if request.as_json:
        sys.stdout.write(strict_dumps({"ab": str(folder), "threshold": threshold,
                                       "verdicts": [v.to_dict() for v in run.pairs]}) + "\n")
    elif request.markdown == STDOUT:
        sys.stdout.write(ab_markdown(run.pairs, title, family) + "\n")
    else:
        console.print(ab_table(run.pairs, title, threshold,
                               (run.meta.get("ab") or {}).get("own_thresholds")))
    if request.markdown is not None and request.markdown != STDOUT:
        _write_markdown(request.markdown, ab_markdown(run.pairs, title, family) + "\n")
    reasons = gate_reasons(list(run.pairs)) if request.fail_on_regression else []
    for reason in reasons:  # names from the record: shown safely
        sys.stderr.write(safe_text.terminal(reason) + "\n")
    return errors.EXIT_REGRESSION if reasons else errors.EXIT_OK


def _incomplete_runs(*runs: tuple[str, Path, RunDocument]) -> list[str]:
    """A line per run marked incomplete (records/completeness.py)."""
    return [f"{role} run {folder} is incomplete: {run.incomplete}"
            for role, folder, run in runs if run.incomplete]


def _differences(base: RunDocument, new: RunDocument) -> str:
    return what_differs((r.key for r in base.results), (r.key for r in new.results))


def _show(request: CompareRequest, result: RunComparison, base_name: str, new_name: str,
          console: Console) -> None:
    """stdout: the JSON, the markdown (`--markdown -`) or the table; `--markdown FILE`
    writes the markdown there and leaves stdout as it is."""
    if request.as_json:
        document = {"base": base_name, "new": new_name, **result.to_dict()}
        sys.stdout.write(strict_dumps(document) + "\n")
    elif request.markdown == STDOUT:
        sys.stdout.write(compare_markdown(result, base_name, new_name))
    else:
        console.print(compare_table(result, base_name, new_name, width=console.width))
    if request.markdown is not None and request.markdown != STDOUT:
        _write_markdown(request.markdown, compare_markdown(result, base_name, new_name))


def _write_markdown(path: Path, text: str) -> None:
    try:
        # a file to share (a PR comment): 0644, not the temporary file's mode; a device or
        # a FIFO named here is written through, its own mode kept (files.write_output)
        write_output(path, text, mode=0o644)
    except OSError as exc:
        raise errors.OutputError(f"cannot write the markdown to {path}: "
                                 f"{exc.strerror or exc}") from None


def gate(result: RunComparison, problems: list[str] | None = None) -> int:
    """`--fail-on-regression`: EXIT_REGRESSION with a line on stderr per reason, or
    EXIT_OK. No verdict is not a pass: a gate that compared nothing has vouched for nothing.
    `problems`: further reasons found by the caller (an incomplete NEW run)."""
    reasons = list(problems or [])
    regressions = result.regressions()
    if regressions:
        names = ", ".join(p.key.text() + (f" ({p.note})" if p.status_verdict else "")
                          for p in regressions)
        reasons.append(f"regression: {counts_text(result)}: {names}")
    if result.missing_in_new:
        missing = result.missing_in_new
        named = ", ".join(missing[:GATE_NAMED]) + (", ..." if len(missing) > GATE_NAMED else "")
        reasons.append(f"{len(missing)} points of BASE missing in NEW (not measured there: "
                       f"a NEW run stopped early, or a narrower one): {named}")
    if not regressions and not result.compared():
        reasons.append(f"no point compared for speed: {counts_text(result)}")
    for reason in reasons:
        sys.stderr.write(reason + "\n")
    # one rule with the summary line's 'regression: yes' (RunComparison.fails_gate)
    return errors.EXIT_REGRESSION if problems or result.fails_gate() else errors.EXIT_OK
