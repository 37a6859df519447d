"""`gpubench eject`: Inductor's Triton for a reference, rewritten into a plain Triton variant.

On CPU, Inductor is asked for Triton code for an sm_90 target without running it
(tools/inductor_capture.py); the written module must then PASS in the Triton interpreter.
Each test compiles one tiny graph (a few seconds on 2 cores)."""

import os
import subprocess
import sys

import pytest
import torch

from conftest import FAST
from gpubench.families.eject_source import NothingToEject, refusal, write_module

pytest.importorskip("triton")
capture = pytest.importorskip("gpubench.tools.inductor_capture").capture


def _written(x):
    captured = capture(lambda t: torch.softmax(t, dim=-1), (x,), "default")
    return write_module(captured.code, captured.configs, function="softmax", family="softmax",
                        shape={"rows": x.shape[0], "cols": x.shape[1]}, dtype="float32",
                        mode="default", device="cpu", torch_version=torch.__version__,
                        triton_version="test")


def test_softmax_ejects_to_plain_triton_that_passes_in_the_interpreter(tmp_path):
    x = torch.randn(16, 1001)
    written = _written(x)
    assert "torch._inductor" not in written.text and written.inductor_helpers == ()
    path = tmp_path / "ejected_softmax_triton.py"
    path.write_text(written.text)
    # In a child process, as gpubench's worker: Triton reads TRITON_INTERPRET at import.
    check = f"""
import importlib.util, torch
spec = importlib.util.spec_from_file_location("ejected", {str(path)!r})
module = importlib.util.module_from_spec(spec); spec.loader.exec_module(module)
x = torch.randn(16, 1001); out = torch.empty_like(x)
module.softmax(x, out)
torch.testing.assert_close(out, torch.softmax(x, dim=-1))
try:
    module.softmax(torch.randn(8, 8), torch.empty(8, 8))
except ValueError as exc:
    assert "ejected for rows=16, cols=1001 only" in str(exc)
print("ok")
"""
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    done = subprocess.run([sys.executable, "-c", check], env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.stdout.strip() == "ok", done.stderr[-2000:]


def test_matmul_is_refused_naming_the_extern_call():
    a, b = torch.randn(8, 8), torch.randn(8, 8)
    captured = capture(lambda p, q: p @ q, (a, b), "default")
    assert "extern_kernels.mm" in refusal(captured.code)
    with pytest.raises(NothingToEject, match="cuBLAS"):
        write_module(captured.code, captured.configs, function="matmul", family="matmul",
                     shape={"M": 8}, dtype="float32", mode="default", device="cpu",
                     torch_version="", triton_version="")


def test_eject_of_a_one_axis_family_writes_a_spec_block_that_keeps_it_one(gpubench, tmp_path):
    """square declares no `axes` (its callables take the plain int): the spec block adds the
    variant with Family.with_variants, which keeps it so (dataclasses.replace did not, and
    every callable then got a Shape). The ejected kernel runs once and PASSes."""
    import shutil

    from conftest import REPO

    folder = tmp_path / "mine" / "square"
    shutil.copytree(REPO / "kernels" / "square", folder)
    done = gpubench("eject", "square", "--kernels-dir", str(folder.parent), "--size", "1024",
                    timeout=900)
    assert done.code == 0, done.output
    assert "family = family.with_variants(_EjectedTriton(" in (folder / "spec.py").read_text()
    rows = done.by_variant()
    assert rows["compiled_1024_float32"]["status"] == "ok", rows["compiled_1024_float32"]
    assert "compiled" not in rows  # on a CPU the compiled original is not run beside it
    # Issue 52: at another shape or dtype the ejected kernel (compiled for one) is skipped,
    # saying why, and the family still runs (it ERRORed there, and the run exited 1).
    again = gpubench("run", "square", "--kernels-dir", str(folder.parent), "--sizes",
                     "1024,4096", "--dtype", "fp32,fp16", "--variants",
                     "torch,compiled_1024_float32", *FAST, timeout=900)
    assert again.code == 0, again.output
    ejected = [r for r in again.results()["results"] if r["variant"] == "compiled_1024_float32"]
    assert sorted(r["status"] for r in ejected) == ["ok", "skipped", "skipped", "skipped"]
    assert any(r["error"] == "runs at n=1024 only" for r in ejected)


def test_a_variant_declared_for_some_shapes_is_skipped_at_the_others():
    from gpubench import TorchVariant

    variant = TorchVariant("v", fn=lambda x, out: None, shapes=({"M": 8, "N": 4},))
    assert variant.shape_reason({"M": 8, "N": 4}) is None
    assert variant.shape_reason({"M": 16, "N": 4}) == "runs at M=8,N=4 only"
    assert TorchVariant("w", fn=lambda x, out: None).shape_reason({"M": 16}) is None


def test_the_launch_config_is_the_one_launcher_left_after_a_launch():
    """On a GPU eject reads each kernel's config off its autotuner right after a launch
    (inductor_capture._launches_seen): the one launcher left, else the one config given."""
    from types import SimpleNamespace

    import triton

    from gpubench.families.eject_source import LaunchConfig
    from gpubench.tools.inductor_capture import _chosen_config

    won = triton.Config({"XBLOCK": 8, "R0_BLOCK": 1024}, num_warps=8, num_stages=1)
    expected = LaunchConfig({"XBLOCK": 8, "R0_BLOCK": 1024}, 8, 1)
    assert _chosen_config(SimpleNamespace(launchers=[SimpleNamespace(config=won)])) == expected
    assert _chosen_config(SimpleNamespace(launchers=[], configs=[won])) == expected
    assert _chosen_config(SimpleNamespace(launchers=[], configs=[won, won])) is None


def test_a_folder_it_cannot_write_is_exit_12_with_nothing_half_added_or_left(gpubench,
                                                                              tmp_path):
    """Issue 52: eject into a folder it could not write gave a traceback and exit 1 (the
    guide says 12), and Inductor's warnings and temporary folders were left in its output
    and in /tmp."""
    import shutil

    from conftest import REPO

    folder = tmp_path / "mine" / "square"
    shutil.copytree(REPO / "kernels" / "square", folder)
    spec = (folder / "spec.py").read_text()
    (folder / "compiled_square_1024_float32_triton.py").mkdir()  # in the module's way
    cache = tmp_path / "cache"
    done = gpubench("eject", "square", "--kernels-dir", str(folder.parent), "--size", "1024",
                    "--no-run", timeout=900, env={"GPUBENCH_CACHE_DIR": str(cache)})
    assert done.code == 12, done.output
    assert "Traceback" not in done.output and "Warning" not in done.output
    assert "cannot write the ejected variant into" in done.output
    assert "Is a directory" in done.output and "nothing was added" in done.output
    assert (folder / "spec.py").read_text() == spec
    assert not list((cache / "inductor").glob("tmp*"))  # no temporary folder kept
