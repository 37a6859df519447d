"""`gpubench compare` as a CI gate: SUSPECT and failed points in NEW are regressions, runs
with nothing in common are a usage error that says what differs, BASE points missing in
NEW fail the gate, and `--markdown FILE` writes only markdown there."""

import json
from dataclasses import replace

from test_compare import noisy, result, run_of

from gpubench.analysis import comparison as C
from gpubench.analysis import status_change as S
from gpubench.analysis.run_overlap import what_differs
from gpubench.records.point import PointKey
from gpubench.records.result import CRASHED, NOT_RUN, SUSPECT
from gpubench.records.shape import Shape
from gpubench.report.compare_view import compare_markdown, summary_line
from gpubench.store.folder import save_run

CHEAT = "4034% of the measured roofline: faster than physics allows"


def suspect(variant: str, seed: int = 7, **kw):
    """A SUSPECT row as derive.beyond_physics leaves it: samples kept, reason in error."""
    return replace(result(variant, noisy(1e-7, seed=seed), **kw), status=SUSPECT, error=CHEAT)


def key(dtype="float32", n=1024, family="demo", variant="a", mode="cold") -> PointKey:
    return PointKey(family, variant, dtype, Shape({"n": n}), mode)


# ---------------------------------------------------------------- statuses


def test_pass_then_suspect_is_a_regression_with_its_reason():
    verdicts = C.compare_runs(run_of(result("a", noisy(1e-3)), result("b", noisy(1e-3))),
                              run_of(suspect("a"), result("b", noisy(1e-3, seed=2))))
    point = verdicts.by_key()["demo/a/float32/n=1024/cold"]
    assert point.comparison is None and point.verdict == S.BECAME_SUSPECT
    assert point.note == f"SUSPECT in NEW: {CHEAT}" and point.regressed
    assert [p.key.variant for p in verdicts.regressions()] == ["a"]
    assert summary_line(verdicts) == ("compare: 2 points: 0 FASTER, 0 SLOWER, 1 SAME, "
                                      "0 UNSURE, 1 SUSPECT; regression: yes")
    assert json.loads(json.dumps(verdicts.to_dict()))["points"][0]["verdict"] == "SUSPECT"
    markdown = compare_markdown(verdicts, "one", "two")
    assert f"| **SUSPECT** | SUSPECT in NEW: {CHEAT} |" in markdown
    assert "SUSPECT / FAILED: PASS in BASE" in markdown


def test_suspect_in_base_is_not_compared_for_speed_and_no_regression():
    for new in (result("a", noisy(1e-3)), suspect("a")):
        (point,) = C.compare_runs(run_of(suspect("a")), run_of(new)).points
        assert point.comparison is None and point.verdict == "-" and not point.regressed
        assert point.note.startswith(f"not compared for speed: SUSPECT in BASE ({CHEAT})")


def test_pass_then_failed_is_a_regression_too():
    crashed = result("a", (), status=CRASHED)
    (point,) = C.compare_runs(run_of(result("a", noisy(1e-3))), run_of(crashed)).points
    assert point.verdict == S.BECAME_FAILED and point.note == "CRASHED in NEW" and point.regressed


def test_points_base_measured_and_new_did_not_are_missing():
    base = run_of(result("a", noisy(1e-3)), result("b", noisy(1e-3)), result("c", noisy(1e-3)),
                  result("d", (), status="skipped"))
    new = run_of(result("a", noisy(1e-3, seed=2)), result("b", (), status=NOT_RUN))
    verdicts = C.compare_runs(base, new)
    assert verdicts.missing_in_new == ("demo/b/float32/n=1024/cold", "demo/c/float32/n=1024/cold")
    # what --fail-on-regression fails on, so the summary says so (it said "no", issue 52)
    assert summary_line(verdicts).endswith("; 2 of BASE missing in NEW; regression: yes")


# ---------------------------------------------------------------- what differs


