"""What a kernel family declares: the data model behind every `kernels/<family>/spec.py`.

A family is one problem (square, matmul, ...) with one PyTorch reference and
several implementations ("variants") of it. The harness owns the inputs and the
output buffer, so every variant is called the same way, destination-passing:

    variant(*inputs, out) -> None

which lets the harness poison `out` before the call and catch elements a kernel
never wrote. This module is plain data and policy: nothing here imports torch,
triton or touches a GPU, so `gpubench list` and spec imports work anywhere.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from gpubench.errors import SpecError, UsageError
from gpubench.parsing import DTYPE_ALIASES, parse_dtypes
from gpubench.records.shape import Axis, Shape, make_shape
from gpubench.timing.precision import PRECISIONS

__all__ = ["Axis", "CudaVariant", "Family", "Machine", "Shape", "TorchVariant", "TritonVariant",
           "Variant"]

KNOWN_DTYPES = frozenset(DTYPE_ALIASES.values())


@dataclass(frozen=True)
class Machine:
    """The facts about this machine that decide which variants can run here."""

    has_cuda: bool
    has_triton: bool
    device_name: str = "cpu"

    @property
    def triton_interpreted(self) -> bool:
        """Without CUDA, Triton kernels run through TRITON_INTERPRET=1 on CPU tensors."""
        return self.has_triton and not self.has_cuda

    @property
    def device(self) -> str:
        return "cuda" if self.has_cuda else "cpu"


@dataclass(frozen=True)
class Variant:
    """One implementation of a family. Subclasses say how it is loaded."""

    name: str
    dtypes: tuple[str, ...] | None = None  # None: every dtype of the family
    baseline: bool = False
    description: str = ""
    # Whether the callable returns its output (fn(*inputs) -> Tensor, allocating it) rather
    # than writing into the harness's buffer (fn(*inputs, out)). None: read from the
    # callable's signature (calling.py); say True/False where that cannot tell.
    returns: bool | None = None
    # {dtype: (atol, rtol)} for this variant alone, where it computes at another precision
    # than the family's tolerances assume on purpose (fp32 inputs on TF32 tensor cores).
    # Said in the variant's description; the check's tolerances are recorded per result.
    tolerances: dict | None = field(default=None, hash=False, compare=False)
    # What the variant computes in when it is not its inputs' dtype: "tf32" (fp32 inputs on
    # tensor cores), "fp16", "bf16", "fp8" or "fp32" (timing/precision.py), for every dtype
    # or as {dtype: precision} for some. It picks the measured ceiling the result's "of
    # roof" is taken against; None: each dtype's own (float32 -> fp32 on CUDA cores).
    precision: str | dict | None = field(default=None, hash=False, compare=False)
    # A CUDA variant's config space for `gpubench tune`: {MACRO: (value, ...)}, each point
    # of the product built with -DMACRO=value (tune/space.py checks it when tune reads it).
    # A Triton variant's space is its kernel's own @triton.autotune list, never declared.
    tune: dict | None = field(default=None, hash=False, compare=False)
    # The shapes it runs at, each a {axis: size} mapping (an ejected kernel is compiled for
    # one); at any other the point is skipped, saying so. None: every shape.
    shapes: tuple | None = field(default=None, hash=False, compare=False)

    kind = "variant"

    def __post_init__(self) -> None:
        if not self.name or not self.name.replace("_", "").replace("-", "").isalnum():
            raise SpecError(f"variant name '{self.name}' must be letters, digits, '_' or '-'")
        if self.dtypes is not None:
            object.__setattr__(self, "dtypes", _checked_dtypes(self.dtypes, self.name))
        _check_precision(self.precision, self.name)

    def precision_for(self, dtype: str) -> str | None:
        """The precision declared for `dtype`, None when it computes in the dtype's own."""
        if isinstance(self.precision, Mapping):
            return self.precision.get(dtype)
        return self.precision

    def unavailable_reason(self, dtype: str, machine: Machine) -> str | None:
        """Why this variant cannot run at `dtype` here, or None if it can."""
        if self.dtypes is not None and dtype not in self.dtypes:
            return f"supports {', '.join(self.dtypes)} only"
        return None

    def shape_reason(self, shape: Mapping) -> str | None:
        """Why this variant does not run at `shape` (not among its `shapes`), or None."""
        if self.shapes is None or any(dict(shape) == dict(s) for s in self.shapes):
            return None
        sizes = "; ".join(",".join(f"{k}={v}" for k, v in dict(s).items()) for s in self.shapes)
        return f"runs at {sizes} only"


