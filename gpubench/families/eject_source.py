"""Turn Inductor's output code into a self-contained Triton variant (`gpubench eject`).

Inductor writes one Python module per compiled graph: each Triton kernel as source text
inside `async_compile.triton('name', '''...''')`, decorated with its own autotuning
heuristics, and a `call(args)` that allocates buffers and launches them through its runtime.
This module is pure text work (no torch, no GPU): it takes that code and the launch config
each kernel was autotuned to, and writes a module a user can read and edit, whose kernels are
plain `@triton.jit` functions launched with a grid computed from the shape, and whose
launcher writes into the harness's `out` (destination-passing, as every Triton variant).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from gpubench.errors import GpubenchError


class NothingToEject(GpubenchError):
    """The reference compiled to no Triton kernel we can hand over (an extern library call,
    a C++ kernel), or to a launch this writer does not rewrite; the message says which."""


@dataclass(frozen=True)
class LaunchConfig:
    """What Inductor's autotuner chose for one kernel: its block sizes and warps."""

    blocks: dict = field(default_factory=dict)  # {"XBLOCK": 8, "R0_BLOCK": 1024, ...}
    num_warps: int = 4
    num_stages: int = 1


@dataclass(frozen=True)
class InductorKernel:
    name: str
    source: str  # the @triton.jit function, Inductor's decorator and imports removed
    heuristic: str  # pointwise, reduction, persistent_reduction, ...
    grid_type: str  # Inductor's GridExpr class name: Grid1D, Grid2D, ...
    size_hints: dict  # {"x": 64, "r0_": 128}: the numels, rounded up to powers of two
    params: tuple[str, ...]  # the kernel's parameters in order


_KERNEL = re.compile(r"^(\w+) = async_compile\.triton\('(\w+)', '''(.*?)''', "
                     r"device_str='(\w+)'\)", re.S | re.M)
_EXTERN = re.compile(r"\b(extern_kernels\.\w+|aten\.\w+(?:\.\w+)?|torch\.ops\.\w+\.\w+)\(")
_CPP = re.compile(r"^(cpp_fused_\w+) = async_compile\.cpp", re.M)
_GRIDS = {"Grid1D": ("x",), "Grid2D": ("x", "y"), "Grid3D": ("x", "y", "z")}


def find_kernels(code: str) -> list[InductorKernel]:
    """The Triton kernels of one Inductor output module, in the order they are defined."""
    return [_kernel(name, text) for _, name, text, _ in _KERNEL.findall(code)]


def _kernel(name: str, text: str) -> InductorKernel:
    heuristic = re.search(r"@triton_heuristics\.(\w+)\(", text)
    grid = re.search(r"'grid_type': '(\w+)'", text)
    hints = re.search(r"size_hints=(\{[^}]*\})", text)
    start = text.index("@triton.jit")
    source = text[start:].strip() + "\n"
    header = re.search(rf"def {name}\((.*?)\):", source, re.S)
    params = tuple(p.split(":")[0].strip() for p in header.group(1).split(",") if p.strip())
    return InductorKernel(name, source, heuristic.group(1) if heuristic else "unknown",
                          grid.group(1) if grid else "unknown",
                          _literal_dict(hints.group(1)) if hints else {}, params)


def _literal_dict(text: str) -> dict:
    return {k: int(v) for k, v in re.findall(r"'(\w+)': (\d+)", text)}


def refusal(code: str) -> str | None:
    """Why this output module cannot be ejected, or None when it can: no Triton kernel at
    all (say what the graph calls instead), or a call `call()` makes that is not a Triton
    launch (a library kernel would have to be re-implemented by hand)."""
    body = "\n".join(call_body(code))
    externs = sorted(set(_EXTERN.findall(body)))
    cpp = _CPP.findall(code)
    if not find_kernels(code):
        if externs:
            return (f"{', '.join(externs)}: torch.compile calls a library kernel here "
                    "(cuBLAS for a matmul), not a Triton kernel of its own; nothing to eject")
        if cpp:
            return (f"{', '.join(cpp)}: Inductor wrote C++ for the CPU here, not Triton; "
                    "nothing to eject")
        return "the compiled graph launches no kernel (a view or a copy of an input)"
    if externs:
        return (f"the compiled graph mixes Triton kernels with {', '.join(externs)}; eject "
                "handles graphs of Triton kernels only")
    for kernel in find_kernels(code):
        if kernel.grid_type not in _GRIDS:
            return (f"{kernel.name} is launched on a {kernel.grid_type} grid; eject rewrites "
                    f"{', '.join(_GRIDS)} launches only")
    return None


