"""`gpubench sanitize`, `run --sanitize` and the one tool driver, without a GPU: the recorded
H200 run of examples/sanitize_demo read back, the marks a run gets, the CLI's refusals, and
the driver's timeout and failure classes on stand-in tools."""

import gzip
import os
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from rich.console import Console

from conftest import FIXTURES, REPO, has_cuda
from gpubench import errors
from gpubench.commands.sanitize import chosen_tools
from gpubench.records import result as R
from gpubench.records.point import PointKey
from gpubench.records.shape import Shape
from gpubench.report.table import group_table
from gpubench.tools import driver as tool_driver
from gpubench.tools.sanitizer.command import MEMCHECK_PADDING, sanitizer_argv
from gpubench.tools.sanitizer.log import VariantReport, read_xml
from gpubench.tools.sanitizer.run_pass import mark_result, run_mark
from gpubench.tools.sanitizer.task import Sanitized
from gpubench.tools.sanitizer.view import sanitize_view

DEMO = FIXTURES / "sanitizer" / "h200-demo"
GOLDEN = REPO / "tests" / "golden"
# The path the recorded run's builds gave buggy.cu (#line): the device's checkout.
RECORDED_PATH = "/work/main/examples/sanitize_demo/buggy.cu"
BUGGY = REPO / "examples" / "sanitize_demo" / "buggy.cu"


def recorded(variant: str, tool: str):
    path = DEMO / f"sanitize_demo-{variant}-65536-{tool}.xml"
    text = (gzip.decompress(Path(f"{path}.gz").read_bytes()).decode()
            if not path.exists() else path.read_text())
    return read_xml(text, tool)


def demo_reports() -> list[VariantReport]:
    sources = {RECORDED_PATH: BUGGY.read_text()}
    return [VariantReport("oob", (recorded("oob", "memcheck"),), sources),
            VariantReport("race", (recorded("race", "racecheck"),), sources),
            VariantReport("uninit", (recorded("uninit", "initcheck"),), sources),
            VariantReport("clean", (recorded("clean", "memcheck"),
                                    recorded("clean", "synccheck")), sources)]


def test_the_recorded_demo_run_finds_the_three_bugs_at_their_lines():
    lines = BUGGY.read_text().splitlines()
    found = {r.variant: [f for log in r.logs for f in log.findings] for r in demo_reports()}
    assert found["clean"] == []
    (oob,) = {(f.kind, f.line) for f in found["oob"]}
    assert oob[0] == "out-of-bounds global write" and "y[i] = 2.0f" in lines[oob[1] - 1]
    (race,) = found["race"][:1]
    assert race.kind.startswith("shared-memory race")
    assert [lines[a.line - 1].strip()[:7] for a in race.accesses] == ["tile[t]", "if (bas"]
    assert {f.line for f in found["uninit"]} == {lines.index(
        next(x for x in lines if "float junk = scratch[i];" in x)) + 1}
    assert len(found["uninit"]) == 1000  # the print limit: every thread of the bad launch


@pytest.mark.parametrize("width", [80, 140])
def test_the_demo_view_golden(width):
    with open(os.devnull, "w") as sink:
        console = Console(width=width, record=True, color_system=None, file=sink)
        console.print(sanitize_view(demo_reports()))
        text = console.export_text()
    assert max(len(line) for line in text.splitlines()) <= width
    assert "…" not in text and "buggy.cu:9" in text and "buggy.cu:25" in text
    golden = GOLDEN / f"sanitize_demo_{width}.txt"
    if os.environ.get("GPUBENCH_UPDATE_GOLDEN"):
        golden.write_text(text)
    assert text == golden.read_text()


def result(variant: str, status: str = R.OK) -> R.Result:
    return R.Result(key=PointKey("sanitize_demo", variant, "float32", Shape({"n": 65536}),
                                 "cold"), kind="cuda", status=status)


def test_run_sanitize_marks_the_rows_memcheck_found_something_in():
    oob = Sanitized("oob", VariantReport("oob", (recorded("oob", "memcheck"),)))
    mark = run_mark(oob)
    assert mark["findings"] == 1 and mark["rows"][0]["kind"] == "out-of-bounds global write"
    marked = mark_result(result("oob"), mark)
    (warning,) = marked.warnings
    assert warning.code == "sanitizer" and "oob_kernel at buggy.cu:" in warning.message
    assert "gpubench sanitize sanitize_demo --variant oob" in warning.remedy
    assert R.Result.from_dict(marked.to_dict()).sanitizer == mark  # saved and loaded back
    clean = mark_result(result("clean"), run_mark(Sanitized("clean", VariantReport(
        "clean", (recorded("clean", "memcheck"),)))))
    assert clean.warnings == () and clean.sanitizer["findings"] == 0
    failed = mark_result(result("race"), run_mark(Sanitized(
        "race", error=errors.ProfilerTimeout("ran past 600 s"))))
    assert "memcheck could not run: ran past 600 s" in failed.warnings[0].message
    with open(os.devnull, "w") as sink:
        console = Console(width=160, record=True, color_system=None, file=sink)
        console.print(group_table([marked, clean]))
        text = console.export_text()
    assert "PASS*" in text and "*: memcheck (--sanitize) found errors" in text


