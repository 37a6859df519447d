"""Spec code that runs in gpubench's own process must not end a run "successfully": a
fault matrix through the real CLI (issue 26, group 1). A broken cost model is an ERROR
of its points alone; a spec raising KeyboardInterrupt at import is a broken spec, not a
Ctrl-C; a gpubench ended early by a spec's thread leaves a folder marked incomplete,
which `report` shows and `compare --fail-on-regression` refuses."""

import json
import math
from pathlib import Path

import pytest

from conftest import FAST, REPO, TEST_KERNELS
from gpubench.families.cost import cost_of
from gpubench.families.discovery import load_family
from gpubench.records.shape import make_shape

BAD_SPECS = REPO / "tests" / "badspecs"
EXIT_SPECS = REPO / "tests" / "exitspecs"


def statuses(run_dir: Path) -> dict[tuple[str, int], dict]:
    document = json.loads((run_dir / "results.json").read_text())
    return {(r["variant"], r["shape"]["n"]): r for r in document["results"]}


# ---------------------------------------------------------------- the cost model


def test_a_broken_cost_model_is_an_error_of_its_points_alone(gpubench):
    done = gpubench("run", "badcost", "--kernels-dir", str(TEST_KERNELS), *FAST,
                    "--out", "run")
    assert done.code == 1, done.output
    assert "Traceback" not in done.output
    rows = statuses(done.cwd / "run")
    assert len(rows) == 10  # every planned point has a status
    reasons = {128: "bytes_moved(n=128) raised ValueError: no cost model for n=128",
               256: "flops(n=256) returned 'lots' (a str), not a number",
               512: "flops(n=512) returned nan",
               1024: "bytes_moved(n=1024) returned -8192.0"}
    for variant in ("torch", "add"):
        assert rows[(variant, 64)]["status"] == "ok", rows[(variant, 64)]
        for n, reason in reasons.items():
            row = rows[(variant, n)]
            assert row["status"] == "error" and reason in row["error"], row
            assert row["flops"] is None and row["bytes_moved"] is None  # no number shown
    assert "spec.py line 20" in rows[("torch", 128)]["error"]
    meta = json.loads((done.cwd / "run" / "results.json").read_text())["meta"]
    assert meta.get("finished") and "incomplete" not in meta


@pytest.mark.parametrize("flops, reason", [
    (lambda n: float("inf"), "returned inf"),
    (lambda n: -1, "returned -1.0"),
    (lambda n: True, "returned True (a bool), not a number"),
    (lambda n: None, "returned None (a NoneType), not a number"),
    (lambda n: [n], "returned [64] (a list), not a number"),
    (lambda n: exec("raise SystemExit(3)"), "raised SystemExit: 3"),
    (lambda n: exec("raise KeyboardInterrupt"), "raised KeyboardInterrupt"),
])
def test_cost_of_contains_every_fault(flops, reason):
    family = load_family("badcost", TEST_KERNELS / "badcost")
    object.__setattr__(family, "flops", flops)
    cost = cost_of(family, make_shape("badcost", family.axes, {"n": 64}), 4)
    assert cost.flops is None and reason in cost.error, cost


def test_cost_of_takes_numbers_of_any_kind():
    import numpy as np
    import torch

    family = load_family("badcost", TEST_KERNELS / "badcost")
    shape = make_shape("badcost", family.axes, {"n": 64})
    for value in (np.float32(3), torch.tensor(3.0), 3, 3.0):
        object.__setattr__(family, "flops", lambda n, v=value: v)
        cost = cost_of(family, shape, 4)
        assert cost.error is None and math.isclose(cost.flops, 3.0), cost


# ---------------------------------------------------------------- KeyboardInterrupt at import


@pytest.mark.parametrize("command", [["run", "interrupts"], ["list"]])
def test_keyboard_interrupt_at_import_is_a_spec_error_not_a_ctrl_c(gpubench, command):
    done = gpubench(*command, "--kernels-dir", str(BAD_SPECS),
                    env={"GPUBENCH_SPEC_TIMEOUT_S": "2"})
    assert done.code == 4, done.output
    flat = " ".join(done.output.replace("│", " ").split())  # `list` wraps table cells
    assert "interrupts/spec.py" in flat and "KeyboardInterrupt raised while being" in flat
    assert "interrupted" not in done.output and "Traceback" not in done.output


# ---------------------------------------------------------------- a gpubench ended early


