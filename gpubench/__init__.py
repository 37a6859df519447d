"""gpubench: benchmark and profile GPU kernels — checked, timed, compared.

The packages are the layers, top to bottom; a layer imports only those below it
(.importlinter, checked in CI). docs/design.md draws the data flow.
  cli/app.py, api.py  the command line; gpubench.measure()/load_run()/compare() for notebooks
  spec.py          the deprecated import path of a family's names (gpubench.spec, before 0.2)
  cli/options.py   the command line's shared options, and their values parsed
  cli/guard.py     every command's guard: errors to one line and an exit code, signals
  commands/        one module per command: options in, a few calls to the layers below
  tools/           ncu, nsys, compute-sanitizer, any program's trace: argv, parsers, drivers, views
  run/             plan, schedule, runner, workers, their judge and protocol, suites
  store/           the files a run leaves and their indexes: run folders, runs, history, pages
  report/          views only: tables, the live display, HTML and charts
  tune/            `gpubench tune`'s logic: config spaces, racing, ties, the pinned file
  analysis/        records in, verdicts out: compare, agreement with ncu
  families/        the spec a family declares, discovery, check, calling a variant
  verdicts/        every verdict on a row: physics, behaviour, noise; a group finished
  records/         the data: shapes, point keys, results, run documents (pure)
  timing/          timers, statistics, stopping, noise, clocks, ceilings, roofline
  build/           C++/CUDA extensions with a content-hashed cache
  errors.py, parsing.py, format.py   exit codes, sizes and dtypes, units for people
  safe_text.py     the user's text made safe where it is shown (terminal, HTML, CSV, markdown)
  files.py         a file written whole or not at all (a rename), for every layer
  codec.py         one codec: a record (a dataclass) to JSON-ready data and back
  version.py       the version, read by pyproject.toml, --version and results.json
"""

from typing import TYPE_CHECKING

from gpubench.version import __version__

# The public API: what a family's spec.py and a notebook write, `from gpubench import
# Family, measure`. These names keep their meaning across releases (semantic versioning,
# CHANGELOG.md); everything else may move, `gpubench.families.spec` included. Each is
# imported on first use, so `import gpubench` stays ~0.4 ms for every command while
# gpubench.api costs ~150 ms.
PUBLIC: dict[str, str] = {
    # what a family declares (docs/guide.md, "Your own kernel families")
    "Family": "gpubench.families.spec",
    "Axis": "gpubench.families.spec",
    "Shape": "gpubench.families.spec",
    "TorchVariant": "gpubench.families.spec",
    "CudaVariant": "gpubench.families.spec",
    "TritonVariant": "gpubench.families.spec",
    # the Python API and what it returns (docs/guide.md, "Python")
    "measure": "gpubench.api",
    "TimingSettings": "gpubench.timing.settings",
    "Result": "gpubench.records.result",
    "RunDocument": "gpubench.records.run",
    "Comparison": "gpubench.analysis.comparison",
    "RunComparison": "gpubench.analysis.comparison",
}
__all__ = ["__version__", "compare", "load_run", "region", *PUBLIC]

# 0.1's names that 0.2 left out of PUBLIC: `gpubench.spec` (0.1's import path) gave them,
# and its warning says to import the same names from here, so they import, with a
# FutureWarning (the category gpubench.spec uses: a spec's author is a user, and Python
# hides a DeprecationWarning raised from inside an imported spec.py). Not in __all__, so a
# star import stays silent. Name -> (module, what to write instead).
DEPRECATED: dict[str, tuple[str, str]] = {
    "Variant": ("gpubench.families.spec", "it is the base of TorchVariant, CudaVariant and "
                "TritonVariant, the variants a family declares: name those instead"),
    "Machine": ("gpubench.families.spec", "gpubench builds it and passes it to a variant's "
                "methods; a spec need not name it"),
}
REMOVED_IN = "1.0.0"

if TYPE_CHECKING:  # what type checkers and IDEs see (`X as X`: a re-export); __getattr__
    # imports them at run time
    from gpubench.analysis.comparison import Comparison as Comparison
    from gpubench.analysis.comparison import RunComparison as RunComparison
    from gpubench.api import measure as measure
    from gpubench.families.spec import Axis as Axis
    from gpubench.families.spec import CudaVariant as CudaVariant
    from gpubench.families.spec import Family as Family
    from gpubench.families.spec import Machine as Machine
    from gpubench.families.spec import Shape as Shape
    from gpubench.families.spec import TorchVariant as TorchVariant
    from gpubench.families.spec import TritonVariant as TritonVariant
    from gpubench.families.spec import Variant as Variant
    from gpubench.records.result import Result as Result
    from gpubench.records.run import RunDocument as RunDocument
    from gpubench.timing.settings import TimingSettings as TimingSettings


def __getattr__(name: str):
    """A public name, imported from its module on each use and never stored here: the
    worker's seal (run/worker/seal.py) lets a gpubench module gain submodules only, so a name
    cached into this namespace would read as tampering. `gpubench.measure` is
    gpubench.api.measure itself, so help() shows its parameters and docstring. A
    deprecated name warns at the line that uses it, each time (as gpubench.spec does)."""
    import importlib

    if name in DEPRECATED:
        module, instead = DEPRECATED[name]
        import warnings

        warnings.warn(f"`gpubench.{name}` is kept for specs written against gpubench 0.1 and "
                      f"goes away in gpubench {REMOVED_IN}: {instead}", FutureWarning,
                      stacklevel=2)
        return getattr(importlib.import_module(module), name)
    if name not in PUBLIC:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(PUBLIC[name]), name)


def __dir__() -> list[str]:
    return sorted({*globals(), *PUBLIC})


def load_run(reference="latest", base=None):
    """A run's RunDocument: a run folder, its results.json, 'latest' or 'latest~N' (the
    newest runs wherever they were written, as `gpubench runs` lists them; with `base`, a
    folder's own, e.g. base="profiles"). `.to_frame()` gives a pandas DataFrame, one row
    per result with a column per axis; `.results` the Result objects."""
    from gpubench.store.folder import load_run as _load_run

    return _load_run(reference, base)


def compare(base, new, threshold=0.01):
    """NEW against BASE. Two Results of one point -> a Comparison (ratio of medians NEW/BASE,
    its CI, verdict and reason); two runs (RunDocuments, run folders, 'latest~1') -> a
    RunComparison, point by point. See gpubench.analysis.comparison for the method."""
    from gpubench.api import compare as _compare

    return _compare(base, new, threshold)


def region(name="steady"):
    """Mark the part of a program `gpubench profile` looks at (a context manager): the
    kernels launched inside, warm-up outside. See gpubench.tools.profile.region."""
    from gpubench.tools.profile.region import region as _region

    return _region(name)
