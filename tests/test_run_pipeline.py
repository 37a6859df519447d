"""The run pipeline's parts without a worker: extras and their registry (records/extras.py,
records/features/), the pass list (run/pipeline.py) and the runner's events."""

import json
from pathlib import Path

from gpubench.analysis.comparison import compare_results
from gpubench.families.spec import Machine
from gpubench.records import events as E
from gpubench.records import result as R
from gpubench.records.extras import Column, ExtraSpec
from gpubench.records.features import EXTRAS, SPECS
from gpubench.records.features.vs_baseline import VS_BASELINE
from gpubench.records.point import PointKey
from gpubench.records.shape import Shape
from gpubench.report.table import COLUMNS, DROP_ORDER, group_markdown, table_layout
from gpubench.run.pipeline import Pipeline, RunContext
from gpubench.run.stream import EventStream
from gpubench.timing.measurement import Measurement


def result(variant="cuda", samples=(1e-3,) * 10, status=R.OK):
    key = PointKey("square", variant, "float32", Shape({"n": 1024}), "cold")
    return R.Result(key=key, kind="cuda", status=status,
                    measurement=Measurement("cold", "m", list(samples), stop_reason="converged"))


def test_registered_extras_own_their_columns_in_csv_order():
    record = result().to_record()
    columns = list(record)
    # The extras' columns sit between span_s and warnings, in registry order.
    extra_columns = [c.name for spec in EXTRAS for c in spec.columns]
    start = columns.index("span_s") + 1
    assert columns[start:start + len(extra_columns)] == extra_columns
    assert columns[start + len(extra_columns)] == "warnings"
    assert {"ncu_s", "vs_ncu", "sanitizer_findings"} <= set(extra_columns)
    assert set(extra_columns) <= R.RESERVED_COLUMNS


def test_an_extra_round_trips_through_results_json_and_old_keys_load():
    mark = {"tool": "memcheck", "findings": 2, "error": None, "rows": []}
    row = result().with_derived(sanitizer=mark, ncu={"duration_ns": 5})
    assert set(row.extras) == {"sanitizer", "ncu"} and row.extras["sanitizer"].spec is SPECS[
        "sanitizer"]
    data = json.loads(json.dumps(row.to_dict()))
    assert data["sanitizer"] == mark and data["ncu_check"] is None  # every saved key, always
    assert "vs_baseline" not in data  # not saved: recomputed by `gpubench compare`
    back = R.Result.from_dict(data)
    assert back.sanitizer == mark and back.ncu == {"duration_ns": 5} and back.ncu_check is None
    assert back.to_record()["sanitizer_findings"] == 2
    assert row.with_derived(sanitizer=None).extras.keys() == {"ncu"}  # None removes it


def test_the_baseline_column_shows_the_verdicts_the_rows_carry():
    base, new = result(samples=(1e-3,) * 10), result(samples=(2e-3,) * 10)
    compared = new.with_extra(VS_BASELINE, compare_results(base, new))
    assert "vs --baseline" not in group_markdown([new])
    table = group_markdown([compared])
    assert "vs --baseline" in table and "SLOWER" in table
    headers, _, caption = table_layout([compared], baseline_column=False)  # the HTML page
    assert "vs --baseline" not in headers and "--baseline run" not in caption


def test_markdown_says_why_a_row_is_suspect_or_failed():
    cheat = result("cached").with_derived(status=R.SUSPECT, error="0.0 ns: faster than any "
                                                                  "launch")
    table = group_markdown([result("torch"), cheat, result("wrong", status=R.CRASHED)])
    row = next(line for line in table.splitlines() if line.startswith("| cached |"))
    cells = [cell.strip() for cell in row.strip("|").split("|")]
    assert cells[2] == "SUSPECT" and cells[3] != "-"  # its figures show why
    assert cells[10] == "-"  # never a speedup
    assert table.endswith("\n- cached: SUSPECT: 0.0 ns: faster than any launch\n"
                          "- wrong: CRASHED: -\n")
    assert "\n- " not in group_markdown([result("torch")])


def test_table_columns_of_extras_go_where_their_spec_says():
    headers = [h for h, _ in COLUMNS]
    assert headers.index("vs ncu") == headers.index("vs --baseline") + 1
    assert DROP_ORDER.index("vs ncu") == DROP_ORDER.index("±CI") + 1
    plain = group_markdown([result()])
    assert "vs ncu" not in plain and "*" not in plain.splitlines()[4]
    checked = result().with_derived(ncu_check={"deviation": 0.061, "within": False},
                                    sanitizer={"findings": 1, "rows": [], "error": None})
    table = group_markdown([checked])
    assert "| +6.1% ! |" in table and "PASS*" in table and "memcheck (--sanitize)" in table


