"""How one extension's sources become translation units, and which header comes first in
the binding's (the one a precompiled header can stand in for).

Why split at all (benchmarks/build_phases.py, on the H100 machine's 16-core host):
load_inline puts the binding and pybind11's module definition in one main.cpp, so every
edit of the binding recompiles pybind11 and torch's casters. The same small binding takes

    torch/extension.h first, module definition in it      ~12 s at -O1
    torch/csrc/utils/pybind.h first, module definition     5.7 s   (3.8 s with its PCH)
    ATen/core/Tensor.h only, no pybind11                   2.5 s   (0.7 s with its PCH)

so gpubench compiles pybind11's part once per extension in a file of its own (`MODULE_FILE`:
the declarations of the exported functions and the module definition, ~5 s, beside nvcc and
the binding on the first build, never again), and the binding alone after each edit.

Split only when nothing is in doubt (build/declarations.py reads the declarations; never for
`implicit_headers` requests, which ask for load_inline's defaults); otherwise one main.cpp,
as load_inline builds it, torch/extension.h first. A split binding's first header:
- torch/extension.h when a source includes the C++ frontend (torch/extension.h, torch.h,
  all.h, python.h), or when a source with code includes nothing (it relies on
  load_inline's implicit torch/extension.h);
- ATen/core/Tensor.h otherwise — what gpubench/binding.h and a lean binding start with.
Whatever it is, the sources' own includes follow it, so they compile as written.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpubench.build.declarations import exported_declarations, holds_code, included_headers

FRONTEND = "torch/extension.h"
TENSOR = "ATen/core/Tensor.h"
# Headers that pull in torch's whole C++ frontend (nn, optim, data, jit): a binding that
# includes one is compiled after torch/extension.h, whose PCH then applies.
_FRONTEND_HEADERS = frozenset({"torch/extension.h", "torch/torch.h", "torch/all.h",
                               "torch/python.h"})
MODULE_FILE = "gpubench_module.cpp"
# What the module file needs: pybind11 and torch's casters (pybind.h), torch's error
# translation (Exceptions.h: wrap_pybind_function, as load_inline uses), and torch:: as a
# name for at:: in declarations copied from sources that spell torch::Tensor (torch/types.h
# says the same).
_MODULE_PRELUDE = ("#include <torch/csrc/utils/pybind.h>\n"
                   "#include <torch/csrc/Exceptions.h>\n"
                   "namespace torch { using namespace at; }\n")


@dataclass(frozen=True)
class Layout:
    """The translation units of one build. `module_text` is None for one translation unit
    (load_inline's main.cpp: prelude, sources, module definition); otherwise it is
    gpubench's module file, and the sources compile without pybind11 — in a file of their
    own when `binding` (they hold code), or not at all (declarations only, the definitions
    being in the .cu)."""

    prelude: str
    module_text: str | None = None
    binding: bool = True

    @property
    def split(self) -> bool:
        return self.module_text is not None


def plan_layout(cpp_texts: list[str], functions: tuple[str, ...], implicit_headers: bool,
                allow_split: bool = True) -> Layout:
    """The layout for sources with these texts (as written, before any #line directive)."""
    if not allow_split or implicit_headers or not functions:
        return Layout(FRONTEND)  # load_inline's main.cpp: the module definition needs pybind11
    declarations = exported_declarations(cpp_texts, functions)
    if declarations is None:
        return Layout(FRONTEND)
    return Layout(binding_prelude(cpp_texts), module_text(declarations, functions),
                  binding=any(holds_code(text) for text in cpp_texts))


def binding_prelude(cpp_texts: list[str]) -> str:
    """The header a split binding starts with (see the module docstring)."""
    for text in cpp_texts:
        headers = included_headers(text)
        if _FRONTEND_HEADERS.intersection(headers) or (holds_code(text) and not headers):
            return FRONTEND
    return TENSOR


def module_text(declarations: list[str], functions: tuple[str, ...]) -> str:
    """gpubench's module file: the same module definition load_inline writes (torch's
    error translation around each function), after the declarations it needs."""
    defs = "".join(f'  m.def("{name}", torch::wrap_pybind_function({name}), "{name}");\n'
                   for name in functions)
    return (f"{_MODULE_PRELUDE}\n" + "\n".join(declarations)
            + f"\n\nPYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {{\n{defs}}}\n")


def slow_build_hint(cuda_texts: list[str], implicit_headers: bool) -> str | None:
    """What to say after a fresh build whose .cu includes torch's headers: nvcc then parses
    them three times over (cudafe++, cicc, the host compiler: 24 + 23 + 19 s for
    torch/extension.h on an H100 machine's host, benchmarks/build_phases.py), ~35-60 s a
    build that the standard layout does in ~6 s. None when the .cu files include none."""
    heavy = sorted({header for text in cuda_texts for header in included_headers(text)
                    if header in _FRONTEND_HEADERS or header.startswith(("torch/", "ATen/"))})
    if not heavy and not implicit_headers:
        return None
    what = ", ".join(heavy) if heavy else "torch/types.h (load_inline's default)"
    return (f"the .cu includes {what}: nvcc parses torch's headers three times over, most "
            f"of this build and of every rebuild of the .cu; kernels in a .cu without torch "
            f"headers and the wrapper in a .cpp build in seconds (docs/guide.md, the edit loop)")
