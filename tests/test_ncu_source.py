"""Hints pinned to source lines: per-line counters read from a real report, attributed to the
hints they explain, checked against what ncu itself prints for the same report.

The report (H200, ncu 2025.3.1, `--set full --import-source yes`) holds a naive transpose
built with -lineinfo (its store `y[(long)c * n + r] = ...` is uncoalesced) and a Triton row
softmax; ncu's own source and details pages of it are recorded beside it. Tests that open a
report need NVIDIA's ncu_report module and skip without it, and run with both readers (the
PyPI one, and the shape of the one bundled with ncu 2025.3.1); the attribution table and
the helpers are tested everywhere.
"""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import pytest
from rich.console import Group
from test_fit_golden import assert_fits, check_golden, render
from test_ncu_report import bundled_shaped

from gpubench.tools.ncu import command as ncu_command
from gpubench.tools.ncu import kernel_profile as kp
from gpubench.tools.ncu import metrics
from gpubench.tools.ncu import report as nr
from gpubench.tools.ncu import source as ncu_source
from gpubench.tools.ncu import view as ncu_view
from gpubench.tools.ncu.kernel_profile import KernelProfile
from gpubench.tools.ncu.rules import FocusMetric, RuleResult

H200 = Path(__file__).parent / "fixtures" / "ncu" / "h200"
SOURCE_REP = H200 / "transpose_softmax_source.ncu-rep"
SOURCE_PAGE = H200 / "transpose_source_page.csv"
DETAILS = H200 / "transpose_softmax_source_details.txt"  # ncu --page details --print-rule-details
NO_SOURCE_REP = H200 / "square_two_launches_full.ncu-rep"
STORE_LINE = "y[(long)c * n + r] = x[(long)r * n + c];"


@pytest.fixture(scope="module")
def module():
    return pytest.importorskip("ncu_report")


def by_name(reader) -> dict[str, KernelProfile]:
    return {p.base_name: p for p in nr.load_profiles(SOURCE_REP, reader)}


@pytest.fixture(scope="module", params=["pypi", "bundled"])
def kernels(request, module) -> dict[str, KernelProfile]:
    return by_name(module if request.param == "pypi" else bundled_shaped(module))


@pytest.fixture(scope="module")
def pypi_kernels(module) -> dict[str, KernelProfile]:
    """For the goldens: the bundled reader's view adds a note on sections, nothing else."""
    return by_name(module)


def hint(profile: KernelProfile, rule_id: str, title: str = "") -> RuleResult:
    return next(r for r in profile.hints(include_info=True)
                if r.rule_id == rule_id and (not title or r.title == title))


# --- the acceptance: the store line on top of the uncoalesced hint ---------------------------


def test_uncoalesced_hint_of_naive_transpose_lists_the_store_line_first(kernels):
    """...and it holds all the excessive sectors ncu's printed hint counts (details page)."""
    transpose = kernels["naive_transpose"]
    first, *_ = ncu_source.top_lines(transpose, hint(transpose, "UncoalescedGlobalAccess"))
    assert (first.file, first.line, first.text) == ("cuda.cu", 9, STORE_LINE)
    assert first.metric == ncu_source.GLOBAL_EXCESS
    details = " ".join(DETAILS.read_text().split())
    printed = re.search(r"resulting in a total of (\d+) excessive sectors", details)
    assert first.share == 1.0 and first.value == int(printed[1]) == 14680064


def test_store_access_pattern_hint_counts_the_stores_only(kernels):
    transpose = kernels["naive_transpose"]
    rule = hint(transpose, "MemoryCacheAccessPattern", "L1TEX Global Store Access Pattern")
    (hit,) = ncu_source.top_lines(transpose, rule)  # the load of line 9 is coalesced: no excess
    assert (hit.line, hit.text, hit.metric.label) == (9, STORE_LINE,
                                                      "excess global store sectors")


