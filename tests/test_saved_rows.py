"""Saves that reuse each row's serialised text (records/saved_rows.py) write exactly what a
whole-document dump writes, on real recorded runs (GPU and CPU), empty ones, and rows with
non-finite values; rows replaced by new objects are serialised anew."""

from __future__ import annotations

import dataclasses
import math

import pytest

from conftest import FIXTURES
from gpubench.records.run import RunDocument
from gpubench.records.saved_rows import SavedRows
from gpubench.records.strict_json import strict_dumps
from gpubench.run.folder import read_run, results_csv

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
