"""ncu_report: .ncu-rep files recorded on H100/H200 read into KernelProfiles, checked against
what ncu itself printed for the same report (its details and raw CSV pages).

Tests that open a report need NVIDIA's `ncu_report` module and skip without it; the pure
helpers and the module-finding logic are tested everywhere. Every report is also read through
`bundled_shaped(module)`: the PyPI reader with what ncu 2025.3.1's own copy lacks hidden, as
recorded on the H200 (fixtures/ncu/h200/bundled_ncu_report_api.txt).
"""

from __future__ import annotations

import ast
import csv
import re
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from gpubench.errors import EnvironmentProblem, GpubenchError
from gpubench.tools.ncu import kernel_profile as kp
from gpubench.tools.ncu import report as nr
from gpubench.tools.ncu import report_module as rm
from gpubench.tools.ncu import rules as ncu_rules

FIXTURES = Path(__file__).parent / "fixtures" / "ncu"
SQUARE_REP = FIXTURES / "h200" / "square_two_launches_full.ncu-rep"
MATMUL_REP = FIXTURES / "h100" / "matmul.ncu-rep"
REPORTS = sorted(FIXTURES.glob("*/*.ncu-rep"))
BUNDLED_API = FIXTURES / "h200" / "bundled_ncu_report_api.txt"


# --- the reader bundled with ncu 2025.3.1, shaped from the real PyPI one ---------------------


def bundled_api() -> dict[str, frozenset[str]]:
    """Class name -> attribute names, from the recording of ncu 2025.3.1's own ncu_report
    ('  IAction: [...]' lines; other lines hold single values or samples)."""
    api = {}
    for line in BUNDLED_API.read_text().splitlines():
        found = re.fullmatch(r"\s+(I[A-Z]\w*): (\[.*\])", line)
        if found:
            api[found[1]] = frozenset(ast.literal_eval(found[2]))
    return api


class BundledShaped:
    """A reader object showing only the attribute names its class has in the bundled reader;
    classes the recording does not list pass through whole. What it returns is wrapped too."""

    def __init__(self, real, api: dict[str, frozenset[str]], kind: str | None = None):
        self._real, self._api = real, api
        self._kind = kind or type(real).__name__

    def __getattr__(self, name: str):
        allowed = self._api.get(self._kind)
        if allowed is not None and name not in allowed:
            raise AttributeError(f"'{self._kind}' object has no attribute '{name}' "
                                 "(ncu 2025.3.1's bundled ncu_report)")
        attr = getattr(self._real, name)
        if not callable(attr) or isinstance(attr, type):
            return attr
        return lambda *args, **kwargs: _shaped(attr(*args, **kwargs), self._api)


def _shaped(value, api):
    if isinstance(value, list | tuple):
        return type(value)(_shaped(item, api) for item in value)
    if type(value).__module__.split(".")[0] == "ncu_report":
        return BundledShaped(value, api)
    return value


def bundled_shaped(module) -> SimpleNamespace:
    """The PyPI ncu_report module as the bundled one looks to gpubench: `load_report`, and
    `IAction` with only the recorded class attributes (the NameBase_* constants)."""
    api = bundled_api()
    return SimpleNamespace(
        load_report=lambda path: _shaped(module.load_report(path), api),
        IAction=BundledShaped(module.IAction, api, "IAction"))


@pytest.fixture(scope="module")
def module():
    return pytest.importorskip("ncu_report")


@pytest.fixture(scope="module", params=["pypi", "bundled"])
def reader(request, module):
    """Each test taking a report runs with both readers: PyPI's, and the bundled shape."""
    return module if request.param == "pypi" else bundled_shaped(module)


@pytest.fixture(scope="module")
def square(reader):
    return nr.load_profiles(SQUARE_REP, reader)


@pytest.fixture(scope="module")
def matmul(reader):
    return nr.load_profiles(MATMUL_REP, reader)


def _csv_rows(path: Path) -> list[dict]:
    """ncu's CSV pages, indexed by header name; lines not starting with '"' are not CSV."""
    with path.open(newline="") as handle:
        return list(csv.DictReader(line for line in handle if line.startswith('"')))


def _number(text: str) -> float:
    return float(text.replace(",", ""))


# --- identity and metrics --------------------------------------------------------------------


def test_two_launches_in_report_order(square):
    assert [p.launch_index for p in square] == [0, 1]
    assert [p.grid for p in square] == [(65536, 1, 1), (4, 1, 1)]
    for profile in square:
        assert profile.name == "square_kernel(const float *, float *, int)"
        assert profile.base_name == profile.function_name == "square_kernel"
        assert profile.block == (256, 1, 1)
        assert profile.registers_per_thread == 16
        assert profile.device == "NVIDIA H200"
        assert profile.nvtx_range is None  # recorded without --nvtx


