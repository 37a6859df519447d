"""`gpubench ncu` without a GPU: the command line ncu would get, --import of real reports,
and the failures that need no GPU to show."""

import json

import pytest

from conftest import FIXTURES
from gpubench.profilers import ncu_command

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
    (["ncu", "square", "--ncu-path", "/no/such/ncu"], 6, "ncu not found"),
    (["ncu", "--import", "/no/such.ncu-rep"], 2, "no ncu report"),
    (["ncu"], 2, "name a kernel family"),
])
def test_ncu_failures_are_one_line_and_an_exit_code(gpubench, args, code, message):
    done = gpubench(*args)
    assert done.code == code, done.output
    assert message in done.stderr and "Traceback" not in done.output


@pytest.mark.slow
def test_import_of_a_file_that_is_no_report(gpubench, tmp_path):
    pytest.importorskip("ncu_report")
    garbage = tmp_path / "garbage.ncu-rep"
    garbage.write_bytes(b"not a report at all")
    done = gpubench("ncu", "--import", str(garbage))
    assert done.code == 2 and "not an ncu report" in done.stderr


def test_console_failures_become_their_own_exit_codes(tmp_path):
    """On ncu's recorded console text: 'No kernels were profiled' exits 0 in ncu, 8 here."""
    from gpubench import errors
    from gpubench.commands.ncu import _raise_console_problems

    text = (FIXTURES / "ncu" / "h200" / "no_kernels_profiled_console.txt").read_text()
    with pytest.raises(errors.NoKernelsProfiled) as info:
        _raise_console_problems(text, tmp_path / "ncu.log")
    assert info.value.exit_code == errors.EXIT_NO_KERNELS
    # No recorded ERR_NVGPUCTRPERM output exists (the lent GPUs allow profiling): this line
    # only quotes the documented error token.
    with pytest.raises(errors.ProfilerPermission) as info:
        _raise_console_problems("==ERROR== ERR_NVGPUCTRPERM - The user does not have "
                                "permission to access NVIDIA GPU Performance Counters",
                                tmp_path / "ncu.log")
    assert info.value.exit_code == errors.EXIT_PROFILER_PERMISSION
    assert "NVreg_RestrictProfilingToAdminUsers=0" in str(info.value)
    clean = (FIXTURES / "ncu" / "h200" / "square_small_grid_console.txt").read_text()
    _raise_console_problems(clean, tmp_path / "ncu.log")  # a good run raises nothing
