"""Saves that reuse each row's serialised text (records/saved_rows.py) write exactly what a
whole-document dump writes, on real recorded runs (GPU and CPU), empty ones, and rows with
non-finite values; rows replaced by new objects are serialised anew."""

from __future__ import annotations

import csv
import dataclasses
import io
import math

import pytest

from conftest import FIXTURES
from gpubench.records.run import RunDocument
from gpubench.records.saved_rows import SavedRows
from gpubench.records.strict_json import strict_dumps
from gpubench.store.folder import read_run, results_csv

RECORDED = [FIXTURES / "compare" / "h200" / "softmax-a1", FIXTURES / "compare" / "h200" / "bind-o1",
            FIXTURES / "run" / "cpu-softmax-vadd.json"]


@pytest.mark.parametrize("path", RECORDED, ids=lambda p: p.name)
def test_the_reused_text_is_the_whole_dump_exactly(path):
    document = read_run(path)
    rows = SavedRows()
    assert rows.document_json(document) == strict_dumps(document.to_dict())
    assert rows.document_json(document) == strict_dumps(document.to_dict())  # from the store
    assert results_csv(document, rows) == results_csv(document)


def test_an_empty_run_and_a_non_finite_value_dump_alike():
    document = read_run(RECORDED[0])
    empty = RunDocument(document.meta, document.env, ())
    assert SavedRows().document_json(empty) == strict_dumps(empty.to_dict())
    first = document.results[0]
    odd = dataclasses.replace(first, speedup=math.nan, speedup_ci=(math.inf, -math.inf))
    changed = RunDocument(document.meta, {**document.env, "nan_here": math.inf},
                          (odd, *document.results[1:]))
    assert SavedRows().document_json(changed) == strict_dumps(changed.to_dict())


def test_a_replaced_row_is_serialised_anew():
    document = read_run(RECORDED[0])
    rows = SavedRows()
    rows.document_json(document)
    first = document.results[0]
    replaced = dataclasses.replace(first, error="changed after the group finished")
    again = RunDocument(document.meta, document.env, (replaced, *document.results[1:]))
    assert "changed after the group finished" in rows.document_json(again)
    assert rows.document_json(again) == strict_dumps(again.to_dict())


@pytest.mark.parametrize("path", RECORDED, ids=lambda p: p.name)
def test_the_csv_holds_the_table_pandas_wrote(path):
    """Every cell as pandas' to_csv wrote it (read back alike), except that an integer
    column with gaps (one family's axis) stays integral: 4096, where pandas wrote 4096.0."""
    import pandas as pd

    document = read_run(path)
    text = results_csv(document)
    ours = pd.read_csv(io.StringIO(text))
    theirs = pd.read_csv(io.StringIO(document.to_frame().to_csv(index=False)))
    pd.testing.assert_frame_equal(ours, theirs, check_dtype=False)
    axes = {name for r in document.results for name in dict(r.shape)}
    for row in csv.DictReader(io.StringIO(text)):
        assert not any(row[axis].endswith(".0") for axis in axes), row


def test_a_column_that_appears_later_remakes_every_line():
    """A softmax row has no `n`; a vector_add row after it adds that column: the lines
    made before it are made again, with one more (empty) cell."""
    document = read_run(RECORDED[2])
    families = [r.family for r in document.results]
    assert families.index("vector_add") > 0 and "n" not in document.results[0].to_record()
    rows = SavedRows()
    rows.csv_text(document.results[:1])
    text = rows.csv_text(document.results)
    assert text == SavedRows().csv_text(document.results)
    assert len({len(row) for row in csv.reader(io.StringIO(text))}) == 1