def test_duration_and_throughput_match_the_raw_csv(square):
    rows = _csv_rows(FIXTURES / "h200" / "square_two_launches_raw_metrics.csv")
    units, launches = rows[0], rows[1:]  # the raw page's second row holds the units
    assert units["gpu__time_duration.sum"] == "us"
    assert len(launches) == len(square)
    for row, profile in zip(launches, square, strict=True):
        assert int(row["ID"]) == profile.launch_index
        assert profile.duration_ns == pytest.approx(_number(row["gpu__time_duration.sum"]) * 1e3)
        assert profile.metrics["duration_ns"] == profile.duration_ns
        assert profile.metrics["compute_throughput_pct"] == pytest.approx(
            _number(row["sm__throughput.avg.pct_of_peak_sustained_elapsed"]), abs=1e-5)
        assert profile.grid[0] == _number(row["launch__grid_size"])


# (section display name, metric label of ncu's details page) -> KernelProfile.metrics key
DETAILS_METRICS = {
    ("GPU Speed Of Light Throughput", "Memory Throughput"): "memory_throughput_pct",
    ("GPU Speed Of Light Throughput", "DRAM Throughput"): "dram_throughput_pct",
    ("GPU Speed Of Light Throughput", "Compute (SM) Throughput"): "compute_throughput_pct",
    ("GPU Speed Of Light Throughput", "L1/TEX Cache Throughput"): "l1_throughput_pct",
    ("GPU Speed Of Light Throughput", "L2 Cache Throughput"): "l2_throughput_pct",
    ("Occupancy", "Achieved Occupancy"): "achieved_occupancy_pct",
    ("Occupancy", "Theoretical Occupancy"): "theoretical_occupancy_pct",
    ("Memory Workload Analysis", "L1/TEX Hit Rate"): "l1_hit_rate_pct",
    ("Memory Workload Analysis", "L2 Hit Rate"): "l2_hit_rate_pct",
    ("Launch Statistics", "Waves Per SM"): "waves_per_sm",
}


def test_speed_of_light_metrics_are_the_ones_ncu_prints(square):
    """The metric names chosen give the values ncu's details page shows (2 decimals there)."""
    rows = _csv_rows(FIXTURES / "h200" / "square_two_launches_details.csv")
    checked = 0
    for row in rows:
        key = DETAILS_METRICS.get((row["Section Name"], row["Metric Name"]))
        if key is None or row.get("Rule Name"):
            continue
        profile = square[int(row["ID"])]
        assert profile.metrics[key] == pytest.approx(_number(row["Metric Value"]), abs=0.006), key
        checked += 1
    assert checked == 2 * len(DETAILS_METRICS)


def test_roofline_flops_and_bytes_are_the_kernels_work(square, matmul):
    """Achieved FLOP/s x duration gives back what the kernels compute: 2*1024^3 FLOPs for the
    1024^2 sgemm (one FFMA = 2), one FMUL per element for square's 65536*256 floats."""
    (sgemm,) = matmul
    flops = sgemm.metrics["fp32_flop_per_s"] * sgemm.duration_ns * 1e-9
    assert flops == pytest.approx(2 * 1024**3, rel=0.01)
    big = square[0]
    assert big.metrics["fp32_flop_per_s"] * big.duration_ns * 1e-9 == pytest.approx(
        65536 * 256, rel=0.01)
    assert big.metrics["fp64_flop_per_s"] == 0.0
    # DRAM: read + write bytes, consistent with the measured bandwidth over the duration
    moved = big.metrics["dram_bytes_per_s"] * big.duration_ns * 1e-9
    assert big.metrics["dram_bytes"] == pytest.approx(moved, rel=0.01)
    # H200: ~67 TFLOP/s FP32 and ~4.8 TB/s at the clocks of the run
    assert big.metrics["peak_fp32_flop_per_s"] == pytest.approx(67e12, rel=0.05)
    assert big.metrics["peak_dram_bytes_per_s"] == pytest.approx(4.8e12, rel=0.05)
    assert big.roofline_bound == "memory"
    assert big.metrics["arithmetic_intensity"] < big.metrics["ridge_point"]


def test_sections_are_listed_with_their_names(module):
    (big, _) = nr.load_profiles(SQUARE_REP, module)
    assert big.sections_complete
    assert big.sections["SpeedOfLight"] == "GPU Speed Of Light Throughput"
    assert big.sections["LaunchStats"] == "Launch Statistics"


