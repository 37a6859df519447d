"""`gpubench nsys` without nsys: the command lines, the stats parser on hand-written output
(tests/fixtures/nsys/README.md: derived from the documentation, not recorded), and the
failures — a missing nsys, one that hangs (killed, its .qdstrm files deleted), one that
makes no report — with fake `nsys` scripts."""

from __future__ import annotations

import json
import stat
import time
from pathlib import Path

import pytest
from rich.console import Console

from conftest import FIXTURES, REPO, has_cuda
from gpubench import errors
from gpubench.commands.nsys import (
    NsysCommand,
    NsysOptions,
    NsysRequest,
    kernels_table,
    profile_task,
)
from gpubench.commands.targets import TargetChoice
from gpubench.records.shape import Shape
from gpubench.run.lanes.protocol import Task
from gpubench.tools.nsys import command as nsys_command
from gpubench.tools.nsys.stats import kernel_rows, parse_stats, range_rows, to_number

NSYS_FIXTURES = FIXTURES / "nsys"
SQUARE_KERNEL = "square_kernel(const float *, float *, int)"


# ---------------------------------------------------------------- command lines


def test_nsys_argv_records_only_gpubench_range():
    argv = nsys_command.nsys_argv("nsys", "profiles/x/sq", ["python", "-m", "w"], use_nvtx=True)
    assert argv == ["nsys", "profile", "-t", "cuda,nvtx", "-o", "profiles/x/sq", "-f", "true",
                    "--capture-range=nvtx", "--nvtx-capture=gb_profile@gpubench",
                    "--capture-range-end=stop", "python", "-m", "w"]
    assert nsys_command.report_path("profiles/x/sq") == "profiles/x/sq.nsys-rep"


def test_nsys_argv_without_nvtx_waits_for_the_cuda_profiler_api():
    target = nsys_command.worker_target("py", "t.json", "r.json", use_nvtx=False)
    argv = nsys_command.nsys_argv("nsys", "r", target, use_nvtx=False)
    assert "--capture-range=cudaProfilerApi" in argv
    assert not any(a.startswith("--nvtx-capture") for a in argv)
    assert argv[-2:] == ["--region", "cuda-profiler-api"]


def test_stats_argv_prints_csv_to_stdout_and_falls_back_to_old_report_names():
    assert nsys_command.stats_argv("nsys", "a.nsys-rep") == [
        "nsys", "stats", "-r", "cuda_gpu_kern_sum,nvtx_sum", "-f", "csv", "-o", "-", "a.nsys-rep"]
    first, second = nsys_command.stats_attempts("nsys", "a.nsys-rep")
    assert first[3] == "cuda_gpu_kern_sum,nvtx_sum" and second[3] == "gpukernsum,nvtxsum"
    assert len(nsys_command.stats_attempts("nsys", "a", ("cuda_api_sum",))) == 1


# ---------------------------------------------------------------- stats parser


def test_parse_two_reports_after_processing_lines():
    tables = parse_stats((NSYS_FIXTURES / "stats_kern_nvtx.txt").read_text())
    assert list(tables) == ["cuda_gpu_kern_sum", "nvtx_sum"]
    assert len(tables["cuda_gpu_kern_sum"]) == 2 and len(tables["nvtx_sum"]) == 1
    raw = tables["cuda_gpu_kern_sum"][1]
    assert raw["Total Time (ns)"] == 40128.0 and raw["Name"] == SQUARE_KERNEL

    kernels = kernel_rows(tables)
    assert kernels[0].name == SQUARE_KERNEL  # longest total first
    square, fill = kernels
    assert (square.instances, square.total_ns, square.avg_ns, square.med_ns) == \
        (1, 40128.0, 40128.0, 40128.0)
    assert (square.min_ns, square.max_ns, square.stddev_ns, square.time_pct) == \
        (40128.0, 40128.0, 0.0, 96.3)
    assert fill.name.startswith("void at::native::vectorized_elementwise_kernel<4, ")
    assert fill.name.endswith("std::array<char *, 1>>(int, T2, T3)")  # commas kept in name
    assert fill.instances == 2 and fill.stddev_ns == 45.3

    (gb_range,) = range_rows(tables)
    assert gb_range.name == "gpubench:gb_profile" and gb_range.style == "PushPop"
    assert gb_range.total_ns == 61440.0 and gb_range.instances == 1


