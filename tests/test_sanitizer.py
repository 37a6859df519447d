"""compute-sanitizer output read and shown: the parser on every recorded H200 fixture
(tests/fixtures/sanitizer/, against golden JSON), cut and location-less files, the mapping to
the user's source lines, and the view at 80 and 160 columns (regenerate the goldens:
GPUBENCH_UPDATE_GOLDEN=1)."""

from __future__ import annotations

import ast
import json
import os
import re
from dataclasses import asdict

import pytest
from rich.console import Console

from conftest import FIXTURES, REPO
from gpubench.tools.sanitizer.log import (
    SanitizerLog,
    VariantReport,
    error_summary,
    parse_xml,
    read_xml,
    source_line,
    summarize,
)
from gpubench.tools.sanitizer.view import findings_to_json, sanitize_view

SANITIZER = FIXTURES / "sanitizer"
GOLDEN = REPO / "tests" / "golden"
XML = {"san_memcheck_oob.xml": "memcheck", "san_racecheck_race.xml": "racecheck",
       "san_initcheck_uninit_first20.xml": "initcheck"}
# The console text's own totals (the race: one reported race of 1024 hazards).
TEXT_TOTALS = {"san_memcheck_oob_no_caching.txt": 3, "san_memcheck_oob_caching_allocator.txt": 0,
               "san_memcheck_clean.txt": 0, "san_racecheck_race.txt": 1,
               "san_initcheck_uninit.txt": 65536}
# Where the tool found prog.py's cuda.cu (load_inline's build folder on the H200).
BUILT = "/root/.cache/torch_extensions/py312_cu130/fixture_prog/cuda.cu"


def fixture(name: str) -> str:
    return (SANITIZER / name).read_text()


def check_golden(text: str, name: str) -> None:
    golden = GOLDEN / name
    if os.environ.get("GPUBENCH_UPDATE_GOLDEN"):
        golden.write_text(text)
    assert text == golden.read_text()


def cuda_cu() -> str:
    """prog.py's cuda.cu as load_inline wrote it: its three implicit includes, then the CUDA
    text (read out of prog.py, which imports torch and cannot be run here)."""
    tree = ast.parse(fixture("prog.py.txt"))
    cuda = next(node.value.value for node in tree.body if isinstance(node, ast.Assign)
                and getattr(node.targets[0], "id", "") == "CUDA")
    return "\n".join(["#include <torch/types.h>", "#include <cuda.h>",
                      "#include <cuda_runtime.h>", cuda])


# ---------------------------------------------------------------- the recorded fixtures


def test_every_fixture_parses_to_its_golden_findings():
    parsed = {}
    for name, tool in XML.items():
        log = read_xml(fixture(name), tool)
        parsed[name] = {"records": len(log.findings), "cut": log.cut,
                        "api_errors": list(log.api_errors),
                        "summary": [asdict(f) for f in summarize(log.findings)]}
    for name in TEXT_TOTALS:
        parsed[name] = {"error_summary": error_summary(fixture(name))}
    check_golden(json.dumps(parsed, indent=1) + "\n", "sanitizer_findings.json")


def test_memcheck_out_of_bounds_write_is_one_row():
    log = read_xml(fixture("san_memcheck_oob.xml"), "memcheck")
    [oob] = summarize(log.findings)
    assert (oob.kind, oob.kernel, oob.file, oob.line, oob.count) == (
        "out-of-bounds global write", "oob_write", BUILT, 14, 1)
    assert (oob.thread, oob.block, oob.pc) == ((0, 0, 0), (256, 0, 0), "0xc0")
    assert oob.detail("size") == "4" and oob.detail("direction") == "write"
    assert oob.detail("address") == "0x7f9754880000"
    # the two failed CUDA calls after the fault are notes, not findings
    assert [re.search(r"call to (\w+)", e)[1] for e in log.api_errors] == [
        "cudaDeviceSynchronize", "cudaGetLastError"]
    assert not log.cut


def test_racecheck_race_keeps_both_accesses_and_the_hazard():
    [race] = parse_xml(fixture("san_racecheck_race.xml"), "racecheck")
    assert (race.kind, race.kernel, race.line, race.count) == (
        "shared-memory race (RAW)", "smem_race", 18, 1024)
    assert [(a.direction, a.line, a.pc) for a in race.accesses] == [
        ("write", 18, "0xa0"), ("read", 19, "0xb0")]
    assert race.thread is None and race.detail("hazard") == "RAW"


