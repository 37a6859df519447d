"""ncu_console: failures read from ncu's text, and the hints of its details page.

Everything runs on ncu output recorded on H100/H200 machines (tests/fixtures/ncu), except the
permission and generic-error detectors: no run recorded those, so they get one-line strings.
"""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from gpubench.tools.ncu import console as ncu_console
from gpubench.tools.ncu.console import Problem

FIXTURES = Path(__file__).parent / "fixtures" / "ncu"
RECORDED_CONSOLES = ("h200/no_kernels_profiled_console.txt", "h200/square_small_grid_console.txt",
                     "h100/square_default_sections.txt", "h100/square_full_details.txt")


def _text(name: str) -> str:
    return (FIXTURES / name).read_text()


# --- problems --------------------------------------------------------------------------------


def test_no_kernels_profiled_lists_available_kernels():
    problems = ncu_console.find_problems(_text("h200/no_kernels_profiled_console.txt"))
    assert [p.kind for p in problems] == [Problem.NO_KERNELS]
    kernels = ("distribution_elementwise_grid_stride_kernel", "sq_k", "square_kernel")
    assert problems[0].details == kernels
    assert "sq_k" in problems[0].message and "\n" not in problems[0].message


def test_successful_runs_show_no_problem():
    for name in RECORDED_CONSOLES[1:]:
        assert ncu_console.find_problems(_text(name)) == [], name


def test_available_kernels_empty_without_the_list():
    assert ncu_console.available_kernels(_text("h200/square_small_grid_console.txt")) == []


def test_permission_error_says_what_to_change_on_the_host():
    """No ERR_NVGPUCTRPERM output was ever recorded, so this is one line quoting the error token
    as documented (docs/profilers.md: `==ERROR== ERR_NVGPUCTRPERM ...` on stdout), not a
    made-up console file."""
    problems = ncu_console.find_problems("==ERROR== ERR_NVGPUCTRPERM")
    assert [p.kind for p in problems] == [Problem.PERMISSION]  # not also a generic error
    message = problems[0].message
    assert "NVreg_RestrictProfilingToAdminUsers=0" in message
    assert "CAP_SYS_ADMIN" in message and "root" in message
    assert "\n" not in message


def test_permission_not_reported_for_recorded_runs():
    for name in RECORDED_CONSOLES:
        assert ncu_console.permission_problem(_text(name)) is None, name


def test_other_error_lines_are_quoted():
    """One line in the documented `==ERROR== ...` form; no recorded run failed this way."""
    problem = ncu_console.other_errors("==PROF== x\n==ERROR== something failed\n")
    assert problem is not None and problem.kind == Problem.ERROR
    assert problem.details == ("something failed",)
    assert problem.message == "ncu reported an error: something failed"


def test_profiling_restricted_reads_driver_params():
    assert ncu_console.profiling_restricted("ResmanDebugLevel: 4294967295\nRmProfilingAdminOnly: 1")
    assert not ncu_console.profiling_restricted("RmProfilingAdminOnly: 0\n")
    assert not ncu_console.profiling_restricted("")


def test_missing_sections():
    found = ["SpeedOfLight", "LaunchStats", "Occupancy"]
    assert ncu_console.missing_sections(["SpeedOfLight", "occupancy"], found) is None
    problem = ncu_console.missing_sections(["SpeedOfLight", "SourceCounters", "regex:Mem"], found)
    assert problem is not None and problem.kind == Problem.MISSING_SECTIONS
    assert problem.details == ("SourceCounters",)


def test_missing_sections_of_a_real_report():
    ncu_report = pytest.importorskip("ncu_report")
    from gpubench.tools.ncu.report import load_profiles

    (profile,) = load_profiles(FIXTURES / "h100" / "matmul.ncu-rep", ncu_report)
    assert ncu_console.missing_sections(["SpeedOfLight", "WarpStateStats"],
                                        profile.sections) is None
    problem = ncu_console.missing_sections(["SpeedOfLight", "NoSuchSection"], profile.sections)
    assert problem is not None and problem.details == ("NoSuchSection",)


# --- hints of the details page ---------------------------------------------------------------


def _csv_rules(path: Path, launch_id: str) -> list[dict]:
    with path.open(newline="") as handle:
        rows = list(csv.DictReader(line for line in handle if line.startswith('"')))
    return [r for r in rows if r["ID"] == launch_id and r.get("Rule Name")]


def test_details_text_hints_match_the_csv_of_the_same_report():
    """square_full_details.txt and .csv are two pages of one report: same hints, same order."""
    (kernel,) = ncu_console.parse_details_hints(_text("h100/square_full_details.txt"))
    assert kernel.name == "square_kernel(const float *, float *, int)"
    assert (kernel.grid, kernel.block) == ((65536, 1, 1), (256, 1, 1))
    expected = _csv_rules(FIXTURES / "h100" / "square_full_details.csv", "0")
    assert len(kernel.rules) == len(expected) == 9
    for rule, row in zip(kernel.rules, expected, strict=True):
        assert rule.type == row["Rule Type"]
        assert rule.message == " ".join(row["Rule Description"].split())
        assert rule.speedup_type == (row["Estimated Speedup Type"] or None)
        estimate = float(row["Estimated Speedup"]) if row["Estimated Speedup"] else None
        assert rule.estimated_speedup_pct == estimate


def test_details_hints_know_their_section():
    (kernel,) = ncu_console.parse_details_hints(_text("h100/square_full_details.txt"))
    sections = [r.section_name for r in kernel.rules]
    assert sections[:3] == ["GPU Speed Of Light Throughput", "GPU Speed Of Light Roofline Chart",
                            "Compute Workload Analysis"]
    # two hints under one section, split by ncu's '----- ----' line
    assert sections.count("Warp State Statistics") == 2


def test_console_run_hints_of_the_small_grid_launch():
    (kernel,) = ncu_console.parse_details_hints(_text("h200/square_small_grid_console.txt"))
    assert kernel.grid == (4, 1, 1)
    by_section = {r.section_name: r for r in kernel.rules}
    launch = by_section["Launch Statistics"]
    assert (launch.type, launch.speedup_type, launch.estimated_speedup_pct) == \
        ("OPT", "global", 96.97)
    assert launch.message.endswith("description for more details on launch configurations.")
    occupancy = by_section["Occupancy"]
    assert (occupancy.speedup_type, occupancy.estimated_speedup_pct) == ("local", 87.89)
    assert not any("Section:" in r.message or "Est." in r.message for r in kernel.rules)


def test_console_message_equals_the_report_message_once_cleaned():
    """The same hint read from a report (markup cleaned) and from ncu's console text agree."""
    ncu_report = pytest.importorskip("ncu_report")
    from gpubench.tools.ncu.report import load_profiles

    small = load_profiles(FIXTURES / "h200" / "square_two_launches_full.ncu-rep", ncu_report)[1]
    from_report = next(r for r in small.rules if r.rule_id == "LaunchConfiguration")
    (kernel,) = ncu_console.parse_details_hints(_text("h200/square_small_grid_console.txt"))
    from_console = next(r for r in kernel.rules if r.section_name == "Launch Statistics")
    assert "@url:" in from_report.raw_message
    assert from_report.message == from_console.message
    assert from_report.section_name == from_console.section_name