def test_stall_hints_name_the_lines_ncus_own_source_markers_name(module, kernels):
    """ncu marks the lines with most samples of a stall reason; the stall hints' first lines
    are those lines (drain: the closing brace, where warps wait after EXIT for their stores)."""
    context = module.load_report(str(SOURCE_REP))
    for index, name in enumerate(("naive_transpose", "softmax_kernel")):
        action = context.range_by_idx(0).action_by_idx(index)
        marked = {}
        for marker in action.source_markers():
            reason = marker["message"].rpartition(" of type ")[2].rstrip(".")
            if marker["rule_identifier"] == "CPIStall" and "source_address" in marker:
                info = action.source_info(marker["source_address"])
                marked[reason] = (ncu_source.display_name(info.file_name()), info.line())
        profile = kernels[name]
        stall_hints = [r for r in profile.hints() if r.rule_id == "CPIStall"]
        assert stall_hints
        for rule in stall_hints:
            reason = ncu_source.metric_for(rule).key.removeprefix("stall_")
            first = ncu_source.top_lines(profile, rule)[0]
            assert (first.file, first.line) == marked[reason], rule.title
    assert marked  # the softmax's long scoreboard marker was read


def test_per_line_counters_equal_ncus_source_page(kernels):
    """Every line of `ncu --page source --print-source sass,cuda` of the transpose: the same
    samples, instructions, sectors and stall samples as gpubench's sums per line."""
    columns = {"samples": "Warp Stall Sampling (All Samples)",
               "inst_executed": "Instructions Executed",
               "l1_global_requests": "L1 Tag Requests Global",
               "global_sectors": "L2 Theoretical Sectors Global",
               "global_sectors_ideal": "L2 Theoretical Sectors Global Ideal",
               "global_excess_sectors": "L2 Theoretical Sectors Global Excessive",
               "stall_long_scoreboard": "stall_long_sb", "stall_drain": "stall_drain",
               "stall_mio_throttle": "stall_mio", "stall_short_scoreboard": "stall_short_sb"}
    with SOURCE_PAGE.open(newline="") as handle:
        rows = list(csv.reader(handle))
    header = rows[2]
    # two columns are called "Source": the line's text, then the SASS of its instructions
    printed = {int(row[0]): dict(zip(header, row, strict=True), text=row[1]) for row in rows[3:]
               if row[0]}
    source = kernels["naive_transpose"].source
    assert {line.line for line in source.lines} == set(printed)
    for line in source.lines:
        for key, column in columns.items():
            assert line.counters.get(key, 0) == float(printed[line.line][column]), (line, key)
        assert source.text(line.file, line.line) == printed[line.line]["text"].strip()


def test_triton_softmax_lines_are_python_lines(kernels):
    softmax = kernels["softmax_kernel"]
    hits = [h for r in softmax.hints(include_info=True) for h in ncu_source.top_lines(softmax, r)]
    assert hits and all(h.path.endswith(".py") and h.text for h in hits)
    files = {h.file for h in hits}
    # tl.max and tl.sum are inlined from Triton's own standard.py, named as such
    assert files == {"prog.py", "triton/language/standard.py"}
    assert any(h.text.startswith("tl.store(") for h in hits)


def test_both_readers_read_the_same_source(module):
    pypi = nr.load_profiles(SOURCE_REP, module)
    bundled = nr.load_profiles(SOURCE_REP, bundled_shaped(module))
    assert [p.source for p in pypi] == [p.source for p in bundled]
    assert all(p.source is not None for p in pypi)


# --- reports without source ------------------------------------------------------------------


def test_report_without_source_shows_hints_without_lines(module):
    for profile in nr.load_profiles(NO_SOURCE_REP, module):
        assert profile.source is None  # counters per instruction, but no line info
        assert profile.hints()
        assert all(ncu_source.top_lines(profile, r) == [] for r in profile.rules)
        assert "source:" not in render(ncu_view.profile_view(profile, include_info=True), 160)
        document = ncu_view.profile_to_dict(profile)
        assert document["source"] is None
        assert all(rule["source_lines"] == [] for rule in document["rules"])


