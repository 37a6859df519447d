"""End to end through the real command line, on the CPU path: what a user would type."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import (
    FAST,
    TEST_KERNELS,
    gpubench_in,
    has_cuda,
    run_index_for,
    start_hanging_run,
    wait_for_worker_log,
)

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def square_run(tmp_path_factory, build_cache):
    """One `gpubench run square` on the CPU, read by the tests below it (a run costs a
    worker's start and the C++ variant's build)."""
    return gpubench_in(tmp_path_factory.mktemp("square-run"), build_cache, "run", "square",
                       "--sizes", "4096", *FAST, "--seed", "3", "--device", "cpu")


def test_square_runs_torch_triton_interpreter_and_cpu_cpp(square_run):
    done = square_run
    assert done.code == 0, done.output
    rows = done.by_variant()
    assert {v: r["status"] for v, r in rows.items()} == \
        {"torch": "ok", "cuda": "ok", "triton": "ok"}
    timed = {v: r for v, r in rows.items() if v != "triton"}
    assert all(r["samples"] >= 5 and r["median_s"] > 0 for r in timed.values())
    assert rows["cuda"]["compile_cached"] is not None
    assert rows["torch"]["speedup_vs_baseline"] == 1.0
    # The interpreter's row is checked, not timed (its time would be the interpreter's)
    assert rows["triton"]["check"]["passed"] and rows["triton"]["median_s"] is None
    assert "host-clock" in rows["torch"]["method"]
    document = done.results()
    assert document["env"]["device"] == "cpu" and document["env"]["torch"]
    assert document["meta"]["seed"] == 3 and "gpubench" in document["meta"]["command"]
    run_dir = next((done.cwd / "profiles").iterdir())
    csv = (run_dir / "results.csv").read_text().splitlines()
    assert csv[0].startswith("family,variant,n,dtype,mode,status,median_s,shape,kind")
    assert len(csv) == 4
    assert {r["mode"] for r in rows.values()} == {"cpu"}
    assert "square  n=4096  float32" in done.stdout and "PASS" in done.stdout
    # piped, as in CI logs: a line per finished point instead of a progress bar
    assert "[1/3] square/torch n=4096 float32: cpu " in done.stdout
    assert "[3/3] square/" in done.stdout


def test_second_process_reuses_the_cpp_build(square_run, gpubench):
    # On a CPU the shared square run is the process that built (or found) the build the
    # second one reuses; on a GPU the variant builds for CUDA, so a first run does here.
    first = gpubench("run", "square", "--variants", "cuda", "--sizes", "1024", *FAST) \
        if has_cuda() else square_run
    again = gpubench("run", "square", "--variants", "cuda", "--sizes", "1024", *FAST)
    assert first.code == 0 and again.code == 0, again.output
    assert first.by_variant()["cuda"]["status"] == "ok"
    row = again.by_variant()["cuda"]
    assert row["compile_cached"] is True and row["compile_s"] < 1.0


def test_cuda_only_variants_are_skipped_with_the_reason(gpubench):
    done = gpubench("run", "matmul", "--sizes", "32", "--variants", "tiled", *FAST)
    assert done.code == 0, done.output
    rows = done.by_variant()
    assert rows["tiled"]["status"] == "skipped"
    assert "needs a CUDA GPU" in rows["tiled"]["error"]
    assert rows["torch"]["status"] == "ok"  # the baseline always runs
    assert "skipped 1 point(s) of matmul/tiled: needs a CUDA GPU" in done.stdout


def test_json_goes_to_stdout(gpubench):
    done = gpubench("run", "vector_add", "--variants", "torch", "--sizes", "256", *FAST, "--json")
    assert done.code == 0, done.output
    document = json.loads(done.stdout)
    assert [r["status"] for r in document["results"]] == ["ok"]
    assert len(document["results"][0]["measurement"]["samples_s"]) >= 5


def test_wrong_crashing_and_hanging_variants_fail_alone(gpubench):
    done = gpubench("run", "faulty", "--kernels-dir", str(TEST_KERNELS), "--timeout", "4", *FAST,
                    env={"GPUBENCH_TEST_HANG_S": "600"})
    assert done.code == 1, done.output
    status = {v: r["status"] for v, r in done.by_variant().items()}
    assert status == {"torch": "ok", "wrong": "fail", "unwritten": "fail", "nan": "fail",
                      "raises": "error", "caches": "fail", "segfault": "crashed",
                      "after_crash": "ok", "hang": "timeout", "after_hang": "ok"}
    rows = done.by_variant()
    assert rows["unwritten"]["check"]["nonfinite"] == 2048
    assert rows["caches"]["check"]["passed"]
    assert not rows["caches"]["measurement"]["recheck"]["passed"]
    assert "SIGSEGV" in rows["segfault"]["error"] and "spec.py:" in rows["segfault"]["error"]
    assert rows["wrong"]["speedup_vs_baseline"] is None
    assert "FAIL" in done.stdout and "Traceback" not in done.output
    # strict JSON although a FAIL row holds non-finite numbers (NaN outputs: inf error)
    text = next((done.cwd / "profiles").glob("*/results.json")).read_text()
    json.loads(text, parse_constant=lambda token: pytest.fail(f"non-JSON token {token}"))


def test_build_error_shows_file_and_line_and_others_still_run(gpubench):
    done = gpubench("run", "badcpp", "--kernels-dir", str(TEST_KERNELS), "--device", "cpu", *FAST,
                    "--verbose")
    assert done.code == 1, done.output
    rows = done.by_variant()
    assert rows["torch"]["status"] == "ok"
    broken = rows["broken"]
    assert broken["status"] == "build_error"  # one name: BUILD ERROR in the log and table
    assert "add_one.cpp:7:" in broken["error"]  # the user's file and line
    assert "\n    out.copy_(x + undeclared_offset);\n" in done.stdout  # and its source line
    assert "BUILD ERROR" in done.stdout and "COMPILE" not in done.output
    assert broken["median_s"] is None and broken["compile_s"] > 1  # its build seconds
    assert Path(broken["build"]["log"]).is_file()  # the whole compiler log, kept
    site = broken["error_site"]
    assert site["file"].endswith("add_one.cpp") and site["line"] == 7
    assert "undeclared_offset" in site["log"]  # results.json keeps the log, --verbose shows it
    assert "--- BUILD ERROR badcpp/broken n=1024 float32:" in done.stdout


def test_errors_in_a_helper_and_a_triton_kernel_show_at_their_line(gpubench):
    done = gpubench("run", "errsite", "--kernels-dir", str(TEST_KERNELS), "--device", "cpu", *FAST)
    assert done.code == 1, done.output
    rows = done.by_variant()
    helper, triton = rows["helper"], rows["triton"]
    # the raise in the family's helper, not gpubench's call of the variant
    assert helper["status"] == "error"
    assert "errsite/helpers.py:10: ValueError: no offset for 256 elements" in helper["error"]
    assert '\n    raise ValueError(f"no offset for {x.numel()} elements")' in done.stdout
    # the kernel's line under TRITON_INTERPRET=1, not Triton's InterpreterError
    assert "errsite/add_triton.py:14: ValueError: Cannot make_shape_compatible" in \
        triton["error"]
    assert "\n    y = x + tl.arange(0, 2 * BLOCK)" in done.stdout
    assert "Traceback" not in done.output  # the whole traceback only with --verbose
    assert "Traceback (most recent call last)" in helper["error_site"]["log"]
    verbose = gpubench("run", "errsite", "--kernels-dir", str(TEST_KERNELS), "--device", "cpu",
                       "--variants", "helper", *FAST, "-v")
    assert "Traceback (most recent call last)" in verbose.stdout
    assert "in _offset_of" in verbose.stdout


def test_suite_file_selects_families_sizes_and_variants(gpubench, tmp_path):
    suite = tmp_path / "suite.toml"
    suite.write_text('families = ["square"]\nvariants = ["torch"]\n'
                     '[sizes]\nsquare = [512, "2^10"]\n[timing]\nmax_time_ms = 20\nwarmup_ms = 5\n')
    done = gpubench("run", "--config", str(suite))
    assert done.code == 0, done.output
    sizes = [r["shape"] for r in done.results()["results"]]
    assert sizes == [{"n": 512}, {"n": 1024}]


@pytest.mark.parametrize("args, code, message", [
    (["run", "sqaure"], 2, "did you mean: square"),
    (["run", "square", "--variants", "trition"], 2, "did you mean: triton"),
    (["run", "square", "--sizes", "-4"], 2, "sizes must be positive"),
    (["run", "square", "--sizes", "12ab"], 2, "invalid size '12ab'"),
    (["run", "square", "--dtype", "fp8"], 2, "unknown dtype 'fp8'"),
    (["run", "brokenspec", "--kernels-dir", str(TEST_KERNELS)], 4, "spec.py: failed to import"),
    (["run", "square", "--kernels-dir", "/no/such/folder"], 2, "does not exist"),
    (["run", "--config", "/no/such.toml"], 3, "no such config file"),
    (["run", "square", "--timeout", "0"], 2, "Invalid value"),
])
def test_bad_input_is_one_line_and_an_exit_code(gpubench_in_process, args, code, message):
    done = gpubench_in_process(*args)
    assert done.code == code, done.output
    assert message in done.stderr
    assert "Traceback" not in done.output


def test_malformed_config_names_file_and_key(gpubench, tmp_path):
    suite = tmp_path / "bad.toml"
    suite.write_text("[timing]\nmax_time_ms = 'long'\n")
    done = gpubench("run", "--config", str(suite))
    assert done.code == 3 and "bad.toml: key 'timing.max_time_ms'" in done.stderr
    assert "Traceback" not in done.output


def test_list_shows_variants_and_why_some_cannot_run(gpubench):
    done = gpubench("list", "--device", "cpu")
    assert done.code == 0, done.output
    for text in ("matmul", "naive", "tiled", "triton", "vector_add"):
        assert text in done.stdout
    detail = gpubench("list", "matmul", "--device", "cpu")  # one family in full: the why
    assert detail.code == 0, detail.output
    assert "tiled" in detail.stdout and "needs a CUDA GPU" in detail.stdout


def test_list_reports_a_broken_spec_and_exits_non_zero(gpubench):
    done = gpubench("list", "--kernels-dir", str(TEST_KERNELS))
    assert done.code == 4
    assert "brokenspec" in done.stdout and "NameError" in done.stdout
    assert "faulty" in done.stdout  # the healthy user families are still listed


def test_ctrl_c_writes_what_was_measured(tmp_path, build_cache):
    env = {**os.environ, "GPUBENCH_CACHE_DIR": str(build_cache), "GPUBENCH_TEST_HANG_S": "600"}
    process = start_hanging_run(tmp_path / "run", tmp_path, env)
    wait_for_worker_log(tmp_path / "run", "faulty/hang")
    time.sleep(1.0)  # the worker is now inside hang()
    process.send_signal(signal.SIGINT)
    output, _ = process.communicate(timeout=60)
    assert process.returncode == 130, output
    document = json.loads((tmp_path / "run" / "results.json").read_text())
    status = {r["variant"]: r["status"] for r in document["results"]}
    assert status == {"torch": "ok", "hang": "not_run"}
    assert "Traceback" not in output
    assert "interrupted: results so far in" in output  # not ": results so far"
    mode = (tmp_path / "run" / "results.json").stat().st_mode & 0o777
    assert mode == 0o666 & ~current_umask()  # shared like report.html, not 0600


def current_umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


# ---------------------------------------------------------------- shapes and run records


def test_matmul_runs_named_shapes_with_one_column_per_axis(gpubench):
    done = gpubench("run", "matmul", "--shape", "M=256,N=128,K=64", "--shape", "M=64,N=64,K=512",
                    *FAST, "--device", "cpu")
    assert done.code == 0, done.output
    rows = done.results()["results"]
    gpu_or_16_bit_only = ("tiled", "wmma")
    assert {r["status"] for r in rows if r["variant"] not in gpu_or_16_bit_only} == {"ok"}
    assert {r["status"] for r in rows if r["variant"] in gpu_or_16_bit_only} == {"skipped"}
    assert [r["shape"] for r in rows if r["variant"] == "torch"] == [
        {"M": 256, "N": 128, "K": 64}, {"M": 64, "N": 64, "K": 512}]
    assert "matmul  M=256 N=128 K=64  float32" in done.stdout
    run_dir = next((done.cwd / "profiles").glob("2*"))
    header = (run_dir / "results.csv").read_text().splitlines()[0].split(",")
    assert header[:5] == ["family", "variant", "M", "N", "K"] and "shape" in header
    # the run document loads back as a DataFrame with the axis columns
    code = ("import gpubench; f = gpubench.load_run('latest').to_frame(); "
            "print(f[['variant', 'M', 'N', 'K', 'status']].to_string())")
    shown = subprocess.run([sys.executable, "-c", code], cwd=done.cwd, capture_output=True,
                           text=True, timeout=120,
                           env={**os.environ, "GPUBENCH_RUN_INDEX": str(run_index_for(done.cwd))})
    assert shown.returncode == 0, shown.stderr
    assert "naive  256  128   64" in shown.stdout.replace("    ", "  ").replace("   ", "  ") \
        or ("naive" in shown.stdout and "256" in shown.stdout and "512" in shown.stdout)


def test_softmax_sweeps_an_axis_and_matmul_sizes_fill_every_axis(gpubench):
    done = gpubench("run", "softmax", "--axis", "cols=128,1000,4k", *FAST)
    assert done.code == 0, done.output
    rows = done.results()["results"]
    assert {r["status"] for r in rows} == {"ok"}, [(r["variant"], r["error"]) for r in rows]
    assert sorted({r["shape"]["cols"] for r in rows}) == [128, 1000, 4096]
    assert {r["shape"]["rows"] for r in rows} == {64}  # the CPU default of the other axis
    again = gpubench("run", "matmul", "--sizes", "64,128", "--variants", "torch", *FAST)
    assert again.code == 0, again.output
    assert [r["shape"] for r in again.results()["results"]] == [
        {"M": 64, "N": 64, "K": 64}, {"M": 128, "N": 128, "K": 128}]


@pytest.mark.parametrize("args, code, message", [
    (["run", "matmul", "--shape", "M=64,N=64"], 2, "family 'matmul': the shape M=64,N=64 lacks "
                                                   "axis 'K'"),
    (["run", "matmul", "--axis", "k=64,128"], 2, "family 'matmul' has no axis 'k' (did you "
                                                 "mean: K?)"),
    (["run", "matmul", "--shape", "M=64,N=64,K=six"], 2, "invalid size 'six'"),
    (["run", "softmax", "--sizes", "1024"], 2, "family 'softmax' has axes rows, cols"),
])
def test_bad_shapes_are_one_line_and_exit_2(gpubench_in_process, args, code, message):
    done = gpubench_in_process(*args, *FAST)
    assert done.code == code, done.output
    assert message in done.stderr and "Traceback" not in done.output


def test_bad_shape_in_a_suite_file_exits_3_naming_the_file(gpubench_in_process, tmp_path):
    suite = tmp_path / "shapes.toml"
    suite.write_text('families = ["matmul"]\n[shapes]\nmatmul = ["M=64,N=64,Q=1"]\n')
    done = gpubench_in_process("run", "--config", str(suite))
    assert done.code == 3, done.output
    assert "shapes.toml" in done.stderr and "no axis 'Q'" in done.stderr


def test_json_stdout_stays_pure_when_a_spec_prints(gpubench):
    done = gpubench("run", "chatty", "--kernels-dir", str(TEST_KERNELS), *FAST, "--json")
    assert done.code == 0, done.output
    document = json.loads(done.stdout, parse_constant=lambda t: pytest.fail(t))
    assert document["schema"] == 2 and document["results"][0]["shape"] == {"rows": 8, "cols": 16}
    assert "chatty: hello from spec.py" in done.stderr
    tool = subprocess.run([sys.executable, "-m", "json.tool"], input=done.stdout, text=True,
                          capture_output=True)
    assert tool.returncode == 0


@pytest.fixture(scope="module")
def vector_add_markdown_run(tmp_path_factory, build_cache):
    """One small CPU run of vector_add with --ncu-check (skipped on a CPU) and --markdown,
    read by the two tests below."""
    return gpubench_in(tmp_path_factory.mktemp("vector-add-run"), build_cache, "run",
                       "vector_add", "--variants", "torch", "--sizes", "256", *FAST,
                       "--device", "cpu", "--ncu-check", "--markdown")


def test_ncu_check_on_the_cpu_says_what_it_needs_and_loses_nothing(vector_add_markdown_run):
    done = vector_add_markdown_run
    assert done.code == 0, done.output
    assert "--ncu-check: skipped" in done.output and "needs ncu and a CUDA GPU" in done.output
    (row,) = done.results()["results"]
    assert row["status"] == "ok" and row["ncu_check"] is None and row["vs_ncu"] is None
    assert "vs ncu" not in done.stdout


def test_run_markdown_prints_the_tables_for_a_pr(vector_add_markdown_run, gpubench):
    done = vector_add_markdown_run
    assert done.code == 0, done.output
    assert "**vector_add  n=256  float32 on CPU**" in done.stdout
    assert "| variant | kind | check | median |" in done.stdout
    both = gpubench("run", "vector_add", "--markdown", "--json")
    assert both.code == 2 and "choose one" in both.output


def test_inputs_that_a_seed_does_not_reproduce_are_an_error_that_says_how(gpubench):
    """The check draws a point's inputs again from their seed after a variant's calls; a
    make_inputs that gives other values for one seed is the family's ERROR, said once, not
    every variant FAILing for 'mutated its input'."""
    done = gpubench("run", "unseeded", "--kernels-dir", str(TEST_KERNELS), *FAST)
    row = done.by_variant()["torch"]
    assert row["status"] == "error", row
    assert "make_inputs gives other values for the same seed" in row["error"]
    assert "Traceback" not in done.output and done.code == 1


def test_a_damaged_run_index_stops_no_run(gpubench, tmp_path):
    """Issue 52's attack: a runs.json nested 100,000 deep made `run`, `runs` and `compare
    latest~1 latest` die with RecursionError, and the run lost its results; one badly
    typed entry emptied the whole index."""
    index = run_index_for(tmp_path)
    index.write_text("[" * 100_000 + "]" * 100_000)
    first = gpubench("run", "square", "--variants", "torch", "--sizes", "1024", *FAST)
    assert first.code == 0 and "Traceback" not in first.output, first.output
    assert first.by_variant()["torch"]["status"] == "ok"
    listed = gpubench("runs")
    assert listed.code == 0 and "Traceback" not in listed.output, listed.output
    document = json.loads(index.read_text())  # rewritten whole, with the run
    assert len(document["runs"]) == 1
    document["runs"].append({"path": "/x", "started": "yesterday", "command": 1, "cwd": "/"})
    index.write_text(json.dumps(document))
    second = gpubench("run", "square", "--variants", "torch", "--sizes", "1024", *FAST)
    assert second.code == 0, second.output
    assert gpubench("compare", "latest~1", "latest").code == 0
    assert len(json.loads(index.read_text())["runs"]) == 2  # the bad entry passed over


def test_a_file_size_limit_loses_no_point_and_says_nothing_was_saved(tmp_path, build_cache):
    """Issue 52's attack: under `ulimit -f 40` both the save and the rescue save raised
    'File too large', with a traceback and exit 1, the second point never ran, and the
    rescue folder was left in TMPDIR without a word."""
    import resource

    limit = 40 * 1024

    def limited():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    env = {**os.environ, "GPUBENCH_CACHE_DIR": str(build_cache), "TMPDIR": str(tmp_path),
           "GPUBENCH_RUN_INDEX": str(run_index_for(tmp_path)), "COLUMNS": "160"}
    done = subprocess.run([sys.executable, "-m", "gpubench", "run", "square", "--variants",
                           "torch", "--sizes", "1024,2048", "--device", "cpu", *FAST, "--out",
                           str(tmp_path / "run")], cwd=tmp_path, env=env, text=True,
                          capture_output=True, timeout=300, preexec_fn=limited)
    output = done.stdout + done.stderr
    assert done.returncode == 12, output
    assert "Traceback" not in output
    assert "n=1024" in output and "n=2048" in output  # both points ran and were shown
    assert "nothing of this run is saved" in output and "results: not saved" in output
    assert not list(tmp_path.glob("gpubench-rescue-*"))  # no empty rescue folder left


def test_an_over_long_out_path_keeps_its_reason_in_view(gpubench):
    """Issue 52: an over-long --out path's reason was cut off with the path."""
    out = "x" * 300 + "/" + "y" * 5000
    done = gpubench("run", "square", "--sizes", "1024", "--variants", "torch", "--device",
                    "cpu", "--out", out)
    assert done.code == 12 and "Traceback" not in done.output, done.output
    line = next(x for x in done.output.splitlines() if "cannot write results" in x)
    assert "File name too long; choose another --out" in line and len(line) < 400
    assert "characters]" in line


def test_a_cache_that_cannot_be_written_is_one_clear_error_not_every_point_crashed(gpubench,
                                                                                   tmp_path):
    """Issue 52: a read-only cache folder made every point CRASHED ('worker failed to
    start'). A file in the cache's way stands in for read-only here (tests run as root)."""
    (tmp_path / "a-file").write_text("")
    done = gpubench("run", "square", "--sizes", "1024", "--device", "cpu",
                    env={"GPUBENCH_CACHE_DIR": str(tmp_path / "a-file" / "cache")})
    assert done.code == 12, done.output
    assert "cache" in done.output and "cannot be written: Not a directory" in done.output
    assert "CRASHED" not in done.output and "Traceback" not in done.output


def test_builds_write_their_temporary_files_where_the_run_removes_them(tmp_path):
    """Issue 52: repeated Ctrl-C during a build left empty cc*.s files in TMPDIR (a killed
    compiler's). Workers and builders get a scratch TMPDIR of the run's own, made inside
    the user's and removed when the run's process ends, however its builds ended."""
    script = ("import os\nfrom gpubench.run.lanes.worker_process import worker_env\n"
              "folder = worker_env('cpu')['TMPDIR']\n"
              "open(os.path.join(folder, 'ccLEFT.s'), 'w').close()  # a killed compiler's\n"
              "print(folder)\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env={**os.environ, "TMPDIR": str(tmp_path)}, timeout=120)
    assert done.returncode == 0, done.stderr
    folder = Path(done.stdout.strip())
    assert folder.parent == tmp_path and folder.name.startswith("gpubench-scratch-")
    assert not folder.exists() and list(tmp_path.iterdir()) == []
