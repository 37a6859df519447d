"""`gpubench ncu` without a GPU: the command line ncu would get, --import of real reports,
and the failures that need no GPU to show."""

import io
import json
import os

import pytest
from rich.console import Console

from conftest import FIXTURES, has_cuda
from gpubench import errors
from gpubench.tools.ncu import command as ncu_command

REPORT = FIXTURES / "ncu" / "h200" / "square_two_launches_full.ncu-rep"


def test_ncu_argv_selects_gpubench_range_and_leaves_clocks_alone():
    argv = ncu_command.ncu_argv("ncu", "profiles/x/sq", ["python", "-m", "w"], use_nvtx=True)
    text = " ".join(argv)
    assert argv[:3] == ["ncu", "--clock-control", "none"]
    assert "--nvtx --nvtx-include gpubench@gb_profile/" in text  # trailing '/': push/pop range
    assert "--export profiles/x/sq" in text and argv[-3:] == ["python", "-m", "w"]
    for section in ("SpeedOfLight", "WarpStateStats", "LaunchStats", "Occupancy"):
        assert f"--section {section}" in text
    assert "--set" not in argv


def test_ncu_argv_full_set_and_profiler_api_fallback():
    argv = ncu_command.ncu_argv("ncu", "r", ["t"], set_name="full", metrics=("a", "b"),
                                clock_control="base", use_nvtx=False)
    assert argv[argv.index("--set") + 1] == "full"
    assert argv[argv.index("--profile-from-start") + 1] == "off"
    assert argv[argv.index("--metrics") + 1] == "a,b"
    assert "--nvtx" not in argv and "--section" not in argv
    target = ncu_command.worker_target("py", "t.json", "r.json", use_nvtx=False)
    assert target[-2:] == ["--region", "cuda-profiler-api"]


@pytest.mark.slow
def test_import_shows_hints_ranked_with_markup_cleaned(gpubench):
    pytest.importorskip("ncu_report")
    done = gpubench("ncu", "--import", str(REPORT))
    assert done.code == 0, done.output
    assert "square_kernel" in done.stdout and "speed of light" in done.stdout
    assert "OPT" in done.stdout and "global" in done.stdout
    assert "@section:" not in done.stdout and "@url:" not in done.stdout


@pytest.mark.slow
def test_import_json_and_csv(gpubench, tmp_path):
    pytest.importorskip("ncu_report")
    csv_path = tmp_path / "hints.csv"
    done = gpubench("ncu", "--import", str(REPORT), "--json", "--csv", str(csv_path))
    assert done.code == 0, done.output
    document = json.loads(done.stdout)
    assert document and csv_path.read_text().count("\n") > 10


@pytest.mark.slow
@pytest.mark.parametrize("args, code, message", [
    # without a GPU that comes first: installing ncu would not help (issue 52)
    (["ncu", "square", "--ncu-path", "/no/such/ncu"], *((6, "ncu not found") if has_cuda()
                                                        else (5, "has no CUDA GPU"))),
    (["ncu", "--import", "/no/such.ncu-rep"], 2, "no ncu report"),
    (["ncu"], 2, "name a kernel family"),
])
def test_ncu_failures_are_one_line_and_an_exit_code(gpubench, args, code, message):
    done = gpubench(*args)
    assert done.code == code, done.output
    assert message in done.stderr and "Traceback" not in done.output


@pytest.mark.slow
@pytest.mark.parametrize("cut, message", [
    (None, "no profiled kernel in it: not an ncu report, or truncated or corrupt"),
    (0.5, "truncated or corrupt ncu report: launch 0 (of 1) has no kernel name"),
    (0.9, "truncated or corrupt ncu report: launch 1 (of 2) has no kernel name"),
], ids=["garbage", "first-half", "first-90pct"])
def test_import_of_a_garbage_or_truncated_report(gpubench, tmp_path, cut, message):
    """Exit 2 ("unreadable report") with one line naming the file, never 'None grid (?)'."""
    pytest.importorskip("ncu_report")
    bad = tmp_path / "bad.ncu-rep"
    data = REPORT.read_bytes()
    bad.write_bytes(b"not a report at all" if cut is None else data[:int(len(data) * cut)])
    done = gpubench("ncu", "--import", str(bad))
    assert done.code == errors.EXIT_USAGE, done.output
    assert message in done.stderr and str(bad) in " ".join(done.stderr.split())
    assert "Traceback" not in done.output and "None" not in done.stdout