@pytest.mark.slow
def test_a_run_ended_by_a_spec_thread_is_marked_incomplete(gpubench):
    quiet = {"GPUBENCH_TEST_EXIT_AFTER_S": "600"}
    base = gpubench("run", "exits_later", "--kernels-dir", str(EXIT_SPECS), *FAST,
                    "--out", "base", env=quiet)
    assert base.code == 0, base.output
    new_dir = base.cwd / "new"
    # the spec's thread calls os._exit(0) right after the first point is saved: refused,
    # the thread ends and the run goes on to the end
    refused = gpubench("run", "exits_later", "--kernels-dir", str(EXIT_SPECS), *FAST,
                       "--out", "refused", env={**quiet, "GPUBENCH_TEST_EXIT_WHEN":
                                                str(base.cwd / "refused" / "results.json")})
    assert refused.code == 0, refused.output
    assert "spec code called os._exit(0)" in refused.output and "refused" in refused.output
    assert {r["status"] for r in statuses(base.cwd / "refused").values()} == {"ok"}
    # ... but a SIGKILL it sends itself ends gpubench at once: the folder says incomplete
    ended = gpubench("run", "exits_later", "--kernels-dir", str(EXIT_SPECS), *FAST,
                     "--out", "new", env={**quiet, "GPUBENCH_TEST_EXIT_HOW": "kill",
                                          "GPUBENCH_TEST_EXIT_WHEN": str(new_dir / "results.json")})
    document = json.loads((new_dir / "results.json").read_text())
    assert "finished" not in document["meta"], ended.output
    assert document["meta"]["incomplete"].startswith("5 of 6 planned results had no status")
    rows = statuses(new_dir)
    assert len(rows) == 6 and rows[("torch", 64)]["status"] == "ok"
    assert [r["status"] for k, r in rows.items() if k != ("torch", 64)] == ["not_run"] * 5
    report = gpubench("report", "new", "--markdown")
    assert report.code == 0 and "**Incomplete run:** 5 of 6" in report.stdout
    assert "warning: run new is incomplete" in report.stderr
    gate = gpubench("compare", "base", "new", "--fail-on-regression")
    assert gate.code == 13, gate.output
    assert "NEW run new is incomplete" in gate.stderr
    assert "5 points of BASE missing in NEW" in gate.stderr
    plain = gpubench("compare", "base", "new")
    assert plain.code == 0 and "warning: NEW run new is incomplete" in plain.stderr


def test_a_final_document_with_points_lacking_a_status_is_not_finished(tmp_path):
    """A lane that died leaves planned points without a status: the final document lists
    them NOT_RUN, has no `finished`, and is marked incomplete (run exits 1 then)."""
    from gpubench.families import compiled
    from gpubench.families.spec import Machine
    from gpubench.records import events as E
    from gpubench.run.plan import plan_points
    from gpubench.store.folder import RunFolder
    from gpubench.store.run_saver import RunSaver
    from gpubench.timing.settings import TimingSettings
    from gpubench.timing.timers import modes_for_device

    with compiled.run_settings("off"):  # the family's own variants only
        family = load_family("badcost", TEST_KERNELS / "badcost")
    points = plan_points([family], Machine(has_cuda=False, has_triton=False,
                                           device_name="cpu"))
    modes = modes_for_device(TimingSettings().modes, "cpu")
    saver = RunSaver(RunFolder(tmp_path / "run"), {"run_id": "x"}, points, modes)
    saver(E.PointDone([points[0].result(mode, "ok") for mode in modes]))
    final = saver.document(final=True)
    assert "finished" not in final.meta and final.incomplete.startswith("9 of 10 planned")
    assert [r.status for r in final.results].count("not_run") == 9
    for point in points[1:]:
        saver(E.PointDone([point.result(mode, "ok") for mode in modes]))
    complete = saver.document(final=True)
    assert complete.incomplete is None and complete.meta["finished"]
    assert saver.document().incomplete is None  # nothing left to run: not incomplete


SPEC_BODY = '''
import torch
from gpubench import Family, TorchVariant

family = Family(
    reference=lambda x: x * x,
    make_inputs=lambda n, dtype, device: (torch.randn(n, dtype=dtype, device=device),),
    flops=lambda n: n, bytes_moved=lambda n, itemsize: 2 * n * itemsize,
    sizes=(1024,), cpu_sizes=(1024,),
    variants=(TorchVariant("torch", fn=lambda x, out: torch.square(x, out=out),
                           baseline=True),),
)
'''


def test_a_spec_that_changes_directory_at_import_leaves_results_where_asked(gpubench, tmp_path):
    """Issue 52: a spec that chdir()s at import moved a relative --out elsewhere ('/run'),
    while the run said it saved to 'run/'."""
    (tmp_path / "k" / "moves").mkdir(parents=True)
    (tmp_path / "k" / "moves" / "spec.py").write_text(
        f"import os\nos.chdir({str(tmp_path / 'k')!r})\n" + SPEC_BODY)
    done = gpubench("run", "moves", "--kernels-dir", str(tmp_path / "k"), *FAST, "--out", "run")
    assert done.code == 0, done.output
    assert (done.cwd / "run" / "results.json").is_file()
    assert not (tmp_path / "k" / "run").exists()


def test_a_spec_that_forks_at_import_is_refused_and_its_copy_ends(gpubench, tmp_path):
    """Issue 52: a spec that forked at import left a copy of gpubench running on from the
    import, and was reported as the worker's fault."""
    (tmp_path / "k" / "forks").mkdir(parents=True)
    marker = tmp_path / "copy-ran-on"
    (tmp_path / "k" / "forks" / "spec.py").write_text(
        "import os\nos.fork()\n" + SPEC_BODY +
        f"\nimport atexit\natexit.register(lambda: open({str(marker)!r}, 'a')"
        ".write(f'{os.getpid()}\\n'))\n")
    done = gpubench("run", "forks", "--kernels-dir", str(tmp_path / "k"), *FAST)
    assert done.code != 0 and "Traceback" not in done.output
    assert "forked the process (os.fork) while being imported" in done.output
    # gpubench exits normally (one line); no copy went on to run gpubench's code and exit
    assert len(marker.read_text().split()) == 1
