"""`history` over a large store (issue 61): it reads the store a point at a time, and
`history FAMILY` reads only that family's rows, through the store's index. At 20k rows
(benchmarks/history_scale.py's store, small): the rows the store hands out are counted,
and the queries' plans must use rows_by_point rather than scan the table. The change-point
search's PELT (change_points.pelt_l2, ~50x ruptures' speed) must find what ruptures finds."""

from __future__ import annotations

import importlib.util
import math
import random
import sqlite3

import pytest
from rich.console import Console

from gpubench.analysis import change_points as cp
from gpubench.commands import history
from gpubench.store import history_store
from tests.conftest import REPO

FAMILIES, VARIANTS, SHAPES, RUNS = 10, 10, 2, 100  # 20,000 rows, 200 series


@pytest.fixture(scope="module")
def big_store(tmp_path_factory):
    spec = importlib.util.spec_from_file_location(
        "history_scale", REPO / "benchmarks" / "history_scale.py")
    scale = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(scale)
    root = tmp_path_factory.mktemp("scale")
    rows = scale.build_store(root, FAMILIES * VARIANTS * SHAPES * RUNS, FAMILIES, VARIANTS,
                             SHAPES)
    assert rows == 20_000
    return root


def test_history_family_reads_only_that_familys_rows(big_store, monkeypatch, capsys):
    monkeypatch.setenv("GPUBENCH_RUN_INDEX", str(big_store / "runs.json"))
    handed = []
    decoded = history_store._decoded

    def counted(values):
        handed.append(values[3])  # the row's family
        return decoded(values)

    monkeypatch.setattr(history_store, "_decoded", counted)
    console = Console(record=True, width=200)
    code = history.execute(history.HistoryRequest("fam003", last=2), console)
    text = console.export_text()
    assert code == 0
    assert len(handed) == VARIANTS * SHAPES * RUNS and set(handed) == {"fam003"}
    assert f"{VARIANTS * SHAPES} series over {RUNS} runs" in text
    titles = [line for line in text.splitlines() if line.startswith("fam")]
    assert len(titles) == VARIANTS * SHAPES and all(t.startswith("fam003 ") for t in titles)
    assert ": 2 change points (2 slower" in text  # the planted steps (a series in ten)
    assert capsys.readouterr().err == ""  # no progress bar where stderr is no terminal


def test_the_queries_go_through_the_index(big_store):
    db = sqlite3.connect(big_store / history_store.STORE_NAME)
    try:
        for query, args in (history_store.points_query("fam003"),
                            ("SELECT * FROM rows WHERE " + " AND ".join(
                                f"{name} = ?" for name in history_store.POINT),
                             ("fam003", "var01", "float32", "n=65536", "cold"))):
            plan = " ".join(str(row[-1]) for row in
                            db.execute(f"EXPLAIN QUERY PLAN {query}", args))
            assert "SEARCH rows USING INDEX rows_by_point (family=?" in plan, plan
        points = history_store.points(db, "fam003")
        assert len(points) == VARIANTS * SHAPES
        assert len(history_store.point_rows(db, points[0])) == RUNS
    finally:
        db.close()


def test_the_fast_pelt_finds_what_ruptures_finds():
    """Steps, spikes and plain noise, 6 to 300 runs, three penalties: the same breakpoints."""
    import numpy as np
    import ruptures

    rng = random.Random(61)
    for _ in range(150):
        n = rng.choice([6, 7, 8, 9, 12, 20, 50, 100, 200, 300])
        level, signal = 0.0, []
        for _ in range(n):
            if rng.random() < 0.04:
                level += rng.choice([-1, 1]) * rng.uniform(0.5, 20)
            spike = rng.uniform(-30, 30) if rng.random() < 0.02 else 0.0
            signal.append(level + rng.gauss(0, 1) + spike)
        pen = rng.choice([1.0, cp.PENALTY, 10.0]) * math.log(n)
        reference = ruptures.Pelt(model="l2", min_size=cp.MIN_SEGMENT, jump=1).fit(
            np.asarray(signal).reshape(-1, 1)).predict(pen=pen)
        assert cp.pelt_l2(signal, pen) == [int(b) for b in reference if b < n], (n, pen)