@pytest.mark.slow
def test_import_csv_into_a_missing_folder_makes_it(gpubench, tmp_path):
    pytest.importorskip("ncu_report")
    csv_path = tmp_path / "new" / "deeper" / "hints.csv"
    done = gpubench("ncu", "--import", str(REPORT), "--json", "--csv", str(csv_path))
    assert done.code == 0, done.output
    assert csv_path.read_text().startswith("variant,kernel,launch_index")


@pytest.mark.slow
def test_import_csv_where_a_file_is_in_the_way_is_an_output_error(gpubench, tmp_path):
    """A path under a regular file cannot be written, not even by root."""
    pytest.importorskip("ncu_report")
    (tmp_path / "somefile.txt").write_text("")
    done = gpubench("ncu", "--import", str(REPORT), "--json", "--csv", "somefile.txt/out.csv")
    assert done.code == errors.EXIT_OUTPUT == 12, done.output
    assert "--csv somefile.txt/out.csv: cannot write it" in done.stderr
    assert "Traceback" not in done.output


@pytest.mark.slow
@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0,
                    reason="root writes into a 0o500 folder anyway (the file-in-the-way test "
                           "covers root)")
def test_import_csv_into_a_read_only_folder_is_an_output_error(gpubench, tmp_path):
    pytest.importorskip("ncu_report")
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    try:
        done = gpubench("ncu", "--import", str(REPORT), "--csv", str(locked / "out.csv"))
    finally:
        locked.chmod(0o700)
    assert done.code == errors.EXIT_OUTPUT, done.output
    assert str(locked / "out.csv") in done.stderr and "Permission denied" in done.stderr
    assert "Traceback" not in done.output


def test_import_with_the_bundled_reader_shape(monkeypatch, tmp_path):
    """`gpubench ncu --import` with only ncu 2025.3.1's own ncu_report (shaped from PyPI's):
    no AttributeError; hints, the note on sections, and a CSV."""
    module = pytest.importorskip("ncu_report")
    from test_ncu_report import bundled_shaped

    from gpubench.commands.ncu import NcuCommand, NcuRequest
    from gpubench.commands.targets import TargetChoice
    from gpubench.tools.ncu import report_module as ncu_report

    monkeypatch.setattr(ncu_report, "import_ncu_report", lambda path=None: bundled_shaped(module))
    console = Console(file=io.StringIO(), width=200, color_system=None)
    request = NcuRequest(TargetChoice(None), import_path=REPORT,
                         csv_path=tmp_path / "out" / "hints.csv")
    command = NcuCommand(request, console)
    assert command.execute() == errors.EXIT_OK
    text = " ".join(console.file.getvalue().split())
    assert "Small Grid" in text and "96.97% global" in text
    assert "cannot list a report's sections" in text
    assert (tmp_path / "out" / "hints.csv").read_text().count("LaunchConfiguration") == 1


def test_console_failures_become_their_own_exit_codes(tmp_path):
    """On ncu's recorded console text: 'No kernels were profiled' exits 0 in ncu, 8 here."""
    from gpubench import errors
    from gpubench.tools.ncu.console import raise_console_problems

    text = (FIXTURES / "ncu" / "h200" / "no_kernels_profiled_console.txt").read_text()
    with pytest.raises(errors.NoKernelsProfiled) as info:
        raise_console_problems(text, tmp_path / "ncu.log")
    assert info.value.exit_code == errors.EXIT_NO_KERNELS
    # No recorded ERR_NVGPUCTRPERM output exists (the lent GPUs allow profiling): this line
    # only quotes the documented error token.
    with pytest.raises(errors.ProfilerPermission) as info:
        raise_console_problems("==ERROR== ERR_NVGPUCTRPERM - The user does not have "
                                "permission to access NVIDIA GPU Performance Counters",
                                tmp_path / "ncu.log")
    assert info.value.exit_code == errors.EXIT_PROFILER_PERMISSION
    assert "NVreg_RestrictProfilingToAdminUsers=0" in str(info.value)
    clean = (FIXTURES / "ncu" / "h200" / "square_small_grid_console.txt").read_text()
    raise_console_problems(clean, tmp_path / "ncu.log")  # a good run raises nothing