@dataclass(frozen=True)
class TorchVariant(Variant):
    """A PyTorch callable `fn(*inputs, out)`; runs on whatever device the inputs are on."""

    fn: Callable | None = None

    kind = "torch"

    def __post_init__(self) -> None:
        super().__post_init__()
        if not callable(self.fn):
            raise SpecError(f"torch variant '{self.name}' needs fn=callable(*inputs, out)")


@dataclass(frozen=True)
class TritonVariant(Variant):
    """A Python file of the family folder with a launcher `function(*inputs, out)`.

    The file is imported only inside the worker, after TRITON_INTERPRET is set
    on machines without CUDA (Triton reads it when `@triton.jit` runs).
    """

    module: str = ""
    function: str = ""

    kind = "triton"

    def __post_init__(self) -> None:
        super().__post_init__()
        if not self.module.endswith(".py") or not self.function:
            raise SpecError(
                f"triton variant '{self.name}' needs module='file.py' and function='launcher'"
            )

    def unavailable_reason(self, dtype: str, machine: Machine) -> str | None:
        reason = super().unavailable_reason(dtype, machine)
        if reason:
            return reason
        if not machine.has_triton:
            return "triton is not installed"
        if machine.triton_interpreted and dtype == "bfloat16":
            # numpy, which the interpreter computes with, has no bfloat16.
            return "the Triton interpreter (no GPU) has no bfloat16 arithmetic"
        return None


@dataclass(frozen=True)
class CudaVariant(Variant):
    """CUDA C++ built with torch's load_inline; `function` is exported from the C++ side.

    Declared with files of the family folder:
      cuda: .cu files (device code and a raw-pointer launcher, no torch headers:
            nvcc then compiles them in well under a second);
      cpp:  .cpp files with the torch-facing wrapper `function(inputs..., out)`;
      cpu:  optional .cpp files exporting the same `function` for CPU tensors,
            built instead of the CUDA sources on a machine without a GPU.
    or exactly the way torch.utils.cpp_extension.load_inline is called:
      cpp_sources / cuda_sources: strings of code, or file names of the family folder
            (one or a list; `#include <torch/extension.h>` is put before the C++ sources
            and torch's headers before the CUDA ones, as load_inline does);
      functions: the exported names (`function` defaults to the only one);
      extra_cflags / extra_cuda_cflags: compiler flags.
      With cuda_sources it needs a GPU; with cpp_sources alone it is a CPU variant.
    Variants naming the same sources share one build.
    """

    function: str = ""
    cuda: tuple[str, ...] = ()
    cpp: tuple[str, ...] = ()
    cpu: tuple[str, ...] = ()
    cuda_flags: tuple[str, ...] = ()
    cflags: tuple[str, ...] = ()
    # load_inline's own parameters
    cpp_sources: tuple[str, ...] = ()
    cuda_sources: tuple[str, ...] = ()
    functions: tuple[str, ...] = ()
    extra_cflags: tuple[str, ...] = ()
    extra_cuda_cflags: tuple[str, ...] = ()

    kind = "cuda"

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in ("cuda", "cpp", "cpu", "cuda_flags", "cflags", "cpp_sources", "cuda_sources",
                     "functions", "extra_cflags", "extra_cuda_cflags"):
            value = getattr(self, name)
            object.__setattr__(self, name, (value,) if isinstance(value, str | Path)
                               else tuple(value))
        if self.inline:
            self._adopt_inline_style()
        if not self.function.isidentifier():
            raise SpecError(f"cuda variant '{self.name}' needs function='exported_name'")
        if not self.cuda and not self.cpu and not self.inline:
            raise SpecError(f"cuda variant '{self.name}' lists no sources (cuda=..., cpu=...)")

    @property
    def inline(self) -> bool:
        """Declared the load_inline way (cpp_sources / cuda_sources)."""
        return bool(self.cpp_sources or self.cuda_sources)

    def _adopt_inline_style(self) -> None:
        if self.cuda or self.cpp or self.cpu:
            raise SpecError(f"cuda variant '{self.name}': give either cuda/cpp/cpu files or "
                            "load_inline's cpp_sources/cuda_sources, not both")
        for entry in (*self.cpp_sources, *self.cuda_sources):
            if not isinstance(entry, str | Path):
                raise SpecError(f"cuda variant '{self.name}': sources must be strings of code "
                                f"or file names, not {type(entry).__name__}")
        if not self.function:
            if len(self.functions) != 1:
                raise SpecError(f"cuda variant '{self.name}' exports {len(self.functions)} "
                                "functions: say which one is timed with function='name'")
            object.__setattr__(self, "function", self.functions[0])
        object.__setattr__(self, "cuda_flags", (*self.cuda_flags, *self.extra_cuda_cflags))
        object.__setattr__(self, "cflags", (*self.cflags, *self.extra_cflags))

    def unavailable_reason(self, dtype: str, machine: Machine) -> str | None:
        reason = super().unavailable_reason(dtype, machine)
        if reason:
            return reason
        needs_gpu = bool(self.cuda or self.cuda_sources)
        cpu_only = bool(self.cpu) if not self.inline else not self.cuda_sources
        if machine.has_cuda and not needs_gpu:
            return "CPU-only C++ variant (no cuda sources); the inputs are on the GPU"
        if not machine.has_cuda and not cpu_only:
            return ("needs a CUDA GPU (no CPU version: give it cpu=['file.cpp'])"
                    if not self.inline else "needs a CUDA GPU (it has cuda_sources)")
        return None

    def sources_for(self, machine: Machine) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(cuda files, cpp files) to build on this machine; for a load_inline-style
        variant, its entries (file names or code) in load_inline's order."""
        if self.inline:
            return tuple(map(str, self.cuda_sources)), tuple(map(str, self.cpp_sources))
        if machine.has_cuda:
            return self.cuda, self.cpp
        return (), self.cpu


