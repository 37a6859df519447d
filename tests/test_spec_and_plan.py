"""Spec validation, discovery of shipped and user families, and which points run or skip."""

import shutil

import pytest
import torch

from conftest import TEST_KERNELS
from gpubench.errors import SpecError, UsageError
from gpubench.families.discovery import family_dirs, load_family, resolve_families
from gpubench.families.spec import CudaVariant, Family, Machine, TorchVariant, TritonVariant
from gpubench.records.shape import Shape, ShapeChoice
from gpubench.run.plan import group_seed, plan_points

CPU = Machine(has_cuda=False, has_triton=True)
GPU = Machine(has_cuda=True, has_triton=True)


def tiny_family(**changes) -> Family:
    base = dict(
        reference=lambda x: x, make_inputs=lambda n, d, dev: (torch.randn(n),),
        flops=lambda n: n, bytes_moved=lambda n, b: n * b, sizes=(8,),
        variants=(TorchVariant("t", fn=lambda x, out: out.copy_(x), baseline=True),),
    )
    return Family(**{**base, **changes})


def test_every_shipped_family_loads_with_a_baseline_and_default_shapes():
    dirs = family_dirs()
    assert {"square", "vector_add", "matmul", "softmax"} <= set(dirs)
    for name, folder in dirs.items():
        family = load_family(name, folder)
        assert family.baseline is not None
        for machine in (CPU, GPU):
            shapes = family.default_shapes(machine)
            assert shapes and all(set(s) == set(family.axis_names) for s in shapes)
            assert family.flop_count(shapes[0]) > 0 and family.byte_count(shapes[0], 4) > 0


def test_matmul_ships_the_required_variants_and_m_n_k_napkin_math():
    family = load_family("matmul", family_dirs()["matmul"])
    kinds = {v.name: v.kind for v in family.variants}
    assert kinds == {"torch": "torch", "naive": "cuda", "tiled": "cuda", "triton": "triton",
                     "triton_tc": "triton", "wmma": "cuda", "compiled": "compiled"}
    assert family.axis_names == ("M", "N", "K")
    # one number fills every axis: --sizes 1024 is 1024^3
    cube = family.shape_from_size(1024)
    assert cube == {"M": 1024, "N": 1024, "K": 1024}
    assert family.flop_count(cube) == 2 * 1024**3
    assert family.byte_count(cube, 4) == 3 * 1024 * 1024 * 4
    # 2 M N K FLOPs; A (M x K), B (K x N) and C (M x N) moved once
    skinny = family.shape_of({"M": 16, "N": 4096, "K": 4096})
    assert family.flop_count(skinny) == 2 * 16 * 4096 * 4096
    assert family.byte_count(skinny, 2) == (16 * 4096 + 4096 * 4096 + 16 * 4096) * 2
    a, b = family.inputs(family.shape_of({"M": 5, "N": 3, "K": 7}), torch.float32, "cpu")
    assert a.shape == (5, 7) and b.shape == (7, 3)


def test_softmax_is_a_two_axis_family_without_a_one_number_rule():
    family = load_family("softmax", family_dirs()["softmax"])
    assert family.axis_names == ("rows", "cols")
    shape = family.shape_of({"rows": 4, "cols": 1000})
    (x,) = family.inputs(shape, torch.float32, "cpu")
    assert x.shape == (4, 1000)
    assert family.byte_count(shape, 4) == 2 * 4 * 1000 * 4  # read once, write once
    with pytest.raises(UsageError, match=r"softmax.*rows, cols.*--shape"):
        family.shape_from_size(1024)


def test_axis_defaults_alone_make_the_default_shape():
    """README: a family whose axes all have defaults needs no `shapes`: its default shape is
    every axis at its default (cpu_default without a GPU), and the plan runs it."""
    from gpubench.families.spec import Axis

    family = tiny_family(axes=(Axis("M", default=4096, cpu_default=64), Axis("K", default=128)),
                         sizes=(), make_inputs=lambda s, d, dev: (torch.randn(s["M"], s["K"]),))
    assert family.default_shapes(GPU) == (Shape({"M": 4096, "K": 128}),)
    assert family.default_shapes(CPU) == (Shape({"M": 64, "K": 128}),)
    points = plan_points([family], CPU, {}, (), (), 0)
    assert {p.shape for p in points} == {Shape({"M": 64, "K": 128})}
    # an axis without a default: no default shape, and the plan says which axis lacks one
    partial = tiny_family(axes=(Axis("M", default=16), Axis("K")), sizes=())
    assert partial.default_shapes(CPU) == ()
    with pytest.raises(UsageError, match="no default shapes and axis K has no default"):
        plan_points([partial], CPU, {}, (), (), 0)


