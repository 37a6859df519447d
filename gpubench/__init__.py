"""gpubench: benchmark and profile GPU kernels — checked, timed, compared.

The package is layered so that the architecture shows in the file list:
  cli.py              the command line (the only place that prints errors and exits)
  config.py           suite files -> RunConfig          parsing.py  sizes, dtypes
  records/            the data: shapes, point keys, tasks, measurements, results,
                      run documents (save/load), derived numbers, timing settings
  spec.py             what a kernel family declares     discovery.py  finding families
  plan.py             which points run, which are skipped and why
  runner.py           the parent: feeds a worker, survives crashes and hangs
  workers.py          the worker process handle         protocol.py  their messages
  processes.py        sessions killed whole, watchdog   rundir.py  run folders: claim, save, rescue
  sideeffects.py      inputs, out and torch state a variant may not change
  worker.py           the worker process itself         execute.py  build, check, time
  build.py            load_inline with a content-hashed cache
  check.py            output vs reference
  timers/             one timer per mode: cold, warm, graph, cupti, wall, cpu
  stopping.py         when to stop sampling             clocks.py  NVML clock watch
  stats.py            medians, IQR, CIs                 roofline.py  TFLOP/s, GB/s, roof
  ceilings.py         measured bandwidth and matmul peaks noise.py  warnings with remedies
  comparison.py       NEW vs BASE: ratio of medians, its CI, verdicts (FASTER/SLOWER/...)
  api.py              gpubench.measure(), load_run(), compare() for notebooks and pytest
  envinfo.py          GPU, clocks, versions
  report/             tables, CSV/JSON files, the live progress display
"""

__version__ = "0.1.0"


def measure(fn, *args, **kwargs):
    """Time fn(*args) like `gpubench run` does; see gpubench.api.measure."""
    from gpubench.api import measure as _measure

    return _measure(fn, *args, **kwargs)


def load_run(reference="latest", base="profiles"):
    """A run's RunDocument: a run folder, its results.json, 'latest' or 'latest~N'
    (profiles/ of the current folder). `.to_frame()` gives a pandas DataFrame, one row
    per result with a column per axis; `.results` the Result objects."""
    from gpubench.records.run import load_run as _load_run

    return _load_run(reference, base)


def compare(base, new, threshold=0.01):
    """NEW against BASE. Two Results of one point -> a Comparison (ratio of medians NEW/BASE,
    its 95% CI, verdict and reason); two runs (RunDocuments, run folders, 'latest~1') -> a
    RunComparison, point by point. See gpubench.comparison for the method."""
    from gpubench.api import compare as _compare

    return _compare(base, new, threshold)


def region(name="steady"):
    """Mark the part of a program `gpubench profile` looks at (a context manager): the
    kernels launched inside, warm-up outside. See gpubench.profiling.region."""
    from gpubench.profiling.region import region as _region

    return _region(name)