def test_what_differs_names_the_axes_one_run_has_and_the_other_lacks():
    assert what_differs([key("float16")], [key("float32")]) == (
        "BASE has dtype float16, NEW has float32; families, shapes, modes match")
    assert what_differs([key(n=1), key("float16", n=2)], [key(n=2), key("float64", n=2)]) == (
        "dtype float16 only in BASE, float64 only in NEW; shape n=1 only in BASE; "
        "families, modes match")
    assert what_differs([key(variant="x")], [key(variant="y")]).startswith(
        "BASE has variant x, NEW has y; ")
    crossed = what_differs([key(n=1), key("float16", n=2)], [key(n=2), key("float16", n=1)])
    assert crossed.endswith("appears in both, but no combination of them does")
    assert what_differs([], [key()]) == "BASE has no results"
    many = what_differs([key(n=n) for n in range(1, 7)], [key(n=99)])
    assert "BASE has shape n=1 / n=2 / n=3 / n=4 +2 more, NEW has n=99" in many


# ---------------------------------------------------------------- the command


def test_cli_gate_on_suspect_missing_points_and_no_common_point(gpubench, tmp_path):
    base = run_of(result("a", noisy(1e-3)), result("b", noisy(1e-3)))
    save_run(base, tmp_path / "base")
    save_run(run_of(suspect("a"), result("b", noisy(1e-3, seed=3))), tmp_path / "cheat")
    save_run(run_of(result("a", noisy(1e-3, seed=4))), tmp_path / "killed")
    save_run(run_of(result("a", noisy(1e-3), n=2048)), tmp_path / "other")

    cheat = gpubench("compare", "base", "cheat", "--fail-on-regression")
    assert cheat.code == 13, cheat.output
    assert "SUSPECT" in cheat.stdout and "regression: 2 points: 0 FASTER" in cheat.stderr
    assert "1 SUSPECT: demo/a" in cheat.stderr
    assert f"demo/a/float32/n=1024/cold (SUSPECT in NEW: {CHEAT})" in cheat.stderr
    assert gpubench("compare", "base", "cheat").code == 0  # without the gate: shown only

    killed = gpubench("compare", "base", "killed", "--fail-on-regression")
    assert killed.code == 13, killed.output
    assert "1 points of BASE missing in NEW" in killed.stderr
    assert "regression: yes" in killed.stdout
    assert "demo/b/float32/n=1024/cold" in killed.stderr

    for gate in ((), ("--fail-on-regression",)):
        disjoint = gpubench("compare", "base", "other", *gate)
        assert disjoint.code == 2, disjoint.output
        assert "have no point in common: variant b only in BASE; BASE has shape n=1024, NEW " \
               "has n=2048; families, dtypes, modes match" in disjoint.stderr.replace("\n", " ")
        assert "Traceback" not in disjoint.output


def test_cli_gate_fails_when_no_point_got_a_speed_verdict(gpubench, tmp_path):
    save_run(run_of(result("a", (), status="fail")), tmp_path / "one")
    save_run(run_of(result("a", noisy(1e-3))), tmp_path / "two")
    gate = gpubench("compare", "one", "two", "--fail-on-regression")
    assert gate.code == 13 and ("no point compared for speed: 1 point: 0 FASTER, 0 SLOWER, "
                                "0 SAME, 0 UNSURE, 1 not compared") in gate.stderr


def test_cli_markdown_file_gets_only_markdown_and_stdout_keeps_the_table(gpubench, tmp_path):
    save_run(run_of(result("a", noisy(1e-3))), tmp_path / "one")
    save_run(run_of(result("a", noisy(2e-3, seed=5))), tmp_path / "two")
    done = gpubench("compare", "one", "two", "--markdown", "out/compare.md")
    assert done.code == 0, done.output
    text = (tmp_path / "out" / "compare.md").read_text()
    assert text.startswith("**gpubench compare** BASE") and "| **SLOWER** |" in text
    assert "┃" not in text and "│" not in text  # no rich table in the file
    assert "───" in done.stdout and "| variant |" not in done.stdout
    both = gpubench("compare", "one", "two", "--markdown", "m.md", "--json")
    assert both.code == 0 and json.loads(both.stdout)["counts"] == {"SLOWER": 1}
    assert (tmp_path / "m.md").read_text() == text
    dash = gpubench("compare", "one", "two", "--markdown", "-")
    assert dash.stdout.startswith("**gpubench compare**") and "│" not in dash.stdout
    clash = gpubench("compare", "one", "two", "--markdown", "-", "--json")
    assert clash.code == 2 and "choose one" in clash.stderr
    (tmp_path / "blocked").write_text("")
    unwritable = gpubench("compare", "one", "two", "--markdown", "blocked/m.md")
    assert unwritable.code == 12 and "cannot write the markdown" in unwritable.stderr