def test_initcheck_reads_fold_into_one_row_counting_every_record():
    findings = parse_xml(fixture("san_initcheck_uninit_first20.xml"), "initcheck")
    records = fixture("san_initcheck_uninit_first20.xml").count("<record>")
    assert len(findings) == records == 20
    [row] = summarize(findings)
    assert (row.kind, row.kernel, row.line, row.count) == (
        "uninitialized global read", "read_uninit", 24, records)
    assert (row.thread, row.block) == (findings[0].thread, findings[0].block)


@pytest.mark.parametrize("name", sorted(TEXT_TOTALS))
def test_error_summary_of_the_console_text(name):
    assert error_summary(fixture(name)) == TEXT_TOTALS[name]


def test_error_summary_sums_the_processes_whatever_the_prefix():
    text = "==1== ERROR SUMMARY: 2 errors\n#2 ERROR SUMMARY: 1 error\n"  # --prefix, 2 processes
    assert error_summary(text) == 3


def test_error_summary_absent_when_the_tool_died_first():
    text = fixture("san_memcheck_oob_no_caching.txt")
    assert error_summary(text[:text.index("ERROR SUMMARY")]) is None
    assert error_summary("") is None


def test_an_unknown_tool_is_refused():
    with pytest.raises(ValueError, match="memcheck"):
        read_xml(fixture("san_memcheck_oob.xml"), "leakcheck")


# ---------------------------------------------------------------- damaged and bare files


def cut_inside(text: str, record: int, marker: str) -> str:
    """`text` cut just before `marker` inside its `record`-th <record> (0-based), as a tool
    killed mid-write leaves it."""
    start = [m.start() for m in re.finditer("<record>", text)][record]
    return text[:text.index(marker, start)]


def test_a_file_cut_inside_a_record_keeps_the_complete_records_and_says_so():
    text = fixture("san_initcheck_uninit_first20.xml")
    log = read_xml(cut_inside(text, 11, "<line>"), "initcheck")
    assert log.cut and len(log.findings) == 11
    assert summarize(log.findings)[0].count == 11
    memcheck = read_xml(cut_inside(fixture("san_memcheck_oob.xml"), 0, "<where>"), "memcheck")
    assert memcheck.cut and memcheck.findings == () and memcheck.api_errors == ()


def test_a_complete_file_cut_before_its_closing_tag_is_still_cut():
    text = fixture("san_racecheck_race.xml")
    log = read_xml(text[:text.index("</ComputeSanitizerOutput>")], "racecheck")
    assert log.cut and len(log.findings) == 1


def test_garbage_and_empty_files_are_cut_not_errors():
    text = fixture("san_memcheck_oob.xml")
    broken = text.replace("<api>", "<<api", 1)
    log = read_xml(broken, "memcheck")
    assert log.cut and len(log.findings) == 1
    assert read_xml("", "memcheck") == SanitizerLog("memcheck", (), (), cut=True)


def test_records_without_lineinfo_keep_the_pc():
    # the oob record with <path> and <line> taken out of its <where>, as without -lineinfo
    text = re.sub(r"(<where>\s*<func>oob_write</func>)\s*<path>.*?</path>\s*<line>\d+</line>",
                  r"\1", fixture("san_memcheck_oob.xml"), flags=re.DOTALL)
    [oob] = parse_xml(text, "memcheck")
    assert (oob.kernel, oob.file, oob.line, oob.pc) == ("oob_write", None, None, "0xc0")


def test_a_record_of_unknown_shape_is_named_by_its_text():
    # hand-written (no synccheck recording exists): only <what><text> and a kernel
    text = ("<ComputeSanitizerOutput><record><kind>Hazard</kind><what><text>Barrier error "
            "detected. Divergent thread(s) in warp</text></what><where><func>k</func></where>"
            "</record></ComputeSanitizerOutput>")
    [finding] = parse_xml(text, "synccheck")
    assert (finding.kind, finding.kernel, finding.line) == ("barrier error detected", "k", None)


# ---------------------------------------------------------------- the user's source


def test_source_line_of_a_plain_load_inline_build():
    sources = {"cuda.cu": cuda_cu()}
    assert source_line(BUILT, 14, sources) == ("cuda.cu", 14, "y[i] = 1.0f;")
    assert source_line(BUILT, 18, sources)[2] == "s[threadIdx.x] = threadIdx.x;"
    assert source_line(BUILT, 24, sources)[2] == "if (i < n) y[i] = x[i] * 2.0f;"


