"""The Python API: `gpubench.measure(fn, ...)` for notebooks and pytest,
`gpubench.load_run(...)` to get a run's results back, and `gpubench.compare(a, b)`.

measure() times any callable with the same timers, statistics and warnings as
the command line, in this process (no worker, no check: the caller owns both),
and returns the same Result that results.json holds.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace

from gpubench.errors import UsageError
from gpubench.records.point import PointKey
from gpubench.records.result import OK, Result
from gpubench.records.run import RunDocument
from gpubench.records.shape import Shape
from gpubench.store.folder import load_run
from gpubench.timing.settings import TimingSettings
from gpubench.verdicts.derive import finish_group

__all__ = ["compare", "load_run", "measure"]

# Timers of this process share the CUDA support object (the 2xL2 flush buffer).
_SHARED: dict = {}


def measure(fn: Callable, *args, mode: str = "cold", flops: float | None = None,
            bytes_moved: float | None = None, name: str | None = None,
            shape: Mapping[str, int] | None = None, settings: TimingSettings | None = None,
            count_kernels: bool = True, **setting_overrides) -> Result:
    """Time `fn(*args)` with the timers, statistics and warnings of `gpubench run`, in
    this process, and return the Result results.json would hold: .median_s, .summary
    (95% CI of the median, IQR, n), .tflops, .gbps, .roof, .warnings. Nothing checks
    fn's output here: the caller owns correctness (`gpubench run` checks a family's).

    mode: cold (default: L2 flushed before each call), warm, graph, cupti or wall on a
    GPU; without CUDA the host clock is used and the result says mode 'cpu'.
    flops, bytes_moved: the napkin math of one call, for TFLOP/s, GB/s and the roofline.
    name: the row's variant name (default: fn's __name__). shape: how to label the point
    ({"M": 4096, ...}). settings: a TimingSettings; any of its fields can also be given by
    keyword (max_time_s=1.0, min_samples=50, ...). count_kernels: on a GPU, also find
    what one call runs (kernels per call, kernel sum and span: result.device_work); a call
    of several kernels pays CUPTI's start-up once per process (~4 s).

    >>> r = gpubench.measure(torch.mm, a, b, flops=2 * n**3)
    >>> r           # <Result api/mm  float32 cold: 2.69 ms ±0.1% (n=22), 51.1 TFLOP/s>
    >>> r.median_s, r.summary.ci_low, r.tflops, [str(w) for w in r.warnings]
    """
    import torch

    from gpubench.timing.clocks import measure_watched
    from gpubench.timing.timers import make_timer, modes_for_device

    device = "cuda" if torch.cuda.is_available() else "cpu"
    settings = replace(settings or TimingSettings(), **setting_overrides)
    (mode,) = modes_for_device((mode,), device)
    timer = make_timer(mode, settings, _SHARED)
    timing, clocks = measure_watched(timer, lambda: fn(*args), device == "cuda")
    work = None
    if count_kernels and device == "cuda":
        from gpubench.timing.device_work_probe import find_device_work

        work = find_device_work(lambda: fn(*args), _SHARED["cuda"])
    key = PointKey("api", name or getattr(fn, "__name__", "fn"), _dtype_of(args),
                   Shape(shape or {}), timing.mode)
    result = Result(key=key, kind="python", status=OK, device=device, flops=flops,
                    bytes_moved=bytes_moved, device_work=work,
                    measurement=timing.completed(target_rel_ci=settings.target_rel_ci,
                                                 clocks=clocks))
    (finished,) = finish_group([result], _cached_ceilings(device))
    return finished


def _dtype_of(args) -> str:
    for arg in args:
        dtype = getattr(arg, "dtype", None)
        if dtype is not None:
            return str(dtype).removeprefix("torch.")
    return ""


def _cached_ceilings(device: str) -> dict | None:
    """The machine's ceilings if `gpubench peak` (or a run) measured them already."""
    from gpubench.timing.ceilings import device_key, load_cached
    from gpubench.timing.envinfo import device_env

    cached = load_cached(device_key(device_env(device)))
    return cached.to_dict() if cached else None


def compare(base, new, threshold: float = 0.01):
    """NEW against BASE: two Results of one point (e.g. two `measure()` calls, or a point
    of two loaded runs) -> compare.Comparison; two runs (RunDocuments, or what load_run
    takes: a folder, 'latest', 'latest~1') -> compare.RunComparison.

    >>> c = gpubench.compare(gpubench.measure(old, x), gpubench.measure(new, x))
    >>> c.ratio, c.ci_low, c.ci_high, c.verdict, c.reason

    Several runs of a side's code (a list): their medians give the CI (analysis/repeats.py).
    >>> gpubench.compare(["profiles/a1", "profiles/a2"], ["profiles/b1", "profiles/b2"])
    """
    from gpubench.analysis.comparison import compare_results, compare_runs

    if isinstance(base, Result) and isinstance(new, Result):
        return compare_results(base, new, threshold)
    bases, news = _run_documents(base), _run_documents(new)
    return compare_runs(bases[0], news[0], threshold, bases[1:], news[1:])


def _run_documents(side) -> list[RunDocument]:
    """One side of a comparison: a run (a RunDocument or what load_run takes), or a list
    of runs of the same code."""
    runs = side if isinstance(side, list | tuple) else [side]
    if not runs:
        raise UsageError("compare: each side needs a run at least; got an empty list")
    return [run if isinstance(run, RunDocument) else load_run(run) for run in runs]