def test_skipped_report_is_present_but_empty():
    tables = parse_stats((NSYS_FIXTURES / "stats_nvtx_skipped.txt").read_text())
    assert tables["nvtx_sum"] == [] and range_rows(tables) == []
    (kernel,) = kernel_rows(tables)
    assert kernel.total_ns == 2880.0 and "square_kernel_cuda" in kernel.name


def test_old_names_banners_separators_other_units_and_unquoted_rows():
    text = "\n".join([
        "** CUDA GPU Kernel Summary (gpukernsum):",
        '"Time(%)","Total Time (us)","Instances","Average","Minimum","Maximum","Name"',
        '62.5,"1,250.5",3,416.8,400,450,"big_kernel"',
        '"37.5","750","1,000","0.75","0.5","1","1"',
        "",
        "** NVTX Range Summary (nvtxsum):",
        '"Time (%)","Total Time (ns)","Instances","Style","Range"',
        '"100.0","2,000,000","1","PushPop","gpubench:gb_profile"',
    ])
    tables = parse_stats(text)
    assert set(tables) == {"cuda_gpu_kern_sum", "nvtx_sum"}  # old names mapped to new
    big, small = kernel_rows(tables)
    assert big.total_ns == pytest.approx(1_250_500.0)  # us scaled to ns
    assert big.avg_ns == 416.8 and big.min_ns == 400.0 and big.med_ns is None
    assert small.name == "1" and small.instances == 1000  # a name stays text
    assert big.time_pct == 62.5
    assert range_rows(tables)[0].total_ns == 2_000_000.0


def test_tables_without_processing_lines_are_named_by_their_columns():
    kern = (NSYS_FIXTURES / "stats_kern_nvtx.txt").read_text().splitlines()
    headers_and_rows = [line for line in kern if line.startswith('"') or not line]
    tables = parse_stats("\n".join(headers_and_rows))
    assert len(tables["cuda_gpu_kern_sum"]) == 2 and len(tables["nvtx_sum"]) == 1


def test_messages_and_garbage_are_not_tables():
    text = "Use the --force-export option, or not\nERROR: something, failed\nplain words\n"
    assert parse_stats(text) == {}


@pytest.mark.parametrize("text, value", [
    ("40128", 40128.0), ("5,850,000", 5850000.0), ("12.5", 12.5), ("-0.5", -0.5),
    ("1e3", 1000.0), ("", None), ("-", None), ("1,2", None), ("PushPop", None),
])
def test_to_number(text, value):
    assert to_number(text) == value


def test_kernels_table_renders():
    tables = parse_stats((NSYS_FIXTURES / "stats_kern_nvtx.txt").read_text())
    console = Console(width=200, record=True)
    console.print(kernels_table(kernel_rows(tables)))
    text = console.export_text()
    assert "square_kernel" in text and "40.1 us" in text and "96.3" in text


# ---------------------------------------------------------------- failures, with fake nsys


def _fake_nsys(tmp_path: Path, body: str) -> Path:
    """An executable `nsys` shell script; $out is the -o path nsys was given."""
    script = tmp_path / "bin" / "nsys"
    script.parent.mkdir(exist_ok=True)
    script.write_text("#!/bin/sh\nout=''\nprev=''\n"
                      'for arg in "$@"; do\n'
                      '  if [ "$prev" = "-o" ]; then out="$arg"; fi\n'
                      '  prev="$arg"\ndone\n' + body)
    script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return script


def _task() -> Task:
    return Task(0, "square", str(REPO / "kernels" / "square"), "torch", "float32",
                Shape({"n": 1024}), 7)


def _alive(pid: int) -> bool:
    """Running (not gone, not a zombie that nobody reaped yet)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return False
    return fields[0] not in ("Z", "X")


def test_hanging_nsys_is_killed_and_its_qdstrm_files_deleted(tmp_path):
    pids = tmp_path / "pids"
    nsys = _fake_nsys(tmp_path, f"""