def test_memcheck_runs_with_padding_and_every_tool_saves_xml():
    argv = sanitizer_argv("cs", "memcheck", "out.xml", ["python", "-m", "x"])
    assert argv[:5] == ["cs", "--tool", "memcheck", "--padding", str(MEMCHECK_PADDING)]
    assert "--xml" in argv and argv[argv.index("--save") + 1] == "out.xml"
    assert "--padding" not in sanitizer_argv("cs", "racecheck", "o.xml", ["t"])
    assert chosen_tools(()) == ("memcheck",)
    assert chosen_tools(("all",)) == ("memcheck", "racecheck", "initcheck", "synccheck")
    assert chosen_tools(("initcheck,memcheck",)) == ("memcheck", "initcheck")
    with pytest.raises(errors.UsageError, match="did you mean: racecheck"):
        chosen_tools(("racechek",))


# ---------------------------------------------------------------- the CLI without a GPU


def test_sanitize_without_the_tool_or_a_gpu_says_so(gpubench, tmp_path):
    """Without a GPU that comes first (installing the tool would not help, issue 52)."""
    path = "/usr/bin:/bin"
    missing = gpubench("sanitize", "square", env={"PATH": path})
    if has_cuda():
        assert missing.code == 6 and "compute-sanitizer not found" in missing.output
    else:
        assert missing.code == 5 and "no CUDA GPU" in missing.output
        assert "install" not in missing.output
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "compute-sanitizer").write_text("#!/bin/sh\nexit 0\n")
    (fake / "compute-sanitizer").chmod(0o755)
    no_gpu = gpubench("sanitize", "square", env={"PATH": f"{fake}:{path}"})
    assert no_gpu.code == 5 and "no CUDA GPU" in no_gpu.output
    bad = gpubench("sanitize", "square", "--tool", "leakcheck")
    assert bad.code == 2 and "unknown compute-sanitizer tool" in bad.output
    for done in (missing, no_gpu, bad):
        assert "Traceback" not in done.output


def test_run_sanitize_on_the_cpu_says_it_skipped(gpubench):
    done = gpubench("run", "vector_add", "--variants", "torch", "--sizes", "256", "--device",
                    "cpu", "--warmup", "1", "--min-time", "1", "--max-time", "20",
                    "--sanitize")
    assert done.code == 0, done.output
    assert "--sanitize: skipped" in done.output and "no CUDA GPU" in done.output


# ---------------------------------------------------------------- the one driver


class StandIn(tool_driver.Tool):
    """A tool that runs a shell script instead of the target."""

    name = "standin"

    def __init__(self, script: str) -> None:
        self.script = script

    def argv(self, executable, stem, target):
        return ["sh", "-c", self.script]

    def env(self, stem):
        return dict(os.environ)

    def raise_problems(self, completed):
        if "ERR_NVGPUCTRPERM" in completed.output:
            raise errors.ProfilerPermission("no permission")


def test_the_driver_kills_the_whole_tree_on_timeout(tmp_path):
    marker = tmp_path / "child.pid"
    script = f"sleep 60 & echo $! > {marker}; wait"
    start = time.monotonic()
    with pytest.raises(errors.ProfilerTimeout, match="standin ran past 1 s"):
        tool_driver.run_target(StandIn(script), "x", tmp_path / "t", [], tmp_path / "r.json",
                               timeout_s=1)
    assert time.monotonic() - start < 20
    child = int(marker.read_text())
    for _ in range(50):
        if not Path(f"/proc/{child}").exists():
            break
        time.sleep(0.1)
    assert not Path(f"/proc/{child}").exists(), "the tool's child outlived the timeout"


def test_the_driver_classifies_failures_and_keeps_them_with_their_variant(tmp_path):
    permission = StandIn("echo '==ERROR== ERR_NVGPUCTRPERM'")
    with pytest.raises(errors.ProfilerPermission):
        tool_driver.run_target(permission, "x", tmp_path / "p", [], tmp_path / "r.json", 10)
    result_file = tmp_path / "w.json"
    ok = StandIn(f"echo '{{\"status\": \"error\", \"error\": \"boom\"}}' > {result_file}")
    run = tool_driver.run_target(ok, "x", tmp_path / "w", [], result_file, 10)
    with pytest.raises(errors.ProfilerError, match="the profiled worker failed: boom"):
        run.raise_if_worker_failed()

    def point(name):
        return SimpleNamespace(variant=SimpleNamespace(name=name), task=lambda _: name)

    def attempt(task):
        if task == "slow":
            raise errors.ProfilerTimeout("slow")
        return task

    outcomes = tool_driver.each_point([point("a"), point("slow"), point("b")], attempt,
                                      lambda name, error: (name, type(error).__name__),
                                      stop_after_timeout=True)
    assert outcomes == ["a", ("slow", "ProfilerTimeout"), ("b", "ProfilerTimeout")]
    going_on = tool_driver.each_point([point("slow"), point("b")], attempt,
                                      lambda name, error: name)
    assert going_on == ["slow", "b"]