# --- the two readers -------------------------------------------------------------------------


def test_the_recording_says_the_bundled_reader_lacks_sections(module):
    api = bundled_api()
    assert "sections" not in api["IAction"]
    assert {"metric_by_name", "metric_names", "name", "nvtx_state",
            "rule_results_as_dicts"} <= api["IAction"]
    if not hasattr(module.IAction, "sections"):
        pytest.skip("the installed ncu_report has no IAction.sections() either")
    action = bundled_shaped(module).load_report(str(SQUARE_REP)).range_by_idx(0).action_by_idx(0)
    assert action.metric_by_name("gpu__time_duration.sum").value() > 0
    with pytest.raises(AttributeError, match="sections"):
        action.sections()


@pytest.mark.parametrize("report", REPORTS, ids=lambda path: path.name)
def test_both_readers_give_the_same_kernels_metrics_and_hints(module, report):
    """Everything but the section list comes out the same through the bundled shape."""
    pypi = nr.load_profiles(report, module)
    bundled = nr.load_profiles(report, bundled_shaped(module))
    assert len(pypi) == len(bundled) > 0
    for full, shaped in zip(pypi, bundled, strict=True):
        assert (shaped.name, shaped.function_name, shaped.launch_index, shaped.grid,
                shaped.block, shaped.registers_per_thread, shaped.duration_ns, shaped.device,
                shaped.nvtx) == (full.name, full.function_name, full.launch_index, full.grid,
                                 full.block, full.registers_per_thread, full.duration_ns,
                                 full.device, full.nvtx)
        assert shaped.metrics == full.metrics and shaped.raw_metrics == full.raw_metrics
        assert shaped.rules == full.rules  # section names included
        assert shaped.hints(include_info=True) == full.hints(include_info=True)


@pytest.mark.parametrize("report", REPORTS, ids=lambda path: path.name)
def test_bundled_shape_knows_only_the_sections_its_rules_name(module, report):
    """Never a section the report lacks: the rule-named ones are a subset of PyPI's list, with
    the same names; the rest is unknown, and the profile says so."""
    for full, shaped in zip(nr.load_profiles(report, module),
                            nr.load_profiles(report, bundled_shaped(module)), strict=True):
        assert full.sections_complete and not shaped.sections_complete
        assert shaped.sections.items() <= full.sections.items()
        assert set(shaped.sections) >= {r.section_id for r in full.rules}
        assert shaped.sections  # every fixture launch has rule results


@pytest.mark.parametrize("report", REPORTS, ids=lambda path: path.name)
def test_stock_section_names_are_ncus_own(module, report):
    for profile in nr.load_profiles(report, module):
        assert profile.sections.items() <= nr.STOCK_SECTION_NAMES.items()


# --- rules -----------------------------------------------------------------------------------


def _rule_row_key(row: dict) -> tuple:
    return (row["Rule Name"], row["Section Name"], row["Rule Type"],
            row["Estimated Speedup Type"] or None, row["Estimated Speedup"] or None)


def _rule_key(rule: ncu_rules.RuleResult) -> tuple:
    speedup = rule.estimated_speedup_pct
    return (rule.rule_id, rule.section_id, rule.type, rule.speedup_type,
            None if speedup is None else f"{speedup:.4g}")


def test_every_hint_ncu_lists_is_loaded(square):
    """Each rule row of `ncu --page details --csv` for a launch, and only those, is loaded:
    same rule, section, type and estimated speedup (the CSV keeps 4 significant digits)."""
    rows = [r for r in _csv_rows(FIXTURES / "h200" / "square_two_launches_details.csv")
            if r.get("Rule Name")]
    for profile in square:
        expected = sorted(_rule_row_key(r) for r in rows if int(r["ID"]) == profile.launch_index)
        assert sorted(_rule_key(r) for r in profile.rules) == expected
        assert any(key[2] in ("OPT", "WRN") for key in expected)


def test_cleaned_messages_equal_ncus_printed_ones(square):
    rows = [r for r in _csv_rows(FIXTURES / "h200" / "square_two_launches_details.csv")
            if r.get("Rule Name")]
    for profile in square:
        printed = sorted(" ".join(r["Rule Description"].split()) for r in rows
                         if int(r["ID"]) == profile.launch_index)
        assert sorted(r.message for r in profile.rules) == printed


