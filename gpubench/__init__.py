"""gpubench: benchmark and profile GPU kernels — checked, timed, compared.

The packages are the layers, top to bottom; a layer imports only those below it
(.importlinter, checked in CI). docs/design.md draws the data flow.
  cli.py, api.py   the command line; gpubench.measure()/load_run()/compare() for notebooks
  cli_options.py   the command line's shared options, and their values parsed
  commands/        one module per command: options in, a few calls to the layers below
  tools/           ncu, nsys, compute-sanitizer, any program's trace: argv, parsers, drivers, views
  run/             plan, schedule, runner, workers and their protocol, run folders, suites
  report/          views only: tables, the live display, HTML and charts
  tune/            `gpubench tune`'s logic: config spaces, racing, ties, the pinned file
  analysis/        records in, verdicts out: compare, agreement with ncu
  families/        the spec a family declares, discovery, check, calling a variant
  records/         the data: shapes, point keys, results, run documents (pure)
  timing/          timers, statistics, stopping, noise, clocks, ceilings, roofline
  build/           C++/CUDA extensions with a content-hashed cache
  errors.py, parsing.py, format.py   exit codes, sizes and dtypes, units for people
  safe_text.py     the user's text made safe where it is shown (terminal, HTML, CSV, markdown)
  files.py         a file written whole or not at all (a rename), for every layer
"""

__version__ = "0.1.0"


def __getattr__(name: str):
    """`gpubench.measure` is gpubench.api.measure itself, so help() shows its parameters
    and docstring (a forwarding `measure(fn, *args, **kwargs)` hid them), imported on first
    use: `import gpubench` takes ~0.4 ms, which every command pays; gpubench.api ~150 ms."""
    if name == "measure":
        from gpubench.api import measure

        return measure
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), "measure"])


def load_run(reference="latest", base=None):
    """A run's RunDocument: a run folder, its results.json, 'latest' or 'latest~N' (the
    newest runs wherever they were written, as `gpubench runs` lists them; with `base`, a
    folder's own, e.g. base="profiles"). `.to_frame()` gives a pandas DataFrame, one row
    per result with a column per axis; `.results` the Result objects."""
    from gpubench.run.folder import load_run as _load_run

    return _load_run(reference, base)


def compare(base, new, threshold=0.01):
    """NEW against BASE. Two Results of one point -> a Comparison (ratio of medians NEW/BASE,
    its 95% CI, verdict and reason); two runs (RunDocuments, run folders, 'latest~1') -> a
    RunComparison, point by point. See gpubench.analysis.comparison for the method."""
    from gpubench.api import compare as _compare

    return _compare(base, new, threshold)


def region(name="steady"):
    """Mark the part of a program `gpubench profile` looks at (a context manager): the
    kernels launched inside, warm-up outside. See gpubench.tools.profile.region."""
    from gpubench.tools.profile.region import region as _region

    return _region(name)