def test_report_with_line_info_but_no_embedded_files_shows_locations_only(module):
    """gpubench's own H100 report: built with -lineinfo and `#line`, profiled before gpubench
    passed --import-source: the user's file and line, a share, no text."""
    (profile,) = nr.load_profiles(H200.parent / "h100" / "gpubench_square_cuda_nvtx.ncu-rep",
                                  module)
    first = ncu_source.top_lines(profile, hint(profile, "CPIStall", "Long Scoreboard Stalls"))[0]
    assert (first.file, first.line, first.text) == ("square.cu", 15, "")
    assert first.path == "/work/main/kernels/square/square.cu"  # the `#line` gpubench wrote
    text = " ".join(render(ncu_view.hints_table(profile), 160).split())
    assert "source: square.cu:15 100% of long scoreboard stall samples" in text


# --- the view, the JSON, the command line ----------------------------------------------------


def source_views(kernels) -> Group:
    return Group(*(ncu_view.profile_view(p) for p in kernels.values()))


@pytest.mark.parametrize("width", [80, 160])
def test_source_view_fits_the_terminal(pypi_kernels, width):
    text = render(source_views(pypi_kernels), width)
    check_golden(text, f"ncu_view_source_{width}.txt")
    rules = [(p, r) for p in pypi_kernels.values() for r in p.hints()]
    hits = [h for p, r in rules for h in ncu_source.top_lines(p, r)]
    sources = [r.message for _, r in rules] + [h.text for h in hits]
    assert_fits(text, width, sources)
    assert text.count("source:") == sum(1 for p, r in rules if ncu_source.top_lines(p, r))


def test_json_lists_each_hints_lines(kernels):
    document = ncu_view.profiles_to_json({"v": list(kernels.values())})
    json.dumps(document)
    transpose = document["variants"][0]["kernels"][0]
    rule = next(r for r in transpose["rules"] if r["rule_id"] == "UncoalescedGlobalAccess")
    first = rule["source_lines"][0]
    assert (first["file"], first["line"], first["text"], first["share"]) == \
        ("cuda.cu", 9, STORE_LINE, 1.0)
    assert first["metric"] == "global_excess_sectors"
    assert transpose["source"]["totals"]["global_excess_sectors"] == 14680064


@pytest.mark.slow
def test_import_prints_the_store_line_under_its_hint(gpubench):
    pytest.importorskip("ncu_report")
    done = gpubench("ncu", "--import", str(SOURCE_REP), env={"COLUMNS": "80"})
    assert done.code == 0, done.output
    entry = done.stdout.split("Uncoalesced Global Accesses", 1)[1].split("\n2  ", 1)[0]
    flat = " ".join(entry.split())
    assert f"source: cuda.cu:9 `{STORE_LINE}` 100% of excess global sectors" in flat


def test_ncu_runs_embed_the_source():
    for set_name in (ncu_command.DEFAULT_SET, "full"):
        argv = ncu_command.ncu_argv("ncu", "r", ["t"], set_name=set_name)
        assert argv[argv.index("--import-source") + 1] == "yes"


# --- the attribution table and helpers (no report needed) ------------------------------------


def rule(rule_id: str, title: str = "", *focus: str) -> RuleResult:
    return RuleResult(rule_id, "", "", title, "OPT", "", "",
                      focus_metrics=tuple(FocusMetric(name, 1.0) for name in focus))


@pytest.mark.parametrize("given, key", [
    (rule("CPIStall", "Long Scoreboard Stalls", "smsp_average_long_scoreboard"),
     "stall_long_scoreboard"),
    (rule("CPIStall", "No Instruction Stalls", "smsp_average_no_instruction"),
     "stall_no_instructions"),
    (rule("CPIStall", "Mio Throttle Stalls"), "stall_mio_throttle"),
    (rule("CPIStall"), "samples"),
    (rule("IssueSlotUtilization"), "samples"),
    (rule("UncoalescedGlobalAccess"), "global_excess_sectors"),
    (rule("MemoryCacheAccessPattern", "L2 Global Load Access Pattern",
          "smsp__sass_average_data_bytes_per_sector_mem_global_op_ld.ratio"),
     "global_excess_sectors_load"),
    (rule("MemoryCacheAccessPattern", "L1TEX Local Store Access Pattern",
          "smsp__sass_average_data_bytes_per_sector_mem_local_op_st.ratio"), None),
    (rule("SharedMemoryConflicts", "Shared Store Bank Conflicts"), "shared_excess_wavefronts"),
    (rule("UncoalescedSharedAccess"), "shared_excess_wavefronts"),
    (rule("LaunchConfiguration", "Small Grid"), None),
    (rule("AchievedOccupancy"), None),
])
def test_which_hint_is_about_which_counter(given, key):
    metric = ncu_source.metric_for(given)
    assert (metric.key if metric else None) == key