def test_markup_is_gone_and_link_text_kept(square):
    small = square[1]
    assert any("@url:" in r.raw_message for r in small.rules)
    assert any("@section:" in r.raw_message for r in small.rules)
    assert not any("@" in r.message for r in small.rules)
    occupancy = next(r for r in small.rules if r.rule_id == "AchievedOccupancy")
    assert ("See the CUDA Best Practices Guide (https://docs.nvidia.com/cuda/"
            "cuda-c-best-practices-guide/index.html#occupancy)") in occupancy.message
    bottleneck = next(r for r in small.rules if r.rule_id == "SOLBottleneck")
    assert bottleneck.message.endswith("Look at Launch Statistics for more details.")


def test_small_grid_launch_ranks_grid_too_small_first(square):
    big, small = square
    ranked = small.hints()
    first = ranked[0]
    assert (first.rule_id, first.title, first.speedup_type) == \
        ("LaunchConfiguration", "Small Grid", "global")
    assert first.estimated_speedup_pct == pytest.approx(96.97, abs=0.01)
    assert first.section_name == "Launch Statistics"
    assert first.focus_metrics[0].name == "launch__grid_size"
    # local estimates (HighPipeUtilization: 99.99% local) come after every global one
    kinds = [r.speedup_type for r in ranked if r.speedup_type]
    assert kinds == sorted(kinds, key=lambda kind: kind != "global")
    assert {r.type for r in ranked} <= {"OPT", "WRN"}
    assert "LaunchConfiguration" not in {r.rule_id for r in big.rules}


def test_info_rules_only_on_request(square):
    small = square[1]
    assert "SOLFPRoofline" not in {r.rule_id for r in small.hints()}
    assert "SOLFPRoofline" in {r.rule_id for r in small.hints(include_info=True)}


def test_one_rule_can_fire_twice(matmul):
    (sgemm,) = matmul
    assert (sgemm.base_name, sgemm.grid, sgemm.block, sgemm.registers_per_thread) == \
        ("sgemm_naive", (64, 64, 1), (16, 16, 1), 32)
    stalls = [r for r in sgemm.rules if r.rule_id == "CPIStall" and r.type == "OPT"]
    assert {r.title for r in stalls} == {"Lg Throttle Stalls", "Long Scoreboard Stalls"}


# --- bad input -------------------------------------------------------------------------------


def test_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(GpubenchError, match="no ncu report at"):
        nr.load_profiles(tmp_path / "nothing.ncu-rep")


def test_garbage_file_is_not_an_ncu_report(tmp_path, reader):
    garbage = tmp_path / "garbage.ncu-rep"
    garbage.write_bytes(b"not a report\n" * 100)
    with pytest.raises(nr.ReportError, match="no profiled kernel in it: not an ncu report, or "
                                             "truncated or corrupt") as info:
        nr.load_profiles(garbage, reader)
    assert str(garbage) in str(info.value)


@pytest.mark.parametrize("fraction, broken", [(0.5, 0), (0.9, 1)])
def test_truncated_report_is_an_error_not_a_kernel_named_none(tmp_path, reader, fraction,
                                                               broken):
    """Cut at half, ncu_report gives one empty launch; at 90%, the first launch whole and the
    second empty. Either way the file is reported, not shown as 'None grid (?)'."""
    data = SQUARE_REP.read_bytes()
    truncated = tmp_path / "cut.ncu-rep"
    truncated.write_bytes(data[:int(len(data) * fraction)])
    with pytest.raises(nr.ReportError, match=f"truncated or corrupt ncu report: launch {broken} "):
        nr.load_profiles(truncated, reader)


# --- pure helpers ----------------------------------------------------------------------------


def test_base_name():
    assert kp.base_name("square_kernel(const float *, float *, int)") == "square_kernel"
    assert kp.base_name("void gemm<float, 128>(float *, int)") == "gemm<float, 128>"
    assert kp.base_name("(anonymous namespace)::k(int)") == "(anonymous namespace)::k"
    assert kp.base_name("sq_k") == "sq_k"


def test_gpubench_range_is_the_innermost_of_its_domain():
    nvtx = {"gpubench": ("suite", "square/cuda/1048576/float32:timed"), "other": ("x",)}
    assert kp.gpubench_range(nvtx) == "square/cuda/1048576/float32:timed"
    assert kp.gpubench_range({"other": ("x",)}) is None
    assert kp.gpubench_range({}) is None


def test_profile_from_a_bare_action_has_no_metrics():
    profile = kp.profile_from_raw({"name": "k(int)", "metrics": {}, "rules": []}, 3)
    assert (profile.base_name, profile.launch_index, profile.grid) == ("k", 3, None)
    assert profile.duration_ns is None and profile.metrics == {}
    assert profile.roofline_bound is None