class Doubling:
    """A pass that marks every result, to see the order and the stages."""

    def __init__(self, name, after_table=False, wanted=True):
        self.name, self.after_table, self.wanted, self.seen = name, after_table, wanted, []

    def enabled(self, request):
        return self.wanted

    def before_run(self, ctx):
        ctx.say(f"{self.name} before the run")

    def apply(self, group, ctx):
        self.seen.append(len(group))
        return [r.with_derived(error=(r.error or "") + self.name) for r in group]


def test_pipeline_applies_enabled_passes_in_order_and_by_stage():
    ctx, said = context()
    passes = [Doubling("a"), Doubling("b", after_table=True), Doubling("c"),
              Doubling("off", wanted=False)]
    pipeline = Pipeline.of([lambda p=p: p for p in passes], None, ctx)
    assert [p.name for p in pipeline.passes] == ["a", "b", "c"]
    pipeline.before_run()
    assert said == [E.Message("a before the run"), E.Message("b before the run"),
                    E.Message("c before the run")]
    shown = pipeline.before_table([result()])
    assert shown[0].error == "ac"
    assert pipeline.after_table(shown)[0].error == "acb"
    assert passes[3].seen == []


def test_a_computed_column_spec_reads_the_result():
    spec = ExtraSpec("demo", columns=(Column("n_samples", lambda r: len(r.samples_s)),),
                     saved=False)
    assert spec.columns[0].read(result()) == 10


def test_p95_is_a_results_column_of_its_own_module():
    row = result(samples=[i * 1e-6 for i in range(1, 101)])
    record = row.to_record()
    assert abs(record["p95_s"] - 95.05e-6) < 1e-12  # numpy 'linear' on 1..100 us
    assert abs(record["p99_s"] - 99.01e-6) < 1e-12
    assert "p99_s" in R.RESERVED_COLUMNS and row.to_dict()["p99_s"] == record["p99_s"]
    assert "p95_s" in R.RESERVED_COLUMNS and row.to_dict()["p95_s"] == record["p95_s"]
    assert result(status=R.NOT_RUN, samples=()).to_record()["p95_s"] is None
    assert result(status=R.NOT_RUN, samples=()).to_record()["p99_s"] is None


def context() -> tuple[RunContext, list]:
    """A pass's context, and the list of what its passes said (the stream's Messages)."""
    stream, said = EventStream(), []
    stream.subscribe(said.append)
    machine = Machine(has_cuda=True, has_triton=True)
    return RunContext(machine, Path("."), [], {}, stream=stream), said


def options(**chosen):
    """The run options a pass reads in `enabled` (RunRequest's flags)."""
    from types import SimpleNamespace

    return SimpleNamespace(**{"ncu": False, "ncu_check": False, "sanitize": False,
                              "baseline": None, **chosen})


def test_gpu_passes_turn_tool_problems_into_messages(monkeypatch):
    from gpubench import errors
    from gpubench.tools.ncu import run_pass

    def no_ncu(*args, **kwargs):
        raise errors.ToolMissing("ncu not found")

    monkeypatch.setattr(run_pass, "check_group", no_ncu)
    monkeypatch.setattr(run_pass, "profile_points", no_ncu)
    ctx, said = context()
    group = [result()]
    check, summary = run_pass.NcuCheck(), run_pass.NcuSummary()
    chosen = options(ncu=True, ncu_check=True)
    assert check.enabled(chosen) and summary.enabled(chosen)
    assert not check.enabled(options()) and not summary.enabled(options())
    assert check.apply(group, ctx) == group and summary.apply(group, ctx) == group
    assert said == [E.Message("  --ncu-check: ncu not found", soft_wrap=True),
                    E.Message("  --ncu: ncu not found", soft_wrap=True)]


def test_sanitize_pass_marks_each_row_of_its_variant():
    from gpubench.tools.sanitizer.run_pass import SanitizeMarks

    marks = SanitizeMarks()
    marks.marks[("square", "cuda")] = {"tool": "memcheck", "findings": 1, "error": None,
                                       "rows": [{"kind": "oob", "kernel": "k", "count": 1,
                                                 "where": "a.cu:3"}]}
    cuda, torch = marks.apply([result("cuda"), result("torch")], context()[0])
    assert cuda.sanitizer["findings"] == 1 and cuda.warnings[0].code == "sanitizer"
    assert torch.sanitizer is None and torch.warnings == ()