@pytest.mark.parametrize("changes, message", [
    (dict(variants=()), "empty"),
    (dict(dtypes=("fp8",)), "unknown dtype"),
    (dict(reference=None), "callable"),
    (dict(variants=(TorchVariant("a", fn=print), TorchVariant("a", fn=print))), "duplicate"),
    (dict(variants=(TorchVariant("a", fn=print, baseline=True),
                    TorchVariant("b", fn=print, baseline=True))), "more than one"),
    (dict(variants=(TorchVariant("a", fn=print, dtypes=("float16",)),)), "lacks"),
])
def test_inconsistent_specs_are_spec_errors(changes, message):
    with pytest.raises(SpecError, match=message):
        tiny_family(**changes)


def test_variant_declarations_are_checked():
    with pytest.raises(SpecError):
        TritonVariant("t", module="kernel", function="f")  # not a .py file
    with pytest.raises(SpecError):
        CudaVariant("c", function="f")  # no sources
    with pytest.raises(SpecError):
        TorchVariant("bad name!", fn=print)


def test_availability_reasons_depend_on_the_machine():
    cuda_only = CudaVariant("c", function="f", cuda=("k.cu",), cpp=("b.cpp",))
    with_cpu = CudaVariant("c", function="f", cuda=("k.cu",), cpp=("b.cpp",), cpu=("c.cpp",))
    triton = TritonVariant("t", module="k.py", function="f")
    assert "needs a CUDA GPU" in cuda_only.unavailable_reason("float32", CPU)
    assert cuda_only.unavailable_reason("float32", GPU) is None
    assert with_cpu.unavailable_reason("float32", CPU) is None
    assert "bfloat16" in triton.unavailable_reason("bfloat16", CPU)
    assert triton.unavailable_reason("bfloat16", GPU) is None
    no_triton = Machine(has_cuda=True, has_triton=False)
    assert "not installed" in triton.unavailable_reason("float32", no_triton)


def test_user_folder_adds_families_and_overrides_shipped_ones(tmp_path):
    shutil.copytree(family_dirs()["square"], tmp_path / "square")
    shutil.copytree(TEST_KERNELS / "faulty", tmp_path / "faulty")
    dirs = family_dirs((tmp_path,))
    assert dirs["square"] == (tmp_path / "square").resolve()
    assert dirs["faulty"] == (tmp_path / "faulty").resolve()
    # a single family folder works as a --kernels-dir too
    assert "faulty" in family_dirs((TEST_KERNELS / "faulty",))


def test_broken_spec_names_file_line_and_error():
    with pytest.raises(SpecError) as info:
        load_family("brokenspec", TEST_KERNELS / "brokenspec")
    assert "brokenspec/spec.py" in str(info.value)
    assert "NameError" in str(info.value) and "line " in str(info.value)


def test_unknown_family_suggests_close_match():
    with pytest.raises(UsageError, match="did you mean: matmul"):
        resolve_families(("matmull",), family_dirs())


def test_plan_puts_baseline_first_and_decides_skips_up_front():
    square = load_family("square", family_dirs()["square"])
    points = plan_points([square], CPU, {"square": ShapeChoice(sizes=(64, 128))},
                         ("float32", "bfloat16"))
    assert [p.variant.name for p in points[:3]] == ["torch", "cuda", "triton"]
    assert len(points) == 2 * 2 * 4  # torch, cuda, triton and the automatic compiled
    skipped = [(p.variant.name, p.dtype) for p in points if p.skip]
    # compiled: on a CPU only when asked (families/compiled.py), at every point
    assert skipped == [("compiled", "float32")] * 2 + [("triton", "bfloat16"),
                                                       ("compiled", "bfloat16")] * 2


def test_variant_filter_keeps_the_baseline_and_rejects_unknown_names():
    matmul = load_family("matmul", family_dirs()["matmul"])
    points = plan_points([matmul], GPU, {"matmul": ShapeChoice(sizes=(64,))}, None, ("tiled",))
    assert [p.variant.name for p in points] == ["torch", "tiled"]
    with pytest.raises(UsageError, match="did you mean: tiled"):
        plan_points([matmul], GPU, None, None, ("tiledd",))


def test_family_without_requested_dtype_is_an_error():
    with pytest.raises(UsageError, match="supports"):
        plan_points([tiny_family(name="tiny")], CPU, None, ("bfloat16",))


def test_groups_get_distinct_stable_seeds():
    n1024, n2048 = Shape({"n": 1024}), Shape({"n": 2048})
    a = group_seed(1, "square", "float32", n1024)
    assert a == group_seed(1, "square", "float32", Shape({"n": 1024}))
    assert a != group_seed(1, "square", "float32", n2048)
    assert a != group_seed(2, "square", "float32", n1024)
