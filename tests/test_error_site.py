"""Errors at their line (records/error_site.py): the user's frame among gpubench's, torch's
and Triton's; Triton's compile errors and TORCH_CHECK's file:line; compiler output; how a
row keeps and shows it; one name per status (BUILD ERROR), old records included."""

import ast
import importlib.util
import traceback
from pathlib import Path

import pytest

from gpubench import errors
from gpubench.build.diagnostics import summarize_compiler_output
from gpubench.records import error_site as S
from gpubench.records import result as R
from gpubench.records.build_info import BuildInfo
from gpubench.records.features.error_site import ERROR_SITE
from gpubench.records.point import PointKey
from gpubench.records.shape import Shape
from gpubench.records.worker_result import WorkerResult
from gpubench.report.live import failure_logs, failure_summary
from gpubench.report.table import group_notes, table_layout
from gpubench.tools.driver import raise_build_failure

HELPER = '''\
def outer(x):
    return inner(x)


def inner(x):
    raise ValueError(f"bad {x}")  # line 6
'''


def _load(path: Path):
    spec = importlib.util.spec_from_file_location(f"user_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _raised(fn, *args) -> BaseException:
    try:
        fn(*args)
    except BaseException as exc:
        return exc
    raise AssertionError("did not raise")


def test_the_innermost_frame_in_the_family_folder_is_the_site(tmp_path):
    (tmp_path / "helpers.py").write_text(HELPER)
    exc = _raised(_load(tmp_path / "helpers.py").outer, 3)
    report = S.report_exception(exc, [tmp_path], cwd=str(tmp_path))
    assert report.site == S.ErrorSite("helpers.py", 6,
                                      'raise ValueError(f"bad {x}")  # line 6')
    assert report.message == "ValueError: bad 3"
    assert S.with_site(report.message, report.site) == "helpers.py:6: ValueError: bad 3"
    assert "Traceback (most recent call last)" in report.log and "outer" in report.log
    # outside the working folder the path stays absolute; outside the roots there is no site
    assert S.report_exception(exc, [tmp_path], cwd="/elsewhere").site.file == \
        str(tmp_path / "helpers.py")
    assert S.report_exception(exc, [tmp_path / "other"]).site is None


def test_an_error_raised_from_another_is_placed_at_the_inner_ones_line(tmp_path):
    """Triton's interpreter re-raises a kernel's error from gpubench-free frames as an
    InterpreterError `from` it: the kernel's own line is in the cause's traceback."""
    (tmp_path / "helpers.py").write_text(HELPER)
    module = _load(tmp_path / "helpers.py")

    def wrapper():
        try:
            module.outer(1)
        except ValueError as exc:
            raise RuntimeError(repr(exc)) from exc

    report = S.report_exception(_raised(wrapper), [tmp_path], cwd=str(tmp_path))
    assert report.site.location() == "helpers.py:6"
    assert report.message == "ValueError: bad 1"
    assert "direct cause" in report.log


def test_user_frame_is_the_last_frame_under_a_root(tmp_path):
    frames = [traceback.FrameSummary(str(tmp_path / "spec.py"), 3, "f"),
              traceback.FrameSummary("/site-packages/torch/x.py", 9, "g"),
              traceback.FrameSummary(str(tmp_path / "sub" / "k.py"), 7, "h"),
              traceback.FrameSummary("/site-packages/triton/core.py", 44, "i")]
    assert S.user_frame(frames, [tmp_path]).lineno == 7
    assert S.user_frame(frames[1:2], [tmp_path]) is None
    assert not S.is_under("<string>", [tmp_path])


def test_a_torch_check_is_placed_at_its_cpp_line(tmp_path):
    source = tmp_path / "add.cu"
    source.write_text("// add\n\nTORCH_CHECK(x.dim() == 5, \"need five dims\");\n")
    text = (f"need five dims\nException raised from f at {source}:3 (most recent call "
            f"first):\nC++ CapturedTraceback:\n#4 ?? from libc10.so:1")
    exc = RuntimeError(text)
    report = S.report_exception(exc, [tmp_path], cwd=str(tmp_path))
    assert report.site == S.ErrorSite("add.cu", 3, 'TORCH_CHECK(x.dim() == 5, "need five dims");')
    assert report.message == "RuntimeError: need five dims"
    torch_own = "x\nException raised from g at /pytorch/aten/src/ATen/Foo.cpp:12 (most"
    assert S.cpp_site(torch_own, [tmp_path]) is None


class FakeCompilationError(Exception):
    """What Triton's CompilationError carries: the kernel's source from its `def`, the
    failing AST node (line within that source) and the message."""

    def __init__(self, src, lineno, error_message):
        super().__init__(f"at {lineno}:4:\n{src}\n    ^\n{error_message}")
        self.src, self.error_message = src, error_message
        self.node = ast.parse("x").body[0]
        self.node.lineno = lineno


def test_a_triton_compile_error_is_placed_in_the_kernel_file(tmp_path):
    (tmp_path / "kernel.py").write_text(
        "import triton\n\n\n@triton.jit\ndef k(x_ptr, n):\n    i = tl.arange(0, 4)\n"
        "    y = i + tl.arange(0, 8)\n")
    src = "def k(x_ptr, n):\n    i = tl.arange(0, 4)\n    y = i + tl.arange(0, 8)"
    exc = FakeCompilationError(src, 3, "ValueError('incompatible dimensions')")
    report = S.report_exception(exc, [tmp_path], cwd=str(tmp_path))
    assert report.site == S.ErrorSite("kernel.py", 7, "y = i + tl.arange(0, 8)")
    assert report.message == "FakeCompilationError: ValueError('incompatible dimensions')"
    assert S.source_start("a\n    def k(x):\n        return 1\n", "def k(x):\n    return 1") == 2


@pytest.mark.parametrize("output, first", [
    ("In file included from /fam/add.cpp:3:\n/fam/helper.h:5:10: error: 'foo' was not "
     "declared in this scope\n    5 |   return foo;", "/fam/helper.h:5: 'foo' was not declared"),
    ('/fam/k.cuh(12): error: identifier "bar" is undefined\n   bar += 1;\n   ^',
     '/fam/k.cuh:12: identifier "bar" is undefined'),
    ('/fam/k.cu(7): error #20-D: identifier "x" is undefined', '/fam/k.cu:7: identifier "x"'),
    ("/fam/k.cu(1): catastrophic error: cannot open source file \"nope.h\"",
     "/fam/k.cu:1: cannot open source file"),
    ("spec.py: cuda_sources[0]:4:3: error: expected ';'", "spec.py: cuda_sources[0]:4: expected"),
])
def test_compiler_errors_of_gcc_and_nvcc_are_read_at_their_file_and_line(output, first):
    assert summarize_compiler_output(output)[0].startswith(first)


def test_a_build_error_is_placed_at_its_first_errors_line(tmp_path):
    (tmp_path / "add.cpp").write_text("#include <x>\nint f() { return undeclared; }\n")
    report = S.report_compile_error("add.cpp:2: 'undeclared' was not declared; other.cpp:1: x",
                                    "the whole log", cwd=str(tmp_path))
    assert report.site == S.ErrorSite("add.cpp", 2, "int f() { return undeclared; }")
    assert report.evidence().log == "the whole log"
    assert S.report_compile_error("link error: undefined symbol: f").site is None
    label = S.report_compile_error("spec.py: cuda_sources[0]:4: expected ';'", cwd=str(tmp_path))
    assert label.site == S.ErrorSite("spec.py: cuda_sources[0]", 4, "")


def _row(status, error=None, site=None, build=None):
    row = R.Result(PointKey("fam", "v", "float32", Shape({"n": 8}), "cold"), "cuda", status,
                   error=error, build=build or BuildInfo())
    return row.with_extra(ERROR_SITE, site) if site else row


def test_a_failed_row_shows_its_source_line_and_keeps_its_log_in_results_json():
    site = {"file": "add.cpp", "line": 7, "source": "out.copy_(x + nope);", "log": "FULL LOG"}
    row = _row(R.BUILD_ERROR, "add.cpp:7: 'nope' was not declared", site,
               BuildInfo(compile_s=12.5, cached=False))
    assert group_notes([row]) == ["v: add.cpp:7: 'nope' was not declared\n    out.copy_(x + nope);"]
    assert failure_summary([row])[0].endswith("\n    out.copy_(x + nope);")
    assert failure_logs([row]) == ["--- BUILD ERROR fam/v n=8 float32:\nFULL LOG"]
    _, cells, _ = table_layout([row])
    assert cells[0]["check"].plain == "BUILD ERROR" and cells[0]["median"] == "-"
    assert cells[0]["build"] == "12 s"  # its build seconds, no time
    back = R.Result.from_dict(row.to_dict())
    assert back.extra("error_site") == site and back.status == R.BUILD_ERROR
    # a build that failed earlier in the worker took no time now: no "0.0 ns"
    again = _row(R.BUILD_ERROR, "x", build=BuildInfo(compile_s=None, cached=False))
    assert table_layout([again])[1][0]["build"] == "-"


def test_an_old_compile_error_record_loads_as_a_build_error():
    old = _row(R.BUILD_ERROR, "add.cpp:7: x").to_dict()
    old["status"] = "compile_error"
    old.pop("error_site")
    loaded = R.Result.from_dict(old)
    assert loaded.status == R.BUILD_ERROR and not R.exit_status([loaded])
    assert R.status_label(loaded.status) == "BUILD ERROR"
    assert R.status_label("something_new") == "SOMETHING_NEW"


def test_a_worker_result_carries_its_error_site_across_the_pipe():
    sent = WorkerResult(R.ERROR, "k.py:3: ValueError: x",
                        error_site=S.SiteEvidence("k.py", 3, "s", "tb"))
    assert WorkerResult.from_dict(sent.to_dict()) == sent


def test_a_tool_names_the_build_error_of_its_variant():
    worker = {"status": "build_error", "error": "add.cpp:7: 'nope' was not declared",
              "build": {"log": "/w/build-error.log"},
              "error_site": {"file": "add.cpp", "line": 7, "source": "x + nope;"}}
    with pytest.raises(errors.BuildFailed) as raised:
        raise_build_failure(worker)
    assert raised.value.exit_code == errors.EXIT_VARIANT_FAILED
    assert str(raised.value) == ("the variant does not build: add.cpp:7: 'nope' was not "
                                 "declared\n    x + nope;\n(compiler log: /w/build-error.log)")
    raise_build_failure({"status": "error", "error": "x"})  # not a build error: nothing
    raise_build_failure([{"status": "build_error"}])  # a list (ncu-check): not this


def test_a_one_shot_worker_reports_a_build_failure_that_the_tool_driver_names(tmp_path):
    """`gpubench ncu`/`sanitize`/`nsys` on a variant that does not build: the one-shot
    worker writes BUILD ERROR to its result file, and the driver raises it (exit 1) before
    reading the tool's "the application returned an error code (1)"."""
    import json
    from types import SimpleNamespace

    from gpubench.build.diagnostics import CompileError
    from gpubench.run.worker.process import _failure

    source, log = tmp_path / "add.cpp", tmp_path / "build-error.log"
    source.write_text("#include <x>\nint x = nope;\n")
    log.write_text("the whole compiler log")
    built = _failure(CompileError(f"{source}:2: 'nope' was not declared", log, 3.0), None)
    assert built.status == R.BUILD_ERROR and built.build.compile_s == 3.0
    assert built.error_site.log == "the whole compiler log"
    with pytest.raises(errors.BuildFailed, match=r"add.cpp:2: 'nope' was not declared\n    "
                                                 r"int x = nope;\n\(compiler log: .*build-"):
        raise_build_failure(json.loads(json.dumps(built.to_dict())))
    (tmp_path / "helpers.py").write_text(HELPER)
    raised = _raised(_load(tmp_path / "helpers.py").outer, 2)
    failed = _failure(raised, SimpleNamespace(family_dir=str(tmp_path)))
    assert failed.status == R.ERROR and "helpers.py:6: ValueError: bad 2" in failed.error
