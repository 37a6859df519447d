"""`gpubench.spec`'s warning says "import the same names from `gpubench`": every name it
gives (gpubench.families.spec's __all__, 0.1's spec names) must then import from there,
as the same object. 0.1's names that 0.2 left out of the public list (Variant, Machine)
import with a FutureWarning of their own; the public ones import silently."""

from __future__ import annotations

import re
import warnings

import pytest

import gpubench
import gpubench.spec
from gpubench.families import spec


def test_every_name_gpubench_spec_gives_imports_from_gpubench():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        for name in spec.__all__:
            assert getattr(gpubench, name) is getattr(spec, name), name


def test_the_names_the_warning_spells_out_import_silently():
    with pytest.warns(FutureWarning) as caught:
        gpubench.spec.Family  # noqa: B018
    named = re.search(r"`from gpubench import ([^`]+)`", str(caught[0].message)).group(1)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for name in named.split(", "):
            assert getattr(gpubench, name) is getattr(spec, name)


@pytest.mark.parametrize("name", sorted(gpubench.DEPRECATED))
def test_an_old_name_warns_where_it_is_imported(name):
    with pytest.warns(FutureWarning, match=rf"`gpubench\.{name}` .* goes away in gpubench 1\.0\.0"):
        exec(f"from gpubench import {name}", {})
    assert name not in gpubench.__all__  # a star import stays silent


def test_reading_an_old_name_in_a_worker_breaks_no_seal():
    """Like the public names: looked up on each use, never stored on the root module."""
    from gpubench.run.worker.seal import Seal

    seal = Seal()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        assert gpubench.Variant and gpubench.Machine
    assert seal.broken() == []