def _check_precision(precision, variant: str) -> None:
    """A declared precision is one `gpubench peak` measures, keyed by known dtypes."""
    named = precision.items() if isinstance(precision, Mapping) else [(None, precision)]
    for dtype, name in named:
        if dtype is not None and dtype not in KNOWN_DTYPES:
            raise SpecError(f"variant '{variant}': precision for unknown dtype '{dtype}'")
        if name is not None and name not in PRECISIONS:
            raise SpecError(f"variant '{variant}': unknown precision {name!r}; one of "
                            f"{', '.join(PRECISIONS)}")


# (atol, rtol) against a float64 reference. fp32 arithmetic lands far under
# 1e-4; fp16 rounds at ~5e-4 relative and bf16 at ~4e-3, plus accumulation.
DEFAULT_TOLERANCES: Mapping[str, tuple[float, float]] = {
    "float64": (1e-9, 1e-9),
    "float32": (1e-4, 1e-4),
    "float16": (1e-2, 1e-2),
    "bfloat16": (3e-2, 3e-2),
}


@dataclass(frozen=True)
class Family:
    """A problem, its axes, its reference, its inputs, its cost model and its variants.

    axes        the problem's dimensions, e.g. (Axis("M"), Axis("N"), Axis("K")); each
                may carry a default (what an `--axis` sweep uses for the others)
    shapes      default shapes on a GPU, as mappings {"M": 4096, ...}; cpu_shapes without one.
                Without shapes or sizes, every axis at its default is the one default shape
    fill        optional n -> shape: how one number (`--sizes 1024`) fills every axis
    check_shape optional shape -> None or the reason the family refuses that shape

    reference(*inputs) -> tensor          computed on float64 copies of the inputs
    make_inputs(shape, dtype, device)     fresh random tensors (the harness seeds torch first)
    flops(shape)                          floating-point operations of one call
    bytes_moved(shape, itemsize)          the fewest bytes one call must move through memory
    make_output(shape, dtype, device)     optional: the output buffer (default: like the
                                          reference's result)
    compiled    False: no automatic `compiled` variant (torch.compile of the reference)
    where `shape` is a Mapping axis -> int (shape["M"]).

    One-axis families written before axes existed still work unchanged: without
    `axes`, the one axis is named `size_name`, `sizes`/`cpu_sizes` are its values, and
    the callables receive the plain int, as before.
    """

    reference: Callable
    make_inputs: Callable
    flops: Callable
    bytes_moved: Callable
    variants: tuple[Variant, ...]
    dtypes: tuple[str, ...] = ("float32",)
    axes: tuple[Axis | str, ...] | None = None
    shapes: tuple[Mapping, ...] = ()
    cpu_shapes: tuple[Mapping, ...] = ()
    fill: Callable[[int], Mapping] | None = None
    check_shape: Callable[[Shape], str | None] | None = None
    sizes: tuple[int, ...] = ()
    cpu_sizes: tuple[int, ...] = ()
    tolerances: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    make_output: Callable | None = None
    size_name: str = "n"  # the axis name of a family without `axes`
    # False: no `compiled` variant (torch.compile of the reference, families/compiled.py),
    # for a reference torch.compile cannot trace or that is not meant to be fast
    compiled: bool = True
    description: str = ""
    name: str = ""  # set by discovery from the folder name
    directory: Path | None = None  # set by discovery

    def __post_init__(self) -> None:
        object.__setattr__(self, "variants", tuple(self.variants))
        object.__setattr__(self, "dtypes", _checked_dtypes(self.dtypes, "family"))
        for attr in ("reference", "make_inputs", "flops", "bytes_moved"):
            if not callable(getattr(self, attr)):
                raise SpecError(f"Family.{attr} must be callable")
        self._check_variants()
        # Not a field: whether the callables take a plain int (no `axes` declared).
        object.__setattr__(self, "_legacy", self.axes is None)
        object.__setattr__(self, "axes", _checked_axes(self.axes, self.size_name))
        for attr in ("sizes", "cpu_sizes", "shapes", "cpu_shapes"):
            object.__setattr__(self, attr, tuple(getattr(self, attr)))
        if self.sizes and len(self.axes) > 1 and self.fill is None:
            raise SpecError(f"Family.sizes needs one axis or fill=: this family has axes "
                            f"{', '.join(self.axis_names)}; declare shapes=({{...}},) instead")

    def _check_variants(self) -> None:
        if not self.variants:
            raise SpecError("Family.variants is empty")
        names = [v.name for v in self.variants]
        duplicates = {n for n in names if names.count(n) > 1}
        if duplicates:
            raise SpecError(f"duplicate variant names: {', '.join(sorted(duplicates))}")
        if sum(v.baseline for v in self.variants) > 1:
            raise SpecError("more than one variant is marked baseline=True")
        for v in self.variants:
            extra = set(v.dtypes or ()) - set(self.dtypes)
            if extra:
                raise SpecError(f"variant '{v.name}' lists dtypes the family lacks: {extra}")

    # ------------------------------------------------------------ axes and shapes

    @property
    def legacy(self) -> bool:
        """Declared without `axes`: callables take the one axis as a plain int."""
        return self._legacy

    @property
    def axis_names(self) -> tuple[str, ...]:
        return tuple(a.name for a in self.axes)

    def shape_of(self, given: Mapping) -> Shape:
        """A complete, checked Shape of this family (UsageError naming family and axis)."""
        shape = make_shape(self.name, self.axes, given)
        try:
            reason = self.check_shape(shape) if self.check_shape is not None else None
        except Exception as exc:  # the spec's own code: its fault, said in one line
            raise SpecError(f"family '{self.name}': check_shape({shape.text()}) failed: "
                            f"{type(exc).__name__}: {exc}") from None
        if reason:
            raise UsageError(f"family '{self.name}' refuses shape {shape.text()}: {reason}")
        return shape

    def shape_from_size(self, size: int) -> Shape:
        """One number -> a shape: the one axis, or every axis through `fill`."""
        if len(self.axes) == 1:
            return self.shape_of({self.axes[0].name: size})
        if self.fill is None:
            raise UsageError(
                f"family '{self.name}' has axes {', '.join(self.axis_names)} and no rule for "
                f"one number (--sizes {size}): name shapes with --shape "
                f"{','.join(f'{a}=...' for a in self.axis_names)} or sweep with --axis "
                f"{self.axis_names[-1]}=...")
        try:
            filled = dict(self.fill(size))
        except Exception as exc:
            raise SpecError(f"family '{self.name}': fill({size}) failed: {exc}") from None
        return self.shape_of(filled)

    def default_shapes(self, machine: Machine) -> tuple[Shape, ...]:
        """GPU shapes fill the chip; CPU shapes keep a no-GPU run (interpreter included) short."""
        cpu = not machine.has_cuda
        shapes = (self.cpu_shapes if cpu and self.cpu_shapes else self.shapes)
        if shapes:
            return tuple(self.shape_of(dict(s)) for s in shapes)
        sizes = self.cpu_sizes if cpu and self.cpu_sizes else self.sizes
        if sizes:
            return tuple(self.shape_from_size(n) for n in sizes)
        return self._axis_defaults_shape(machine)

    def _axis_defaults_shape(self, machine: Machine) -> tuple[Shape, ...]:
        """Without shapes or sizes, the one shape of every axis at its default (the value an
        `--axis` sweep keeps for the axes it leaves alone); none when an axis has no default,
        which the plan then says."""
        values = {a.name: a.default_for(machine.has_cuda) for a in self.axes}
        if any(value is None for value in values.values()):
            return ()
        return (self.shape_of(values),)

    def axes_without_default(self, machine: Machine) -> tuple[str, ...]:
        """The axes with no default on this machine: why a family has no default shape."""
        return tuple(a.name for a in self.axes if a.default_for(machine.has_cuda) is None)

    # ------------------------------------------------------------ the callables, by shape

    def _arg(self, shape: Shape):
        return shape[self.axes[0].name] if self.legacy else shape

    def inputs(self, shape: Shape, dtype, device: str):
        return self.make_inputs(self._arg(shape), dtype, device)

    def flop_count(self, shape: Shape) -> float:
        return float(self.flops(self._arg(shape)))

    def byte_count(self, shape: Shape, itemsize: int) -> float:
        return float(self.bytes_moved(self._arg(shape), itemsize))

    def output(self, shape: Shape, dtype, device: str):
        return self.make_output(self._arg(shape), dtype, device)

    # ------------------------------------------------------------ the rest

    def with_variants(self, *variants: Variant) -> Family:
        """A copy with `variants` added (an ejected kernel's spec block uses it). Not
        dataclasses.replace alone: that runs the checks again on axes they already
        normalised, and a family declared without `axes` would stop being one."""
        import dataclasses

        copy = dataclasses.replace(self, variants=(*self.variants, *variants))
        object.__setattr__(copy, "_legacy", self._legacy)
        return copy

    @property
    def baseline(self) -> Variant | None:
        return next((v for v in self.variants if v.baseline), None)

    def variant(self, name: str) -> Variant:
        for v in self.variants:
            if v.name == name:
                return v
        raise KeyError(name)

    def tolerance(self, dtype: str, variant: Variant | None = None) -> tuple[float, float]:
        """(atol, rtol) at `dtype`: the variant's own where it declares one, else the
        family's, else the default for the dtype."""
        own = (variant.tolerances or {}) if variant is not None else {}
        if dtype in own:
            return tuple(own[dtype])
        return tuple(self.tolerances.get(dtype, DEFAULT_TOLERANCES[dtype]))


