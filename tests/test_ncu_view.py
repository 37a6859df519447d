"""ncu_view: what the terminal shows and what the JSON/CSV files hold, on real profiles.

Views are rendered to text with a recording rich Console and searched; the profiles come from
the H200 report of one kernel launched with grid 65536 ("big") and grid 4 ("small"). The
reports are also read with the bundled-reader shape (see test_ncu_report.bundled_shaped): the
views must come out the same, plus a note on what that reader cannot tell.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console
from rich.text import Text
from test_ncu_report import REPORTS, bundled_shaped

from gpubench.tools.ncu import console as ncu_console
from gpubench.tools.ncu import rules as ncu_rules
from gpubench.tools.ncu import view as ncu_view
from gpubench.tools.ncu.kernel_profile import KernelProfile
from gpubench.tools.ncu.report import load_profiles

FIXTURES = Path(__file__).parent / "fixtures" / "ncu"


@pytest.fixture(scope="module")
def launches() -> dict[str, KernelProfile]:
    module = pytest.importorskip("ncu_report")
    big, small = load_profiles(FIXTURES / "h200" / "square_two_launches_full.ncu-rep", module)
    return {"big": big, "small": small}


def render(renderable) -> str:
    console = Console(file=io.StringIO(), width=220, color_system=None)
    console.print(renderable)
    return console.file.getvalue()


def test_profile_view_header_and_speed_of_light(launches):
    text = render(ncu_view.profile_view(launches["small"]))
    header = text.splitlines()[0]
    for part in ("square_kernel", "grid (4, 1, 1)", "block (256, 1, 1)", "16 regs", "2.24 us"):
        assert part in header
    assert "NVIDIA H200" in text
    assert "Achieved Occupancy" in text and "12.2%" in text
    assert "DRAM roofline" in text and "memory-bound" in text


def test_hints_table_ranks_and_hides_info(launches):
    text = render(ncu_view.hints_table(launches["small"]))
    assert text.index("96.97% global") < text.index("87.8% global") < text.index("99.99% local")
    assert "Small Grid" in text and "launch__grid_size = 4" in text
    assert "Roofline Analysis" not in text  # INF
    assert "@url:" not in text and "CUDA Best Practices Guide" in text
    with_info = render(ncu_view.hints_table(launches["small"], include_info=True))
    assert "Roofline Analysis" in with_info


def test_hints_table_limit_says_how_many_are_hidden(launches):
    text = render(ncu_view.hints_table(launches["small"], limit=2))
    assert "99.99% local" not in text
    hidden = len(launches["small"].hints()) - 2
    assert f"{hidden} more not shown" in text


def test_hints_table_of_console_parsed_rules():
    """Hints read from ncu's console text render too (no report, no ncu_report module)."""
    text = (FIXTURES / "h200" / "square_small_grid_console.txt").read_text()
    (kernel,) = ncu_console.parse_details_hints(text)
    profile = KernelProfile(name=kernel.name, base_name="square_kernel", launch_index=0,
                            grid=kernel.grid, block=kernel.block, registers_per_thread=None,
                            duration_ns=None, rules=kernel.rules)
    rendered = render(ncu_view.profile_view(profile))
    assert rendered.index("96.97% global") < rendered.index("6.226% global") \
        < rendered.index("87.89% local")
    assert "Launch Statistics" in rendered


def test_comparison_side_by_side_and_hint_changes(launches):
    text = render(ncu_view.comparison_table(launches))
    assert "big" in text and "small" in text
    assert "49.7 us" in text and "2.24 us" in text
    lines = [line for line in text.splitlines() if "big -> small" in line]
    by_hint = {}
    for line in lines:
        for heading in ("Small Grid (Launch Statistics)", "Low Compression Rate",
                        "Latency Issue", "Issue Slot Utilization"):
            if heading in line:
                by_hint[heading] = line
    assert "new" in by_hint["Small Grid (Launch Statistics)"]
    assert "shrank" in by_hint["Low Compression Rate"]  # 18.84% -> 0.06212%
    assert "gone" in by_hint["Latency Issue"]  # SOLBottleneck's other finding
    assert "grew" in by_hint["Issue Slot Utilization"]


