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

from gpubench.errors import SpecError
from gpubench.parsing import DTYPE_ALIASES, parse_dtypes

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

    kind = "variant"

    def __post_init__(self) -> None:
        if not self.name or not self.name.replace("_", "").replace("-", "").isalnum():
            raise SpecError(f"variant name '{self.name}' must be letters, digits, '_' or '-'")
        if self.dtypes is not None:
            object.__setattr__(self, "dtypes", _checked_dtypes(self.dtypes, self.name))

    def unavailable_reason(self, dtype: str, machine: Machine) -> str | None:
        """Why this variant cannot run at `dtype` here, or None if it can."""
        if self.dtypes is not None and dtype not in self.dtypes:
            return f"supports {', '.join(self.dtypes)} only"
        return None


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

    cuda: .cu files (device code and a raw-pointer launcher, no torch headers:
          nvcc then compiles them in well under a second);
    cpp:  .cpp files with the torch-facing wrapper `function(inputs..., out)`;
    cpu:  optional .cpp files exporting the same `function` for CPU tensors,
          built instead of the CUDA sources on a machine without a GPU.
    Variants naming the same sources share one build.
    """

    function: str = ""
    cuda: tuple[str, ...] = ()
    cpp: tuple[str, ...] = ()
    cpu: tuple[str, ...] = ()
    cuda_flags: tuple[str, ...] = ()
    cflags: tuple[str, ...] = ()

    kind = "cuda"

    def __post_init__(self) -> None:
        super().__post_init__()
        for name in ("cuda", "cpp", "cpu", "cuda_flags", "cflags"):
            value = getattr(self, name)
            if isinstance(value, str):
                object.__setattr__(self, name, (value,))
            else:
                object.__setattr__(self, name, tuple(value))
        if not self.function.isidentifier():
            raise SpecError(f"cuda variant '{self.name}' needs function='exported_name'")
        if not self.cuda and not self.cpu:
            raise SpecError(f"cuda variant '{self.name}' lists no sources (cuda=..., cpu=...)")

    def unavailable_reason(self, dtype: str, machine: Machine) -> str | None:
        reason = super().unavailable_reason(dtype, machine)
        if reason:
            return reason
        if machine.has_cuda and not self.cuda:
            return "CPU-only C++ variant (no cuda sources); the inputs are on the GPU"
        if not machine.has_cuda and not self.cpu:
            return "needs a CUDA GPU (no CPU version: give it cpu=['file.cpp'])"
        return None

    def sources_for(self, machine: Machine) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """(cuda sources, cpp sources) to build on this machine."""
        if machine.has_cuda:
            return self.cuda, self.cpp
        return (), self.cpu


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
    """A problem, its reference, its inputs, its cost model and its variants.

    reference(*inputs) -> tensor      computed on float64 copies of the inputs
    make_inputs(size, dtype, device)  fresh random tensors (the harness seeds torch first)
    flops(size)                       floating-point operations of one call
    bytes_moved(size, itemsize)       the fewest bytes one call must move through memory
    """

    reference: Callable
    make_inputs: Callable
    flops: Callable[[int], float]
    bytes_moved: Callable[[int, int], float]
    variants: tuple[Variant, ...]
    dtypes: tuple[str, ...] = ("float32",)
    sizes: tuple[int, ...] = ()
    cpu_sizes: tuple[int, ...] = ()
    tolerances: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    make_output: Callable | None = None  # (size, dtype, device) -> empty tensor
    size_name: str = "n"  # what a size means, for table titles: "n" elements, "N" for N x N
    description: str = ""
    name: str = ""  # set by discovery from the folder name
    directory: Path | None = None  # set by discovery

    def __post_init__(self) -> None:
        object.__setattr__(self, "variants", tuple(self.variants))
        object.__setattr__(self, "dtypes", _checked_dtypes(self.dtypes, "family"))
        for attr in ("reference", "make_inputs", "flops", "bytes_moved"):
            if not callable(getattr(self, attr)):
                raise SpecError(f"Family.{attr} must be callable")
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

    @property
    def baseline(self) -> Variant | None:
        return next((v for v in self.variants if v.baseline), None)

    def variant(self, name: str) -> Variant:
        for v in self.variants:
            if v.name == name:
                return v
        raise KeyError(name)

    def tolerance(self, dtype: str) -> tuple[float, float]:
        return tuple(self.tolerances.get(dtype, DEFAULT_TOLERANCES[dtype]))

    def default_sizes(self, machine: Machine) -> tuple[int, ...]:
        """GPU sizes fill the chip; CPU sizes keep a no-GPU run (interpreter included) short."""
        if machine.has_cuda or not self.cpu_sizes:
            return self.sizes
        return self.cpu_sizes


def _checked_dtypes(dtypes, owner: str) -> tuple[str, ...]:
    if isinstance(dtypes, str):
        dtypes = (dtypes,)
    try:
        return parse_dtypes(tuple(dtypes))
    except Exception as exc:  # UsageError -> SpecError: the fault is in the spec file
        raise SpecError(f"{owner}: {exc}") from None