def call_body(code: str) -> list[str]:
    """The lines of the wrapper's `call(self, args)` (or module-level `call(args)`), dedented
    to the body's own indentation."""
    lines = code.splitlines()
    for i, line in enumerate(lines):
        if re.match(r"\s*def call\((self, )?args\):", line):
            outer = len(line) - len(line.lstrip())
            body = []
            for text in lines[i + 1:]:
                if text.strip() and len(text) - len(text.lstrip()) <= outer:
                    break
                body.append(text)
            indent = min(len(t) - len(t.lstrip()) for t in body if t.strip())
            return [t[indent:] for t in body if t.strip()]
    return []


_ALLOC = re.compile(r"empty_strided_(?:cuda|cpu|xpu)\((\([^()]*\)), (\([^()]*\)), (torch\.\w+)\)")
_RUN = re.compile(r"^(\w+)\.run\((.*)\)$")
_DROPPED = ("args.clear()", "assert_size_stride(", "assert_alignment(", "torch.cuda.set_device(")


def launcher_body(code: str, configs: dict[str, LaunchConfig]) -> list[str]:
    """`call()`'s body as plain Python: Inductor's allocators become torch.empty_strided on
    the inputs' device, each `kernel.run(...)` a `kernel[grid](...)` launch at its autotuned
    config, and the returned buffer is the harness's `out` where their layouts agree."""
    kernels = {k.name: k for k in find_kernels(code)}
    lines, guard = [], None
    returned = None
    for line in call_body(code):
        depth = len(line) - len(line.lstrip())
        text = line.strip()
        if guard is not None and depth <= guard:
            guard = None
        if guard is not None:
            depth -= 4  # the body of a dropped device guard
        if text.startswith("with torch.cuda._DeviceGuard("):
            guard = depth
            continue
        if text.startswith(_DROPPED) or "get_raw_stream(" in text:
            continue
        if text.startswith("return "):
            returned = text[len("return "):].strip("() ,")
            continue
        if text.endswith("= args"):
            continue  # the launcher takes the inputs by these names (input_names)
        text = _ALLOC.sub(r"torch.empty_strided(\1, \2, dtype=\3, device=device)", text)
        launch = _RUN.match(text)
        if launch:
            text = _launch(kernels[launch.group(1)], launch.group(2), configs[launch.group(1)])
        lines.append(" " * depth + text)
    return _into_out(lines, returned)


def _launch(kernel: InductorKernel, args_text: str, config: LaunchConfig) -> str:
    args = [a.strip() for a in _split_args(args_text) if not a.strip().startswith("stream=")]
    by_param = dict(zip(kernel.params, args, strict=False))  # constexprs come as keywords
    grid = []
    for axis in _GRIDS[kernel.grid_type]:
        numel = by_param[f"{axis}numel"]
        block = config.blocks.get(f"{axis.upper()}BLOCK")
        grid.append(numel if block in (None, 1) else f"triton.cdiv({numel}, {block})")
    blocks = [f"{k}={v}" for k, v in config.blocks.items() if k in kernel.params]
    extra = [*args, *blocks, f"num_warps={config.num_warps}", f"num_stages={config.num_stages}"]
    return f"{kernel.name}[({', '.join(grid)},)]({', '.join(extra)})"