def test_hint_changes_between_the_two_launches(launches):
    changes = {c.key: c for c in ncu_rules.compare_hints(launches["big"].rules,
                                                        launches["small"].rules)}
    assert changes["LaunchConfiguration/Small Grid"].change == ncu_rules.NEW
    assert changes["SOLBottleneck/Latency Issue"].change == ncu_rules.GONE
    compression = changes["MemoryL2Compression/Low Compression Rate"]
    assert compression.change == ncu_rules.SHRANK
    assert compression.before_pct > 18 > 1 > compression.after_pct


def test_profiles_to_json_is_complete_and_serializable(launches):
    document = ncu_view.profiles_to_json({"big": launches["big"], "small": [launches["small"]]})
    json.dumps(document)
    assert [v["variant"] for v in document["variants"]] == ["big", "small"]
    small = document["variants"][1]["kernels"][0]
    assert small["grid"] == [4, 1, 1] and small["duration_ns"] == 2240.0
    assert len(small["rules"]) == len(launches["small"].rules)
    assert small["rules"][0]["rule_id"] == "LaunchConfiguration"
    assert small["ncu_metrics"]["gpu__time_duration.sum"] == 2240.0


def test_profiles_to_rows_one_per_metric_and_hint(launches):
    rows = ncu_view.profiles_to_rows(launches)
    assert all(tuple(row) == ncu_view.ROW_COLUMNS for row in rows)
    for variant, profile in launches.items():
        mine = [r for r in rows if r["variant"] == variant]
        assert len([r for r in mine if r["row"] == "metric"]) == len(profile.metrics)
        assert len([r for r in mine if r["row"] == "hint"]) == len(profile.rules)
    duration = next(r for r in rows if r["variant"] == "small" and r["key"] == "duration_ns")
    assert (duration["value"], duration["unit"], duration["kernel"]) == \
        (2240.0, "ns", "square_kernel")
    first_hint = next(r for r in rows if r["variant"] == "small" and r["row"] == "hint")
    assert (first_hint["rank"], first_hint["section"], first_hint["speedup_type"]) == \
        (1, "LaunchStats", "global")
    pandas = pytest.importorskip("pandas")
    assert "estimated_speedup_pct" in pandas.DataFrame(rows).to_csv(index=False)


def test_metric_text_units():
    assert ncu_view.metric_text("duration_ns", 2240.0) == "2.24 us"
    assert ncu_view.metric_text("dram_bytes_per_s", 2.328e12) == "2.33 TB/s"
    assert ncu_view.metric_text("achieved_occupancy_pct", 12.2012) == "12.2%"
    assert ncu_view.metric_text("waves_per_sm", None) == "-"


# --- the same views through the reader bundled with ncu 2025.3.1 ------------------------------


@pytest.fixture(scope="module", params=REPORTS, ids=lambda path: path.name)
def both_readers(request) -> tuple[list[KernelProfile], list[KernelProfile]]:
    module = pytest.importorskip("ncu_report")
    return (load_profiles(request.param, module),
            load_profiles(request.param, bundled_shaped(module)))


def test_bundled_reader_views_equal_pypi_ones_plus_a_note(both_readers):
    """Header, speed of light and ranked hints are the same text; only the bundled shape says
    that it could not list sections (and so that they were not checked)."""
    pypi, bundled = both_readers
    for full, shaped in zip(pypi, bundled, strict=True):
        full_text = render(ncu_view.profile_view(full, include_info=True))
        shaped_text = render(ncu_view.profile_view(shaped, include_info=True))
        assert "cannot list" not in full_text
        note = render(Text(ncu_view.SECTIONS_UNKNOWN))
        assert shaped_text == full_text + note
        assert "sections were not checked" in " ".join(shaped_text.split())


def test_bundled_reader_files_equal_pypi_ones_but_for_sections(both_readers):
    """CSV rows are identical; JSON differs only in the (partial, flagged) section list."""
    pypi, bundled = both_readers
    assert ncu_view.profiles_to_rows({"v": bundled}) == ncu_view.profiles_to_rows({"v": pypi})
    full_doc = ncu_view.profiles_to_json({"v": pypi})
    shaped_doc = ncu_view.profiles_to_json({"v": bundled})
    json.dumps(shaped_doc)
    for full, shaped in zip(full_doc["variants"][0]["kernels"],
                            shaped_doc["variants"][0]["kernels"], strict=True):
        assert full["sections_complete"] is True and shaped["sections_complete"] is False
        assert shaped["sections"].items() <= full["sections"].items()
        strip = ("sections", "sections_complete")
        assert {k: v for k, v in shaped.items() if k not in strip} == \
            {k: v for k, v in full.items() if k not in strip}
