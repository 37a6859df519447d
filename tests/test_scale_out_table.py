"""benchmarks/scale_out.py's last column: a parallel run held, point by point, to how far a
sequential rerun on one GPU lies from the first run."""

from __future__ import annotations

import math
import random

from conftest import load_script
from gpubench.records.build_info import BuildInfo

scale_out = load_script("benchmarks/scale_out.py")


def _runs(points: int = 120, jitter: float = 0.01, seed: int = 0):
    """(reference, sequential) medians: the same points, each rerun off by up to `jitter`."""
    rng = random.Random(seed)
    reference = {f"p{i}": 1e-3 * (1 + i % 7) for i in range(points)}
    sequential = {k: v * math.exp(rng.uniform(-jitter, jitter)) for k, v in reference.items()}
    return reference, sequential, rng


def test_a_run_as_close_as_a_rerun_is_not_called_further():
    reference, sequential, rng = _runs()
    parallel = {k: v * math.exp(rng.uniform(-0.01, 0.01)) for k, v in reference.items()}
    cell = scale_out.excess_cell(reference, sequential, parallel)
    assert float(cell.rsplit("p ", 1)[1]) > 0.05, cell


def test_a_run_further_than_a_rerun_is_called_further():
    reference, sequential, rng = _runs()
    parallel = {k: v * math.exp(rng.uniform(0.01, 0.03)) for k, v in reference.items()}
    cell = scale_out.excess_cell(reference, sequential, parallel)
    assert cell.startswith("+") and cell.endswith("p 0.00"), cell


def test_too_few_points_say_nothing():
    reference, sequential, _ = _runs(points=8)
    assert scale_out.excess_cell(reference, sequential, dict(reference)) == "-"


def test_decided_verdicts_on_a_moved_autotune_pick_are_counted_apart():
    from gpubench.analysis.comparison import compare_runs
    from gpubench.records.point import PointKey
    from gpubench.records.result import OK, Result
    from gpubench.records.run import RunDocument
    from gpubench.records.shape import Shape
    from gpubench.timing.measurement import Measurement

    def run(picks: list[int], medians: list[float]) -> RunDocument:
        results = []
        for n, (index, median) in enumerate(zip(picks, medians, strict=True)):
            key = PointKey("matmul", "triton_tc", "float16", Shape({"n": 256 << n}), "cold")
            samples = tuple(median * (1 + 0.001 * (i % 5)) for i in range(100))
            results.append(Result(key=key, kind="triton", status=OK, device="cuda",
                                  build=BuildInfo(config={"index": index, "label": f"B{index}",
                                                          "source": "autotune"}),
                                  measurement=Measurement("cold", "t", samples)))
        return RunDocument(meta={"run_id": "r"}, env={"gpu": "G"}, results=tuple(results))

    # point 0: faster with another pick; 1: faster, same pick; 2: another pick, same time
    reference, parallel = run([0, 1, 2], [1e-5] * 3), run([3, 1, 4], [8e-6, 8e-6, 1e-5])
    cell = scale_out.moved_picks(reference, parallel, compare_runs(reference, parallel))
    assert cell == " (1 decided with another autotune pick)"
    assert scale_out.moved_picks(reference, reference, compare_runs(reference, reference)) == ""


def test_launch_bound_shift_splits_points_at_10_us_and_reads_results_json(tmp_path, capsys):
    """scripts/launch_bound_shift.py: a 5 us point that moved +10% and a 1 ms one that
    moved +1% land in their own columns; a point missing in one run, or not ok, is left out."""
    from gpubench.records.point import PointKey
    from gpubench.records.result import FAIL, OK, Result
    from gpubench.records.run import RunDocument
    from gpubench.records.shape import Shape
    from gpubench.store.folder import save_run
    from gpubench.timing.measurement import Measurement

    shift = load_script("scripts/launch_bound_shift.py", "launch_bound_shift")
    statuses = {"ok": OK, "FAIL": FAIL}

    def run(name, rows):  # saved by gpubench's own writer, read back by the script
        (tmp_path / name).mkdir()
        results = tuple(Result(key=PointKey("f", v, "float32", Shape({"n": 1}), "cold"),
                               kind="torch", status=statuses[status], device="cuda",
                               measurement=Measurement("cold", "t", (seconds,) * 5))
                        for v, seconds, status in rows)
        save_run(RunDocument(meta={"run_id": name}, env={}, results=results), tmp_path / name)

    run("1gpu-cold", [("small", 5e-6, "ok"), ("large", 1e-3, "ok"), ("gone", 1e-3, "ok"),
                      ("failed", 5e-6, "ok")])
    run("all-warm", [("small", 5.5e-6, "ok"), ("large", 1.01e-3, "ok"),
                     ("failed", 50e-6, "FAIL")])
    shift.main([str(tmp_path)])
    (row,) = [line for line in capsys.readouterr().out.splitlines() if "all-warm" in line]
    assert "+10.0% (n=1)" in row and "+1.0% (n=1)" in row


def test_a_shift_common_to_each_group_is_further_only_before_group_shifts_are_removed():
    """Each worker process moves its points by its own few percent; a group's variants,
    measured in one process, share that move. Raw, such a run lies further than a rerun;
    beyond each group's common shift (what `compare` allows for) it does not."""
    from gpubench.records.point import PointKey
    from gpubench.records.shape import Shape

    rng = random.Random(5)
    groups, reference = {}, {}
    for group in range(40):
        for variant in ("torch", "triton", "cuda"):
            key = f"g{group}/{variant}"
            groups[key] = PointKey("f", variant, "float32", Shape({"n": group + 1}), "cold")
            reference[key] = 1e-5 * (1 + group % 5)
    sequential = {k: v * math.exp(rng.uniform(-0.003, 0.003)) for k, v in reference.items()}
    process_move = {group: rng.choice((-1, 1)) * rng.uniform(0.02, 0.05) for group in range(40)}
    parallel = {k: v * math.exp(process_move[int(k[1:k.index("/")])] + rng.uniform(-0.003, 0.003))
                for k, v in reference.items()}
    raw = scale_out.excess_cell(reference, sequential, parallel)
    beyond = scale_out.excess_cell(reference, sequential, parallel, groups=groups)
    assert raw.endswith("p 0.00"), raw
    assert float(beyond.rsplit("p ", 1)[1]) > 0.05, beyond
    lone = {"g0/torch": groups["g0/torch"]}  # a group of one: its ratio as it is
    assert scale_out.beyond_group({"g0/torch": -0.03}, lone) == {"g0/torch": 0.03}


def test_runs_a_side_line_from_recorded_h200_processes(capsys):
    """Four fresh processes of one unchanged run (tests/fixtures/compare/h200-processes),
    two playing one GPU and two playing all GPUs: runs a side find no change (one run a
    side does, on some pairs: tests/test_repeats.py)."""
    from conftest import FIXTURES
    from gpubench.store.folder import read_run

    folder = FIXTURES / "compare" / "h200-processes"
    runs = {name: read_run(folder / f"run{i}") for i, name in
            enumerate(("1gpu-cold", "1gpu-warm", "all-cold", "all-warm"), start=1)}
    scale_out.print_runs_a_side(runs)
    line = capsys.readouterr().out.strip()
    assert line.startswith("all vs 1gpu, 2 and 2 runs a side: ")
    assert "0 FASTER, 0 SLOWER" in line and "dask" not in line
    scale_out.print_runs_a_side({"1gpu-cold": runs["1gpu-cold"], "all-cold": runs["all-cold"]})
    assert capsys.readouterr().out == ""  # one run a side: nothing to pool