def _split_args(text: str) -> list[str]:
    """Top-level commas only: an argument may be a call with commas of its own."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += ch in "([{"
        depth -= ch in ")]}"
        if ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p for p in parts if p.strip()]


def _into_out(lines: list[str], returned: str | None) -> list[str]:
    """Point the returned buffer's allocation at `out` (followed back through Inductor's
    `buf3 = buf1; del buf1  # reuse` renames), so the kernel writes the harness's tensor and
    no copy is timed; `_take` falls back to a fresh buffer and a copy if layouts differ."""
    if not returned or "," in returned:
        raise NothingToEject(f"the compiled graph returns {returned or 'nothing'}: eject "
                             "handles one output tensor")
    root = returned
    for line in reversed(lines):
        reuse = re.match(rf"\s*{root} = (\w+); del \1", line)
        if reuse:
            root = reuse.group(1)
    taken = False
    for i, line in enumerate(lines):
        alloc = re.match(rf"(\s*){root} = torch\.empty_strided\((.*), dtype=(.*), "
                         r"device=device\)$", line)
        if alloc and not taken:
            lines[i] = f"{alloc.group(1)}{root} = _take(out, {alloc.group(2)}, {alloc.group(3)})"
            taken = True
    lines.append(f"if {returned} is not out:")
    lines.append(f"    out.copy_({returned})")
    return lines


# Inductor's triton_helpers that this writer re-implements in the ejected file, so that the
# common kernels (pointwise, max/min/sum reductions, softmax) import nothing from Inductor.
_OWN_HELPERS = '''
@triton.jit
def helper_maximum(a, b):
    # NaN wins, as in torch.max: a != a is true for NaN only.
    return tl.where((a > b) | (a != a), a, b)


@triton.jit
def helper_minimum(a, b):
    return tl.where((a < b) | (a != a), a, b)


@triton.jit
def helper_max2(a, dim):
    return tl.reduce(a, dim, helper_maximum)


@triton.jit
def helper_min2(a, dim):
    return tl.reduce(a, dim, helper_minimum)


if os.environ.get("TRITON_INTERPRET") == "1":
    # The interpreter calls a tl.reduce combine function once per pair of elements, in
    # Python (seconds per launch); tl.max/tl.min reduce in numpy. NaN may not propagate there.
    helper_max2, helper_min2 = tl.max, tl.min
'''
_OWN = ("maximum", "minimum", "max2", "min2")
# Inductor calls libdevice (CUDA's accurate expf, ...) where it can; the Triton interpreter
# runs no extern library, so there the same names come from tl.math (exp, log, sqrt, ...).
_LIBDEVICE = """if os.environ.get("TRITON_INTERPRET") == "1":
    libdevice = tl.math  # the interpreter has no extern libdevice: tl.math's exp, sqrt, ...