def test_rule_without_message_is_dropped():
    assert kp.rule_from_dict({"rule_identifier": "X", "rule_message": {}}) is None


# --- finding ncu's own copy of the module ----------------------------------------------------


def _fake_install(root: Path) -> tuple[Path, Path]:
    """An ncu install tree shaped like 2025.3's: the binary under target/<platform>/."""
    install = root / "nsight-compute" / "2025.3.1"
    binary = install / "target" / "linux-desktop-glibc_2_11_3-x64" / "ncu"
    binary.parent.mkdir(parents=True)
    binary.write_text("")
    python_dir = install / "extras" / "python"
    python_dir.mkdir(parents=True)
    (python_dir / "ncu_report.py").write_text("import _ncu_report\nVALUE = _ncu_report.VALUE\n")
    (python_dir / "_ncu_report.py").write_text("VALUE = 42\n")
    return binary, python_dir


def test_finds_extras_python_through_a_symlink(tmp_path, monkeypatch):
    binary, python_dir = _fake_install(tmp_path)
    link = tmp_path / "bin" / "ncu"
    link.parent.mkdir()
    link.symlink_to(binary)
    monkeypatch.setattr(rm.shutil, "which", lambda name: None)
    monkeypatch.setattr(rm, "DEFAULT_NCU", str(tmp_path / "missing" / "ncu"))
    monkeypatch.setattr(rm, "NSIGHT_COMPUTE_ROOT", tmp_path / "missing")
    assert rm.find_ncu_python_dir(str(link)) == python_dir


def test_finds_the_newest_install_under_the_default_root(tmp_path, monkeypatch):
    _, python_dir = _fake_install(tmp_path)
    older = tmp_path / "nsight-compute" / "2024.1.0" / "extras" / "python"
    older.mkdir(parents=True)
    (older / "ncu_report.py").write_text("")
    monkeypatch.setattr(rm.shutil, "which", lambda name: None)
    monkeypatch.setattr(rm, "DEFAULT_NCU", str(tmp_path / "missing" / "ncu"))
    monkeypatch.setattr(rm, "NSIGHT_COMPUTE_ROOT", tmp_path / "nsight-compute")
    assert rm.find_ncu_python_dir() == python_dir


def test_import_from_dir_puts_the_native_part_on_the_path(tmp_path):
    _, python_dir = _fake_install(tmp_path)
    saved = {name: sys.modules.pop(name) for name in ("ncu_report", "_ncu_report")
             if name in sys.modules}
    try:
        module = rm.import_from_dir(python_dir)
        assert module.VALUE == 42
        assert str(python_dir) not in sys.path
    finally:
        for name in ("ncu_report", "_ncu_report"):
            sys.modules.pop(name, None)
        sys.modules.update(saved)


def test_no_module_anywhere_says_how_to_get_it(tmp_path, monkeypatch):
    monkeypatch.setattr(rm, "_import_installed", lambda: None)
    monkeypatch.setattr(rm.shutil, "which", lambda name: None)
    monkeypatch.setattr(rm, "DEFAULT_NCU", str(tmp_path / "missing" / "ncu"))
    monkeypatch.setattr(rm, "NSIGHT_COMPUTE_ROOT", tmp_path / "missing")
    with pytest.raises(EnvironmentProblem, match="pip install ncu-report") as info:
        rm.import_ncu_report()
    assert "gpubench[ncu]" in str(info.value) and "\n" not in str(info.value)


def test_gpubench_own_report_carries_its_nvtx_range_and_hint_sections():
    """Recorded by `gpubench ncu square` on an H100: --nvtx --nvtx-include gpubench@gb_profile/."""
    pytest.importorskip("ncu_report")
    from conftest import FIXTURES
    from gpubench.tools.ncu.command import HINT_SECTIONS, PROFILE_RANGE
    from gpubench.tools.ncu.report import load_profiles

    profiles = load_profiles(FIXTURES / "ncu" / "h100" / "gpubench_square_cuda_nvtx.ncu-rep")
    assert len(profiles) == 1  # only the call inside the range: no warmup, no check launches
    profile = profiles[0]
    assert profile.nvtx_range == PROFILE_RANGE
    assert profile.base_name.startswith("square_kernel")
    assert set(HINT_SECTIONS) <= set(profile.sections)
    assert profile.hints() and all(h.type in ("OPT", "WRN", "ERROR") for h in profile.hints())