def _checked_axes(axes, size_name: str) -> tuple[Axis, ...]:
    """Axes as Axis objects; a family without them has one axis named `size_name`."""
    from gpubench.records.result import RESERVED_COLUMNS

    if axes is None:
        declared = (Axis(size_name),)
    else:
        if isinstance(axes, str | Axis):
            axes = (axes,)
        try:
            declared = tuple(a if isinstance(a, Axis) else Axis(str(a)) for a in axes)
        except ValueError as exc:
            raise SpecError(f"Family.axes: {exc}") from None
        if not declared:
            raise SpecError("Family.axes is empty: declare at least one axis")
    names = [a.name for a in declared]
    if len(set(names)) != len(names):
        raise SpecError(f"Family.axes repeats a name: {', '.join(names)}")
    clash = sorted(set(names) & RESERVED_COLUMNS)
    if clash:
        raise SpecError(f"axis name(s) {', '.join(clash)} clash with result columns; rename")
    return declared


def _checked_dtypes(dtypes, owner: str) -> tuple[str, ...]:
    if isinstance(dtypes, str):
        dtypes = (dtypes,)
    try:
        return parse_dtypes(tuple(dtypes))
    except Exception as exc:  # UsageError -> SpecError: the fault is in the spec file
        raise SpecError(f"{owner}: {exc}") from None