else:
    from triton.language.extra import libdevice"""


@dataclass(frozen=True)
class EjectedModule:
    """One generated file: its text and what it still imports from Inductor, if anything."""

    text: str
    inductor_helpers: tuple[str, ...]  # triton_helpers functions imported, not rewritten


def kernel_text(kernels: list[InductorKernel]) -> tuple[str, tuple[str, ...]]:
    """The kernels' sources, Inductor's helper references rewritten: libdevice from Triton,
    tl_math as tl.math, our own max2/min2; the helpers left over are named."""
    text = "\n\n".join(k.source for k in kernels)
    text = re.sub(r"\btl_math\.", "tl.math.", text)
    for name in _OWN:
        text = re.sub(rf"\btriton_helpers\.{name}\(", f"helper_{name}(", text)
    return text, tuple(sorted(set(re.findall(r"\btriton_helpers\.(\w+)", text))))


def write_module(code: str, configs: dict[str, LaunchConfig], *, function: str,
                 family: str, shape: dict, dtype: str, mode: str, device: str,
                 torch_version: str, triton_version: str,
                 configs_from: str = "the ones Inductor chose") -> EjectedModule:
    """The ejected variant's file: the kernels Inductor wrote and a launcher `function(*inputs,
    out)` for this shape only (Inductor specialised every size); `configs_from`: whose."""
    why = refusal(code)
    if why:
        raise NothingToEject(why)
    kernels = find_kernels(code)
    body, leftover = kernel_text(kernels)
    launcher = launcher_body(code, configs)
    shape_text = ", ".join(f"{k}={v}" for k, v in shape.items())
    tuned = "; ".join(f"{k.name}: {_config_text(configs[k.name])} ({k.heuristic})"
                      for k in kernels)  # said in the file's docstring
    imports = _imports(leftover)
    sizes, strides = input_layouts(code)
    text = f'''"""{family} at {shape_text}, {dtype}: the Triton code torch.compile (Inductor, mode
{mode}) wrote for the family's reference, ejected by `gpubench eject` as a starting point.

Written for {device} with torch {torch_version}, triton {triton_version}. Every size is
baked into the kernels (Inductor specialises on static shapes): this variant runs at
{shape_text} only. Launch configs are {configs_from}:
{tuned}.
Runs without torch.compile: plain @triton.jit kernels, grids computed from the numels.
"""

{chr(10).join(imports)}

# The layouts Inductor compiled for: sizes and strides of each input, in order.
INPUT_SIZES = {sizes!r}
INPUT_STRIDES = {strides!r}
{_OWN_HELPERS}

def _take(out, size, stride, dtype):
    """`out` itself when Inductor's output buffer has its layout, else a fresh buffer
    (the launcher copies it into `out` at the end)."""
    if tuple(out.shape) == tuple(size) and tuple(out.stride()) == tuple(stride) \\
            and out.dtype == dtype:
        return out
    return torch.empty_strided(size, stride, dtype=dtype, device=out.device)


def reinterpret_tensor(t, size, stride, offset):
    return t.as_strided(size, stride, t.storage_offset() + offset)


{body}

def {function}({", ".join(input_names(code))}, out):
    inputs = ({", ".join(input_names(code))},)
    sizes = tuple(tuple(x.shape) for x in inputs)
    strides = tuple(tuple(x.stride()) for x in inputs)
    if sizes != INPUT_SIZES or strides != INPUT_STRIDES:
        raise ValueError(f"ejected for {shape_text} only (inputs of sizes {{INPUT_SIZES}}, "
                         f"strides {{INPUT_STRIDES}}); got sizes {{sizes}}, strides {{strides}}")
    device = inputs[0].device
{_indent(launcher)}
'''
    return EjectedModule(text, leftover)


def input_names(code: str) -> list[str]:
    """The graph inputs' names, from `arg0_1, arg1_1, = args`: the launcher's parameters."""
    for line in call_body(code):
        if line.strip().endswith("= args"):
            return [n.strip() for n in line.split("=")[0].split(",") if n.strip()]
    raise NothingToEject("the compiled graph takes no tensor input")


def _imports(leftover: tuple[str, ...]) -> list[str]:
    imports = ["import os", "", "import torch", "import triton", "import triton.language as tl",
               _LIBDEVICE]
    if leftover:  # no own version of these: import Inductor's (plain @triton.jit functions)
        imports.append("from torch._inductor.runtime import triton_helpers  # "
                       + ", ".join(leftover) + ": Inductor's own @triton.jit helpers")
    return imports


def input_layouts(code: str) -> tuple[tuple, tuple]:
    """Each graph input's (sizes, strides), from the wrapper's assert_size_stride checks."""
    found = re.findall(r"assert_size_stride\((\w+), (\([^()]*\)), (\([^()]*\))", code)
    sizes = tuple(_int_tuple(size) for _, size, _ in found)
    return sizes, tuple(_int_tuple(stride) for _, _, stride in found)


def _int_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(v) for v in re.findall(r"\d+", text))


def _indent(lines: list[str]) -> str:
    return "\n".join("    " + line for line in lines)


def _config_text(config: LaunchConfig) -> str:
    blocks = ", ".join(f"{k}={v}" for k, v in config.blocks.items())
    return f"{blocks + ', ' if blocks else ''}num_warps={config.num_warps}"
