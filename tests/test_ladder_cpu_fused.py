"""The kernel ladder's reductions, fusions and attention on the CPU path (issue 16).

softmax, layernorm, bias_gelu and attention, run through the real command line in ONE
gpubench run (a suite file gives each family a tiny shape), so each C++ extension is
built once (they share the session's build cache with the other tests) and the worker
imports torch once. Every variant that can run here must PASS its check against the
float64 reference; every one that cannot must be SKIPPED with the reason its spec gives.
"""

import os
import subprocess
import sys

import pytest

from conftest import REPO
from gpubench.families import compiled
from gpubench.families.discovery import family_dirs, load_family
from gpubench.families.spec import Machine

pytestmark = pytest.mark.slow

FAMILIES = {
    # family: (the variants it must ship, the shapes run here)
    "softmax": ({"torch", "naive", "online", "block_reduce", "triton"},
                # 1001 columns: odd, so no row is a whole number of vectors
                ["rows=8,cols=1001"]),
    "layernorm": ({"torch", "warp", "triton"}, ["rows=8,cols=1000"]),
    "bias_gelu": ({"torch", "unfused", "fused", "triton"}, ["rows=8,cols=1001"]),
    # S=40: 16-wide blocks leave a ragged last query block and key block, both masks
    "attention": ({"sdpa", "naive", "flash"},
                  ["B=1,H=2,S=40,D=32,mask=1", "B=1,H=2,S=40,D=32,mask=2"]),
}
DTYPES = ("float32", "bfloat16")
CPU = Machine(has_cuda=False, has_triton=True)
# The gpubench (and kernels/) of this checkout, whatever an editable install points at.
THIS_CHECKOUT = {"PYTHONPATH": os.pathsep.join(
    p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)}


@pytest.fixture(scope="module")
def ladder(tmp_path_factory, build_cache):
    """One CPU run of the four families; returns (completed process, results by family)."""
    import json

    folder = tmp_path_factory.mktemp("ladder")
    shapes = "\n".join(f"{name} = {shapes!r}".replace("'", '"')
                       for name, (_, shapes) in FAMILIES.items())
    suite = folder / "ladder.toml"
    suite.write_text(f"families = {list(FAMILIES)!r}\n".replace("'", '"')
                     + f"dtypes = {list(DTYPES)!r}\n".replace("'", '"')
                     + f"[shapes]\n{shapes}\n"
                     + "[timing]\nwarmup_ms = 5\nmin_time_ms = 5\nmax_time_ms = 30\n"
                       "min_samples = 3\n")
    env = {**os.environ, "GPUBENCH_CACHE_DIR": str(build_cache), "COLUMNS": "160",
           **THIS_CHECKOUT}
    done = subprocess.run([sys.executable, "-m", "gpubench", "run", "--config", str(suite),
                           "--device", "cpu", "--seed", "16", "--out", str(folder / "run")],
                          cwd=folder, capture_output=True, text=True, timeout=900, env=env)
    assert (folder / "run" / "results.json").is_file(), done.stdout + done.stderr
    results = json.loads((folder / "run" / "results.json").read_text())["results"]
    by_family: dict[str, list[dict]] = {}
    for row in results:
        by_family.setdefault(row["family"], []).append(row)
    return done, by_family


@pytest.mark.parametrize("name", list(FAMILIES))
def test_every_runnable_variant_passes_and_the_rest_say_why(ladder, name):
    done, by_family = ladder
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    with compiled.run_settings("off"):  # as the run had it: a CPU run leaves it out
        family = load_family(name, family_dirs()[name])
    shipped, shapes = FAMILIES[name]
    assert {v.name for v in family.variants} == shipped
    rows = by_family[name]
    assert len(rows) == len(shipped) * len(DTYPES) * len(shapes)  # every point reported
    for row in rows:
        where = f"{name}/{row['variant']} {row['dtype']} {row['shape']}"
        reason = family.variant(row["variant"]).unavailable_reason(row["dtype"], CPU)
        if reason is None:
            assert row["status"] == "ok", f"{where}: {row['status']} {row['error']}"
            assert row["check"]["passed"] and row["check"]["mismatches"] == 0, where
            if row["kind"] == "triton":  # the interpreter's rows are checked, not timed
                assert row["median_s"] is None, where
            else:
                assert row["median_s"] > 0 and row["samples"] >= 3, where
        else:
            assert row["status"] == "skipped" and row["error"] == reason, where


def test_what_the_cpu_cannot_run_is_only_triton_in_bfloat16(ladder):
    """Every CUDA variant ships a CPU version, so on a CPU the only skips are the Triton
    interpreter's (numpy has no bfloat16), each said in the run's summary."""
    done, by_family = ladder
    skipped = {(r["family"], r["variant"], r["dtype"])
               for rows in by_family.values() for r in rows if r["status"] == "skipped"}
    triton = {"softmax": "triton", "layernorm": "triton", "bias_gelu": "triton",
              "attention": "flash"}
    assert skipped == {(f, v, "bfloat16") for f, v in triton.items()}
    # one summary line per reason: "skipped 5 point(s) of attention/flash, ...: <reason>"
    (summary,) = [line for line in done.stdout.splitlines() if line.startswith("skipped ")]
    assert summary.endswith("the Triton interpreter (no GPU) has no bfloat16 arithmetic")
    assert all(f"{family}/{variant}" in summary for family, variant in triton.items())
    built = [r for rows in by_family.values() for r in rows
             if r["kind"] == "cuda" and r["status"] == "ok"]
    assert {r["family"] for r in built} == {"softmax", "layernorm", "bias_gelu"}


def test_list_shows_the_ladder_families(gpubench):
    done = gpubench("list", "--device", "cpu", env=THIS_CHECKOUT)
    assert done.code == 0, done.output
    for text in ("layernorm", "bias_gelu", "attention", "block_reduce", "online", "unfused",
                 "fused", "flash", "sdpa"):
        assert text in done.stdout, text


def test_triton_softmax_gives_each_thread_64_bytes_of_its_row():
    """The rule the H200 A/B chose (docs/ladder.md, softmax): a 16-bit row of 4096 gets 4
    warps (64 B a thread; the tutorial's table gave 16 warps, 16 B a thread, 76% of copy
    bandwidth), fp32 8192 gets 16; short rows keep 4 warps, the longest stay at 16."""
    import importlib.util

    path = REPO / "kernels" / "softmax" / "softmax_triton.py"
    spec = importlib.util.spec_from_file_location("softmax_triton_rule", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    warps = module.warps_for_row
    assert (warps(4096, 2), warps(4096, 4), warps(8192, 2), warps(8192, 4)) == (4, 8, 8, 16)
    assert warps(1024, 4) == warps(1024, 2) == 4 and warps(2**20, 4) == 16
    for block, size in ((4096, 2), (4096, 4), (8192, 2), (8192, 4)):
        assert block * size // (warps(block, size) * 32) == module.ROW_BYTES_PER_THREAD