head -c 4194304 /dev/zero > "$out.qdstrm"
mkdir -p "$TMPDIR/nvidia/nsight_systems/streams"
head -c 1048576 /dev/zero > "$TMPDIR/nvidia/nsight_systems/streams/pid_1.qdstrm"
sleep 1000 &
echo "$$ $!" > "{pids}"
wait
""")
    run_dir = tmp_path / "run"
    start = time.monotonic()
    with pytest.raises(errors.ProfilerTimeout) as caught:
        profile_task(str(nsys), _task(), run_dir, NsysOptions(timeout_s=3))
    elapsed = time.monotonic() - start
    assert 2.5 < elapsed < 10, elapsed

    message = str(caught.value)
    assert "nsys did not finish" in message and "--timeout 3 s" in message
    assert ".qdstrm" in message and "docs/profilers.md" in message
    assert "2 stray" in message and f"{4194304 + 1048576:,} bytes" in message
    assert "deleted" in message and "gpubench trace" in message and "\n" not in message
    assert caught.value.exit_code == errors.EXIT_PROFILER_TIMEOUT

    assert not list(run_dir.rglob("*.qdstrm"))
    assert not [p for p in run_dir.iterdir() if p.name.endswith(".nsys-tmp")]
    assert (run_dir / "square-torch-1024-float32.task.json").is_file()
    shell, sleeper = map(int, pids.read_text().split())
    deadline = time.monotonic() + 3
    while (_alive(shell) or _alive(sleeper)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(sleeper), "the sleeping child of nsys outlived the timeout"
    assert not _alive(shell)


def test_nsys_that_makes_no_report_is_a_profiler_error(tmp_path):
    nsys = _fake_nsys(tmp_path, 'head -c 1000 /dev/zero > "$out.qdstrm"\n'
                                'echo "Generating $out.qdstrm"\nexit 0\n')
    run_dir = tmp_path / "run"
    with pytest.raises(errors.ProfilerError) as caught:
        profile_task(str(nsys), _task(), run_dir, NsysOptions(timeout_s=20))
    assert type(caught.value) is errors.ProfilerError
    message = str(caught.value)
    assert "made no square-torch-1024-float32.nsys-rep" in message
    assert "1,000 bytes" in message and "gpubench trace" in message
    assert not list(run_dir.rglob("*.qdstrm"))


def test_stats_retry_with_old_report_names(tmp_path):
    """A pre-2022 nsys: the new report names fail, the old ones work."""
    fixture = NSYS_FIXTURES / "stats_kern_nvtx.txt"
    nsys = _fake_nsys(tmp_path, f"""
case "$1" in
  profile) touch "$out.nsys-rep" ;;
  stats)
    case "$*" in
      *cuda_gpu_kern_sum*) echo "ERROR: Report 'cuda_gpu_kern_sum' could not be found."; exit 1 ;;
      *gpukernsum*) sed -e 's/cuda_gpu_kern_sum.py/gpukernsum.py/' -e 's/nvtx_sum.py/nvtxsum.py/' \\
                      "{fixture}" ;;
    esac ;;
esac
""")
    run_dir = tmp_path / "run"
    traced = profile_task(str(nsys), _task(), run_dir, NsysOptions(timeout_s=20))
    assert traced.kernels[0].name == SQUARE_KERNEL and traced.ranges[0].style == "PushPop"
    assert traced.report == run_dir / "square-torch-1024-float32.nsys-rep"
    assert traced.cleanup.files == 0
    json.dumps(traced.to_dict())  # --json can print it
    logs = sorted(p.name for p in run_dir.glob("*.nsys-stats*.log"))
    assert logs == ["square-torch-1024-float32.nsys-stats-1.log",
                    "square-torch-1024-float32.nsys-stats.log"]


def test_missing_nsys_raises_tool_missing_that_suggests_trace(monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)  # past the GPU check
    request = NsysRequest(TargetChoice("square"), NsysOptions("/no/such/nsys"))
    command = NsysCommand(request, Console())
    with pytest.raises(errors.ToolMissing) as caught:
        command.execute()
    assert "gpubench trace" in str(caught.value)
    assert caught.value.exit_code == errors.EXIT_TOOL_MISSING == 6


# ---------------------------------------------------------------- the CLI


@pytest.mark.slow
def test_missing_nsys_is_one_line_and_exit_6_or_no_gpu_and_exit_5(gpubench):
    done = gpubench("nsys", "square", "--nsys-path", "/no/such/nsys", timeout=120)
    if has_cuda():
        assert done.code == 6, done.output
        assert "gpubench trace" in done.stderr and "nsys not found" in done.stderr
    else:  # without a GPU that comes first: installing nsys would not help (issue 52)
        assert done.code == 5, done.output
        assert "no CUDA GPU" in done.stderr and "gpubench trace" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "Traceback" not in done.output
