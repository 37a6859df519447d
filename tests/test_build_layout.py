"""The split build's C++ reading (build/declarations.py) and layout (build/layout.py): what
is split, what is not, and what is read from where. Pure text: no compiler runs here (the
builds themselves are in test_build.py)."""

from __future__ import annotations

import pytest

from gpubench.build.declarations import (
    blank_noncode,
    exported_declarations,
    holds_code,
    included_headers,
)
from gpubench.build.layout import FRONTEND, MODULE_FILE, TENSOR, binding_prelude, plan_layout

BINDING = """// square_binding.cpp
#include <gpubench/binding.h>

cudaError_t square_launch(const void* x, void* y, int64_t n, int dtype, cudaStream_t s);

void square(at::Tensor x, at::Tensor out) {
  TORCH_CHECK(out.numel() == x.numel(), "out has ", out.numel(), " elements {");
  square_launch(x.data_ptr(), out.data_ptr(), x.numel(), 0, nullptr);
}
"""


def test_a_lean_binding_is_split_and_starts_with_the_tensor_header():
    layout = plan_layout([BINDING], ("square",), implicit_headers=False)
    assert layout.split and layout.binding and layout.prelude == TENSOR
    assert "void square(at::Tensor x, at::Tensor out);" in layout.module_text
    assert 'm.def("square", torch::wrap_pybind_function(square), "square");' in \
        layout.module_text


def test_declarations_keep_qualified_types_defaults_and_references():
    text = ("#include <vector>\n/* std::vector<at::Tensor> f(int); */\n"
            "std::vector<at::Tensor> f(const at::Tensor& a, int64_t n = 3,\n"
            "                          c10::optional<at::Tensor> b = c10::nullopt) {\n"
            "  return {f(a, n, b)};\n}\nvoid g() { f(x); }\n")
    assert exported_declarations([text], ("f",)) == [
        "std::vector<at::Tensor> f(const at::Tensor& a, int64_t n = 3, "
        "c10::optional<at::Tensor> b = c10::nullopt);"]


def test_a_declaration_and_its_definition_agree_and_count_once():
    text = "void f(at::Tensor x);\n// later\nvoid f(at::Tensor x) { }\n"
    assert exported_declarations([text], ("f",)) == ["void f(at::Tensor x);"]


@pytest.mark.parametrize("text", [
    "namespace ops { void f(at::Tensor x) {} }",  # not at the top level
    "static void f(at::Tensor x) {}",  # no linkage outside its file
    "inline void f(at::Tensor x) {}",
    "template <typename T> void f(T x) {}",
    "void f(int x) {}\nvoid f(double x) {}",  # overloaded: pybind11 could not take it
    'extern "C" { void f(int x) {} }',
    "const char* s = R\"(f(\";\nvoid f(int x) {}",  # a raw string: not read
    "void f(int x) {}\nPYBIND11_MODULE(m, mod) { mod.def(\"f\", &f); }",  # binds itself
    "int y = 2;",  # f is not there at all
])
def test_anything_in_doubt_is_not_split(text):
    assert exported_declarations([text], ("f",)) is None
    layout = plan_layout([text], ("f",), implicit_headers=False)
    assert not layout.split and layout.prelude == FRONTEND


def test_load_inline_defaults_are_never_split():
    layout = plan_layout([BINDING], ("square",), implicit_headers=True)
    assert not layout.split and layout.prelude == FRONTEND


def test_a_declaration_only_source_needs_no_translation_unit_of_its_own():
    """The seed style: the wrapper is in the .cu, the .cpp only declares it."""
    layout = plan_layout(["torch::Tensor f(torch::Tensor x);"], ("f",), implicit_headers=False)
    assert layout.split and not layout.binding
    assert "torch::Tensor f(torch::Tensor x);" in layout.module_text
    assert "namespace torch { using namespace at; }" in layout.module_text


@pytest.mark.parametrize("texts, prelude", [
    ([BINDING], TENSOR),
    (["#include <torch/extension.h>\nvoid f(at::Tensor x) {}"], FRONTEND),
    (["#include <torch/torch.h>\nvoid f(at::Tensor x) {}"], FRONTEND),
    # code that includes nothing relies on load_inline's implicit torch/extension.h
    (["void f(torch::Tensor x) { x.zero_(); }"], FRONTEND),
    (["#include <ATen/Dispatch.h>\n#include <ATen/core/Tensor.h>\nvoid f(at::Tensor x) {}"],
     TENSOR),
])
def test_the_binding_starts_with_the_frontend_only_when_it_asks_for_it(texts, prelude):
    assert binding_prelude(texts) == prelude


def test_blanking_keeps_positions_and_newlines():
    text = 'int a; // c\n#define X \\\n  1\nconst char* s = "}{";\n/* a\n b */ int b;\n'
    blanked = blank_noncode(text)
    assert len(blanked) == len(text) and blanked.count("\n") == text.count("\n")
    assert "}" not in blanked and "define" not in blanked and "int b;" in blanked
    assert blank_noncode("/* never closed") is None


def test_includes_and_code():
    assert included_headers(BINDING) == ["gpubench/binding.h"]
    assert included_headers('#  include "local.h"\n') == ["local.h"]
    assert holds_code(BINDING) and not holds_code("void f(at::Tensor x);  // {")


def test_the_module_file_name_is_not_a_user_file_name():
    """The fallback recognizes a failure of gpubench's module file by its name."""
    assert MODULE_FILE.startswith("gpubench_")


def test_comment_edits_that_add_no_line_keep_the_key_and_others_change_it(tmp_path):
    from gpubench.build.key import content_key, toolchain_facts
    from gpubench.build.sources import BuildRequest

    folder = tmp_path / "fam"
    folder.mkdir()
    source = folder / "k.cpp"
    request = BuildRequest("fam", folder, (), ("k.cpp",), ("f",))
    tools = toolchain_facts(False)

    def key(text: str) -> str:
        source.write_text(text)
        return content_key(request, tools)

    base = key('#define N 4 // four\nint f() { return N; } /* end */\nconst char* s = "// x";\n')
    assert key('#define N 4 // FOUR!\nint f() { return N; } /* fin */\nconst char* s = "// x";\n') \
        == base
    assert key('#define N 4 // four\nint f() { return N; } /* end */\nconst char* s = "// x";\n'
               '\n// a comment added at the end: no line above moves\n') == base
    changed = ('#define N 5 // four\nint f() { return N; } /* end */\nconst char* s = "// x";\n',
               '#define N 4 // four\nint f() { return N; } /* end */\nconst char* s = "// y";\n',
               '// a new line\n#define N 4 // four\nint f() { return N; } /* end */\n'
               'const char* s = "// x";\n')
    assert all(key(text) != base for text in changed)  # code, a literal, the line numbers


def test_a_cu_with_torch_headers_gets_a_hint_and_a_plain_one_none():
    from gpubench.build.layout import slow_build_hint

    assert slow_build_hint(["#include <gpubench/dispatch.cuh>\n__global__ void k() {}"],
                           False) is None
    hint = slow_build_hint(["#include <torch/extension.h>\n__global__ void k() {}"], False)
    assert "torch/extension.h" in hint and "three times" in hint
    assert "load_inline's default" in slow_build_hint(["__global__ void k() {}"], True)
