"""Variants declared the way load_inline is called, and variants that return their output
(GPU MODE lecture 1's code, pasted as is)."""

import json
from types import SimpleNamespace

import pytest
import torch

from conftest import FAST, REPO, TEST_KERNELS
from gpubench.errors import SpecError
from gpubench.families.calling import returns_output
from gpubench.families.sources import _files_and_texts
from gpubench.families.spec import CudaVariant, Machine

GPU = Machine(has_cuda=True, has_triton=True, device_name="gpu")
CPU = Machine(has_cuda=False, has_triton=True)
LECTURE = REPO / "examples" / "gpu_mode_lecture1"


# ---------------------------------------------------------------- how a callable is called


def pybind(doc: str):
    """What a pybind11 function looks like to Python: a builtin with its C++ signature
    on the first line of its docstring."""
    return SimpleNamespace(__doc__=doc, __call__=None)


@pytest.mark.parametrize("fn, inputs, expected", [
    (lambda x, out: None, 1, False),
    (lambda x: x, 1, True),
    (lambda a, b: a, 2, True),
    (lambda a, b, out=None: a, 2, False),  # accepts out: destination-passing
    (lambda *args: None, 1, False),  # takes anything: the convention
    (pybind("square_matrix(arg0: torch.Tensor) -> torch.Tensor\n"), 1, True),
    (pybind("square(arg0: torch.Tensor, arg1: torch.Tensor) -> None\n"), 1, False),
    (pybind("f(arg0: List[int], arg1: torch.Tensor) -> torch.Tensor"), 2, True),
    (pybind("no signature here"), 1, False),
    (torch.square, 1, True),  # square(input, *, out=None) -> Tensor: out is keyword-only
    (torch.mul, 2, True),
])
def test_the_calling_convention_is_read_from_the_callable(fn, inputs, expected):
    assert returns_output(fn, inputs) is expected


def test_a_declared_convention_wins():
    assert returns_output(lambda x, out: None, 1, declared=True) is True
    assert returns_output(lambda x: x, 1, declared=False) is False


# ---------------------------------------------------------------- the load_inline style


def test_a_load_inline_style_variant_takes_load_inlines_parameters():
    variant = CudaVariant("lecture", cpp_sources="torch::Tensor f(torch::Tensor m);",
                          cuda_sources="__global__ void k() {}", functions=["f"],
                          extra_cuda_cflags=["-O2"], extra_cflags="-O1")
    assert variant.inline and variant.function == "f"
    assert variant.cuda_flags == ("-O2",) and variant.cflags == ("-O1",)
    assert variant.unavailable_reason("float32", GPU) is None
    assert "needs a CUDA GPU" in variant.unavailable_reason("float32", CPU)
    cpu_only = CudaVariant("cpu", cpp_sources="torch::Tensor f(torch::Tensor m) {...}",
                           functions=("f",))
    assert cpu_only.unavailable_reason("float32", CPU) is None
    assert "CPU-only" in cpu_only.unavailable_reason("float32", GPU)


@pytest.mark.parametrize("kwargs, message", [
    ({"cpp_sources": "x", "functions": ["f", "g"]}, "exports 2 functions"),
    ({"cpp_sources": "x", "cuda": ("a.cu",), "function": "f"}, "not both"),
    ({"cpp_sources": ("x", 3), "function": "f"}, "not int"),
])
def test_load_inline_style_mistakes_are_spec_errors(kwargs, message):
    with pytest.raises(SpecError, match=message):
        CudaVariant("v", **kwargs)


def test_entries_are_files_when_they_name_one_in_the_family_folder(tmp_path):
    (tmp_path / "kernel.cu").write_text("// a file\n")
    files, texts = _files_and_texts(tmp_path, ("kernel.cu", "__global__ void k() {}",
                                               "missing.cu"), "cuda_sources")
    assert files == ("kernel.cu",)
    assert texts == ((f"{tmp_path.name}/spec.py: cuda_sources[1]", "__global__ void k() {}"),
                     (f"{tmp_path.name}/spec.py: cuda_sources[2]", "missing.cu"))


# ---------------------------------------------------------------- end to end on the CPU


@pytest.mark.slow
def test_returning_variants_of_every_kind_pass_on_the_cpu(gpubench):
    done = gpubench("run", "returning", "--kernels-dir", str(TEST_KERNELS), "--device", "cpu",
                    *FAST)
    assert done.code == 1, done.output  # wrong_dtype fails, the others pass
    rows = done.by_variant()
    assert {v: r["status"] for v, r in rows.items()} == {
        "torch": "ok", "into_out": "ok", "triton": "ok", "inline_cpp": "ok",
        "requires_grad": "ok", "wrong_dtype": "error"}
    assert "returned a float64 tensor on cpu; expected float32 on cpu" in \
        rows["wrong_dtype"]["error"]
    allocates = {v for v, r in rows.items() if (r.get("build") or {}).get("allocates_output")}
    assert allocates == {"torch", "triton", "inline_cpp", "requires_grad"}
    assert "inline_cpp (alloc)" in done.stdout and "into_out (alloc)" not in done.stdout
    assert rows["inline_cpp"]["build"]["cached"] is False or rows["inline_cpp"]["build"]


@pytest.mark.slow
def test_the_lecture_example_lists_and_skips_its_cuda_variant_without_a_gpu(gpubench):
    done = gpubench("run", "square_matrix", "--kernels-dir", str(LECTURE), "--device", "cpu",
                    *FAST)
    assert done.code == 0, done.output
    rows = done.by_variant()
    assert rows["torch"]["status"] == "ok"
    assert rows["lecture1"]["status"] == "skipped"
    assert "needs a CUDA GPU (it has cuda_sources)" in rows["lecture1"]["error"]


@pytest.mark.gpu
@pytest.mark.slow
def test_the_lecture_1_code_pasted_as_is_runs_and_passes_on_the_gpu(gpubench):
    done = gpubench("run", "square_matrix", "--kernels-dir", str(LECTURE), "--json")
    assert done.code == 0, done.output
    rows = {r["variant"]: r for r in json.loads(done.stdout)["results"]}
    assert rows["lecture1"]["status"] == "ok" and rows["lecture1"]["build"]["allocates_output"]
    assert rows["torch"]["status"] == "ok"