def test_every_entry_of_the_table_says_why():
    assert all(len(entry.reason) > 40 for entry in ncu_source.RULE_METRICS.values())


@pytest.mark.parametrize("path, shown", [
    ("/work/main/kernels/matmul/naive.cu", "naive.cu"),
    ("matmul/spec.py: cuda_sources[0]", "matmul/spec.py: cuda_sources[0]"),
    ("/root/.cache/gb/matmul/spec.py: cuda_sources[1]", "matmul/spec.py: cuda_sources[1]"),
    ("/venv/lib/python3.12/site-packages/triton/language/standard.py",
     "triton/language/standard.py"),
    ("C:\\kernels\\naive.cu", "naive.cu"),
])
def test_display_names(path, shown):
    assert ncu_source.display_name(path) == shown


def test_counters_summed_per_line_and_split_by_access():
    excess = {0x10: 8.0, 0x20: 24.0, 0x30: 4.0}
    split = metrics.split_by_access(excess, {0x10: 2, 0x20: 4, 0x30: 8}, "x")
    assert split == {"x_load": {0x10: 8.0}, "x_store": {0x20: 24.0}}  # 8: neither
    where = {0x10: ("k.cu", 9), 0x20: ("k.cu", 9), 0x30: ("k.cu", 3)}  # 0x40: no line
    lines = metrics.sum_by_line({"x": {**excess, 0x40: 1.0}, **split}, where)
    assert lines == [{"file": "k.cu", "line": 3, "counters": {"x": 4.0}},
                     {"file": "k.cu", "line": 9,
                      "counters": {"x": 32.0, "x_load": 8.0, "x_store": 24.0}}]


def test_shares_are_of_the_kernel_total_and_ties_go_in_line_order():
    source = kp.source_from_raw({
        "lines": [{"file": "k.cu", "line": n, "counters": {"samples": v}}
                  for n, v in ((7, 10.0), (3, 10.0), (5, 60.0), (9, 5.0))],
        "totals": {"samples": 100.0},  # 15 samples at addresses without a line
        "texts": {"k.cu": "\n".join(f"line {n}" for n in range(1, 11))}})
    profile = KernelProfile("k()", "k", 0, None, None, None, None, source=source)
    hits = ncu_source.top_lines(profile, rule("IssueSlotUtilization"))
    assert [(h.line, h.share, h.text) for h in hits] == \
        [(5, 0.6, "line 5"), (3, 0.1, "line 3"), (7, 0.1, "line 7")]
    assert ncu_source.share_text(0.6) == "60%" and ncu_source.share_text(0.001) == "<1%"


def test_a_reader_listing_file_names_only_gives_no_text():
    class Action:
        def source_files(self):
            return ["/k/naive.cu"]

    assert nr._source_texts(Action()) == {"/k/naive.cu": ""}
    assert kp.KernelSource(texts={"/k/naive.cu": ""}).text("/k/naive.cu", 9) == ""


def test_naive_matmuls_top_hint_points_at_its_load_line(module, tmp_path):
    """`gpubench ncu matmul --variant naive` on the H200: the top hint (L1TEX Global Load
    Access Pattern, 18 of 32 bytes used per sector) has no excess at L2, so its lines are
    ranked by the loads' sectors: the inner-product line holds all of them."""
    import gzip

    report = tmp_path / "naive.ncu-rep"
    report.write_bytes(gzip.decompress((H200 / "matmul_naive_source.ncu-rep.gz").read_bytes()))
    (profile,) = nr.load_profiles(report, module)
    top = profile.hints()[0]
    assert top.rule_id == "MemoryCacheAccessPattern"
    first, *_ = ncu_source.top_lines(profile, top)
    assert (first.file, first.line, first.metric.label) == ("matmul.cu", 34,
                                                            "global load sectors")
    assert "a_row[i]" in first.text and first.share > 0.99
