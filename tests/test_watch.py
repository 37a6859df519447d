"""`run --watch`'s pure parts: which files are watched, which variants a saved file
affects, a session's comparisons and the line each point gets. The loop itself:
tests/test_watch_session.py."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from gpubench.analysis.comparison import FASTER, SAME
from gpubench.analysis.watch_history import WatchHistory
from gpubench.families.spec import CudaVariant, Family, Machine, TorchVariant, TritonVariant
from gpubench.families.watched import affected, changed_between, is_watched, snapshot
from gpubench.records.point import PointKey
from gpubench.records.result import BUILD_ERROR, OK, Result
from gpubench.records.run import RunDocument
from gpubench.records.shape import Shape
from gpubench.report.watch_view import iteration_lines, point_names
from gpubench.timing.measurement import Measurement

CPU = Machine(has_cuda=False, has_triton=True)
GPU = Machine(has_cuda=True, has_triton=True, device_name="H100")


@pytest.mark.parametrize(("path", "watched"), [
    ("fam/spec.py", True), ("fam/k.cu", True), ("fam/common.cuh", True), ("fam/b.cpp", True),
    ("fam/util.h", True), ("fam/sub/x.hpp", True),
    ("fam/notes.md", False), ("fam/k.o", False), ("fam/ext.so", False),
    ("fam/.k.cu.swp", False), ("fam/k.cu~", False), ("fam/.#k.cu", False),
    ("fam/#k.cu#", False), ("fam/4913", False), ("fam/__pycache__/spec.cpython-311.pyc", False),
    ("fam/__pycache__/x.py", False), ("fam/build/gen.cpp", False), ("fam/.git/x.py", False),
])
def test_what_is_watched(path, watched):
    assert is_watched(path) is watched


def family_in(folder: Path) -> Family:
    """torch (in spec.py), triton (tri.py), two CUDA variants sharing k.cu, one with its own."""
    for name in ("spec.py", "tri.py", "k.cu", "b.cpp", "k_cpu.cpp", "other.cu", "o.cpp",
                 "common.cuh", "helper.py"):
        (folder / name).write_text("// x\n")
    return Family(
        reference=lambda x: x, make_inputs=lambda n, d, dev: (), flops=lambda n: n,
        bytes_moved=lambda n, i: n, sizes=(8,), name="fam", directory=folder,
        variants=(TorchVariant("torch", fn=lambda x, out: None, baseline=True),
                  TritonVariant("tri", module="tri.py", function="f"),
                  CudaVariant("k1", function="f1", cuda=("k.cu",), cpp=("b.cpp",),
                              cpu=("k_cpu.cpp",)),
                  CudaVariant("k2", function="f2", cuda=("k.cu",), cpp=("b.cpp",)),
                  CudaVariant("other", function="g", cuda=("other.cu",), cpp=("o.cpp",))))


def test_a_variants_own_sources_affect_it_and_its_build_siblings(tmp_path):
    family = family_in(tmp_path)

    def which(*names, machine=GPU):
        found = affected("fam", tmp_path, family, machine, [tmp_path / n for n in names])
        return None if found is None else found.variants

    assert which("tri.py") == {"tri"}
    assert which("k.cu") == {"k1", "k2"}  # one build, two variants
    assert which("other.cu", "tri.py") == {"other", "tri"}
    assert which("k_cpu.cpp", machine=CPU) == {"k1"}  # the CPU build's source, on a CPU
    assert which("notes.md") is None  # not watched: nothing to do
    assert affected("fam", tmp_path, family, GPU, [Path("/elsewhere/tri.py")]) is None


@pytest.mark.parametrize("name", ["spec.py", "common.cuh", "helper.py", "k_cpu.cpp"])
def test_the_spec_a_header_or_an_unowned_file_affect_the_whole_family(tmp_path, name):
    # k_cpu.cpp is only the CPU build's source: on a GPU no variant owns it
    found = affected("fam", tmp_path, family_in(tmp_path), GPU, [tmp_path / name])
    assert found.whole_family and found.files == (name,)


def test_a_family_whose_spec_did_not_load_is_affected_whole(tmp_path):
    family_in(tmp_path)
    found = affected("fam", tmp_path, None, GPU, [tmp_path / "tri.py"])
    assert found.whole_family and found.family == "fam"


def test_snapshots_show_what_changed_while_nothing_watched(tmp_path):
    family_in(tmp_path)
    before = snapshot([tmp_path])
    (tmp_path / "tri.py").write_text("changed, and longer\n")
    (tmp_path / "new.cu").write_text("")
    (tmp_path / "b.cpp").unlink()
    (tmp_path / "README.md").write_text("not a source")
    assert changed_between(before, snapshot([tmp_path])) == {
        tmp_path / "tri.py", tmp_path / "new.cu", tmp_path / "b.cpp"}


# ---------------------------------------------------------------- a session's lines


def timed(variant: str, median: float, status: str = OK, error: str | None = None,
          seed: int = 1) -> Result:
    rng = random.Random(seed)
    samples = tuple(median * (1 + rng.gauss(0, 0.002)) for _ in range(200))
    key = PointKey("fam", variant, "float32", Shape({"n": 1024}), "cold")
    return Result(key=key, kind="cuda", status=status, device="cuda", error=error,
                  measurement=Measurement("cold", "test", samples) if status == OK else None)


def run_of(*results: Result) -> RunDocument:
    return RunDocument(meta={"run_id": "t"}, env={"gpu": "G"}, results=results)


def test_each_point_against_its_last_good_iteration_and_the_first():
    history = WatchHistory()
    first = history.add(run_of(timed("base", 10e-6), timed("k", 18e-6)))
    assert [r.previous for r in first] == [None, None]
    assert iteration_lines(first)[1] == "k     18.0 us  (first passing time)"

    second = history.add(run_of(timed("base", 10e-6, seed=2), timed("k", 17e-6, seed=2)))
    k = second[1]
    assert (k.previous.iteration, k.previous.point.verdict, k.first) == (1, FASTER, None)
    assert second[0].previous.point.verdict == SAME
    line = iteration_lines(second)[1]
    assert line.startswith("k     18.0 us -> 17.0 us  FASTER -5.")
    assert "[-5." in line and "vs first" not in line  # the first is the previous

    broken = history.add(run_of(timed("base", 10e-6, seed=3),
                                timed("k", 0, BUILD_ERROR, "k.cu:12: error: x\n  x = ;\x1b[2J")))
    text = "\n".join(iteration_lines(broken))
    assert "k     BUILD ERROR (last passed: #2): k.cu:12: error: x\n      x = ;\\x1b[2J" in text

    fixed = history.add(run_of(timed("base", 10e-6, seed=4), timed("k", 16e-6, seed=4)))
    k = fixed[1]
    assert (k.previous.iteration, k.first.iteration) == (2, 1)  # the last GOOD one, and #1
    line = iteration_lines(fixed)[1]
    assert "17.0 us -> 16.0 us  FASTER" in line and "(vs first #1: 18.0 us FASTER -11." in line


def test_the_session_ends_in_each_points_newest_result():
    history = WatchHistory()
    history.add(run_of(timed("base", 1e-5), timed("k", 1e-5), timed("j", 1e-5)))
    history.add(run_of(timed("base", 1e-5), timed("k", 0, BUILD_ERROR, "e")))
    history.add(run_of(timed("base", 1e-5), timed("j", 1e-5)))
    assert {r.variant: r.status for r in history.latest()} == {
        "base": OK, "k": BUILD_ERROR, "j": OK}


def test_names_say_only_what_tells_points_apart():
    def key(variant, n=1024, mode="cold"):
        return PointKey("fam", variant, "float32", Shape({"n": n}), mode)

    assert set(point_names([key("a"), key("b")]).values()) == {"a", "b"}
    assert set(point_names([key("a"), key("a", 2048)]).values()) == {"a n=1024", "a n=2048"}
    assert set(point_names([key("a"), key("a", mode="warm")]).values()) == {"a cold", "a warm"}


def test_source_copies_link_unchanged_files_and_only_bases_stay(tmp_path):
    from gpubench.commands.pairing import keep_sources, prune_sources

    family = tmp_path / "fam"
    family.mkdir()
    (family / "spec.py").write_text("x = 1\n")
    (family / "big.h").write_text("// big\n" * 1000)
    root = tmp_path / "sources"
    first = keep_sources({"fam": family}, root / "iter-001")
    (family / "spec.py").write_text("x = 2\n")
    bases = {"fam": (1, first["fam"])}
    second = keep_sources({"fam": family}, root / "iter-002", bases)
    assert (second["fam"] / "big.h").stat().st_ino == (first["fam"] / "big.h").stat().st_ino
    assert (second["fam"] / "spec.py").read_text() == "x = 2\n"
    assert (first["fam"] / "spec.py").read_text() == "x = 1\n"
    prune_sources(root, bases)  # iteration 2 failed: its copy goes, the BASE stays
    assert [p.name for p in root.iterdir()] == ["iter-001"]
    prune_sources(root, {"fam": (2, root / "iter-009" / "fam")})
    assert not list(root.iterdir())
