"""Inputs that went wrong without a word, or with the wrong one (issue 61): an index of runs
that is a folder, a variant whose output requires grad, an A/B run stopped by a signal."""

from __future__ import annotations

import shutil

from gpubench.store.folder import RunFolder, read_run
from tests.conftest import FAST, FIXTURES, run_index_for


def test_an_index_that_is_a_folder_is_said_and_the_results_kept(tmp_path, monkeypatch, capsys):
    index = tmp_path / "runs.json"
    index.mkdir()
    monkeypatch.setenv("GPUBENCH_RUN_INDEX", str(index))
    document = read_run(FIXTURES / "compare" / "h200-processes" / "run1")
    folder = RunFolder(tmp_path / "run").claim()
    try:
        assert folder.save(document)
    finally:
        folder.release()
    warning = capsys.readouterr().err
    assert "not recorded in the index of runs" in warning and "runs.json" in warning
    assert (tmp_path / "run" / "results.json").is_file() and folder.problem is None


def test_a_run_with_an_index_folder_says_so_end_to_end(gpubench, tmp_path):
    index = run_index_for(tmp_path)
    shutil.rmtree(index, ignore_errors=True)
    index.mkdir()
    done = gpubench("run", "square", "--variants", "torch", "--sizes", "1024", *FAST)
    assert done.code == 0, done.output
    assert "not recorded in the index of runs" in done.output
    assert done.by_variant()["torch"]["status"] == "ok"


GRAD_SPEC = '''
import torch

from gpubench import Family, TorchVariant

family = Family(
    reference=lambda a, b: a @ b,
    make_inputs=lambda n, dtype, device: (torch.randn(n, n, device=device, dtype=dtype),
                                          torch.randn(n, n, device=device, dtype=dtype)),
    flops=lambda n: 2 * n ** 3,
    bytes_moved=lambda n, itemsize: 3 * n * n * itemsize,
    sizes=(64,),
    variants=(
        TorchVariant("torch", fn=lambda a, b: a @ b, baseline=True),
        TorchVariant("grad", fn=lambda a, b: (a @ b).requires_grad_()),
    ),
)
'''
GRAD_REASON = ("returned a tensor that requires grad: return a plain tensor (detach, or run "
               "under torch.no_grad())")


def test_an_output_that_requires_grad_is_named_not_an_in_place_error():
    import torch

    from gpubench.run.worker.invocation import Invocation

    a, b = torch.randn(8, 8), torch.randn(8, 8)
    leaf = Invocation(lambda a, b: (a @ b).requires_grad_(), None)
    assert leaf.problem(leaf((a, b), torch.empty(8, 8)), torch.empty(8, 8), torch) == GRAD_REASON
    # the result of autograd ops takes in-place writes: an output as any (issue 52)
    weighted = Invocation(lambda a, b: (a @ b) * torch.ones(8, 8, requires_grad=True), None)
    assert weighted.problem(weighted((a, b), torch.empty(8, 8)), torch.empty(8, 8), torch) is None


def test_a_variant_returning_a_grad_tensor_errors_with_the_reason(gpubench, tmp_path):
    (tmp_path / "kernels" / "gradmm").mkdir(parents=True)
    (tmp_path / "kernels" / "gradmm" / "spec.py").write_text(GRAD_SPEC)
    done = gpubench("run", "gradmm", "--kernels-dir", str(tmp_path / "kernels"),
                    "--device", "cpu", *FAST)
    rows = done.by_variant()
    assert rows["torch"]["status"] == "ok", done.output
    assert rows["grad"]["status"] == "error" and GRAD_REASON in rows["grad"]["error"]
    assert "in-place operation" not in done.output


def test_pairs_ab_never_ran_read_not_run_not_failed():
    """A stopped `ab` leaves its later points untried: NOT RUN, as `run` names them, and no
    regression; a point the worker failed is still FAILED."""
    from gpubench.analysis.ab import FAILED, NOT_RUN, regressions
    from gpubench.records.result import CRASHED
    from gpubench.run.ab.rows import pair_verdicts
    from gpubench.run.lanes.lane import Outcome
    from gpubench.run.plan import Point
    from gpubench.timing.settings import TimingSettings
    from tests.test_shapes_and_records import gemm_family

    family = gemm_family(directory=None)
    shape = family.shape_of({"M": 2, "N": 3, "K": 4})
    points = [Point(family, family.variants[0], shape, dtype, seed=1)
              for dtype in ("float32", "float16")]
    outcomes = [Outcome(failure=CRASHED, error="worker died"), None]
    _, verdicts = pair_verdicts(points, outcomes, TimingSettings(modes=("wall",)),
                                {"cpu": "x"}, set(), 0.005)
    assert [v.verdict for v in verdicts] == [FAILED, NOT_RUN]
    assert verdicts[1].reason == "ab was interrupted"
    assert regressions(verdicts) == [verdicts[0]]
