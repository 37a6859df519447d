"""`gpubench eject`: Inductor's Triton for a reference, rewritten into a plain Triton variant.

On CPU, Inductor is asked for Triton code for an sm_90 target without running it
(tools/inductor_capture.py); the written module must then PASS in the Triton interpreter.
Each test compiles one tiny graph (a few seconds on 2 cores)."""

import os
import subprocess
import sys

import pytest
import torch

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