def test_source_line_of_gpubench_line_directive_names():
    label = "spec.py: cuda_sources[0]"  # a source given as text (build/diagnostics.py's #line name)
    sources = {label: "__global__ void k() {\n    x[i] = 1;  \n}\n",
               "/work/kernels/add/add.cu": "a\nb\n"}
    assert source_line(label, 2, sources) == (label, 2, "x[i] = 1;")
    # the compiler may join a relative name to its working folder
    assert source_line(f"/tmp/build/{label}", 2, sources) == (label, 2, "x[i] = 1;")
    assert source_line("/work/kernels/add/add.cu", 1, sources) == (
        "/work/kernels/add/add.cu", 1, "a")


def test_source_line_prefers_the_longest_name_and_finds_nothing_else():
    sources = {"cuda.cu": "short\n", "fixture_prog/cuda.cu": "long\n"}
    assert source_line(BUILT, 1, sources) == ("fixture_prog/cuda.cu", 1, "long")
    assert source_line("/x/notcuda.cu", 1, {"cuda.cu": "a\n"}) is None  # not a whole name
    assert source_line(BUILT, 2, sources) is None  # past the end: the file changed
    assert source_line(BUILT, None, sources) is None
    assert source_line(None, 1, sources) is None


# ---------------------------------------------------------------- the view


def reports() -> list[VariantReport]:
    """A variant with every recorded finding (its source known), a clean one, and one
    without sources or -lineinfo whose racecheck was stopped mid-record."""
    logs = tuple(read_xml(fixture(name), tool) for name, tool in XML.items())
    bare = re.sub(r"<path>.*?</path>\s*<line>\d+</line>", "", fixture("san_memcheck_oob.xml"),
                  count=1, flags=re.DOTALL)
    return [VariantReport("fixture_prog", logs, {"cuda.cu": cuda_cu()}),
            VariantReport("clean_copy", (SanitizerLog("memcheck", ()),
                                         SanitizerLog("racecheck", ()))),
            VariantReport("no_lineinfo", (read_xml(bare, "memcheck"), read_xml(cut_inside(
                fixture("san_racecheck_race.xml"), 0, "<destination>"), "racecheck")))]


def render(renderable, width: int) -> str:
    with open(os.devnull, "w") as sink:
        console = Console(width=width, record=True, color_system=None, file=sink)
        console.print(renderable)
        return console.export_text()


# What the tables show of the recorded findings; the notes under them.
IN_CELLS = ("out-of-bounds global write", "cuda.cu:14", "y[i] = 1.0f;", "shared-memory race (RAW)",
            "write: s[threadIdx.x] = threadIdx.x;", "uninitialized global read", "pc 0xc0")
NOTES = ("clean_copy clean: memcheck, racecheck found nothing",
         "no_lineinfo: racecheck's output was cut short", "memcheck also saw 2 failed CUDA calls")


@pytest.mark.parametrize("width", [80, 160])
def test_view_fits_the_terminal(width):
    text = render(sanitize_view(reports()), width)
    check_golden(text, f"sanitize_view_{width}.txt")
    assert all(len(line) <= width for line in text.splitlines())
    assert "…" not in text  # rich's ellipsis: a cut cell
    flat = " ".join(text.split())
    lines = text.splitlines()
    # in the tables, every word whole on some line (cells wrap only at spaces) ...
    for word in " ".join(IN_CELLS).split():
        assert any(word in line for line in lines), word
    # ... and the notes below them, whole sentences
    for note in NOTES:
        assert note in flat, note
    if width == 80:
        assert "Not shown at 80 columns: tool, sample" in flat
    else:
        assert "Not shown" not in flat
        assert all(phrase in flat for phrase in IN_CELLS)  # none wrapped
        assert "thread 0,0,0 block 256,0,0" in flat


def test_json_has_every_folded_finding_with_its_source():
    document = json.loads(json.dumps(findings_to_json(reports())))
    variants = {v["variant"]: v for v in document["variants"]}
    assert [v["clean"] for v in variants.values()] == [False, True, False]
    tools = {t["tool"]: t for t in variants["fixture_prog"]["tools"]}
    assert tools["initcheck"]["records"] == 20
    [uninit] = tools["initcheck"]["findings"]
    assert uninit["count"] == 20 and uninit["source"] == {
        "file": "cuda.cu", "line": 24, "text": "if (i < n) y[i] = x[i] * 2.0f;"}
    [race] = tools["racecheck"]["findings"]
    assert [a["source"]["line"] for a in race["accesses"]] == [18, 19]
    assert len(tools["memcheck"]["api_errors"]) == 2
    assert variants["no_lineinfo"]["tools"][1]["cut"] is True
