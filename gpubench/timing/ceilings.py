"""This machine's measured ceilings: memory bandwidth and matmul rates per precision.

Datasheet numbers are leads; the roofline uses what this GPU actually does:
a large device-to-device copy (bytes read + written over time), the same copy at a
ladder of footprints from inside the L2 to 20x it (the memory roof of a row near the L2
size, timing/copy_curve.py says why) and a large torch matmul per precision
(timing/precision.py: fp32 on CUDA cores, TF32, fp16, bf16, fp8; cuBLAS on GPUs, see
matmul_ceilings.py). Measured once per GPU model, driver and torch version, cached as
JSON under <cache>/ceilings/, re-measured with `gpubench peak --force`. A cache from
before precisions (rates keyed by dtype, no TF32) still loads, as does one from before the
copy curve; the first run that finds one measures again, once, to add what it lacks.

A cache measured at a bad moment (a busy 2-core CPU, a GPU at idle clocks) would
otherwise skew every later "of roof" silently (issue 12: a cached bandwidth half of what
`peak --force` measured stayed in use). So whenever cached ceilings are used, a short
probe times the same copy again. A disagreement beyond the noise with a faster probe means
the cache saw a slow moment (a first run measures while its own builds compile): it is
measured again at once; with a slower probe the machine is busy now, and the cache is kept
and flagged. Ceilings measured, or found to agree, within the last hour are not probed
again (CHECK_MAX_AGE_S), unless a CPU measurement was made beside other work.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from gpubench.codec import Record
from gpubench.files import atomic_write
from gpubench.timing import copy_curve, matmul_ceilings
from gpubench.timing.hostload import OTHERS_CPUS, Snapshot, load_between
from gpubench.timing.precision import PRECISIONS, normalized_rates
from gpubench.timing.stopping import TimingSettings

# A copy that runs at the ceiling: 1 GiB is 20x the H100's 50 MB L2. On CPUs 64 MiB, beyond
# any L3. (The matmul sizes are in matmul_ceilings.py.)
GPU_COPY_BYTES = 1 << 30
CPU_COPY_BYTES = 64 << 20
SETTINGS = TimingSettings(warmup_s=0.2, min_samples=10, min_time_s=0.1, max_time_s=1.0,
                          target_rel_ci=0.005)
# The probe of a cached bandwidth: the same copy, far fewer samples. On a GPU a 1 GiB copy
# moves 2 GiB in ~0.7 ms at ~3 TB/s: 20 ms of warmup is ~28 copies, and the warm timer's
# window-cost fit spins the GPU 50 ms before sampling, so clocks are at speed; 5 samples
# and then a ~20 ms batch (~28 more) reach +-1% in ~25 ms, and GPU copies repeat within
# ~1% anyway. On the 2-core CPU a 64 MiB copy moves 128 MiB in ~4 ms at 33 GB/s, ~8 ms at
# 17 GB/s, ~15 ms on a loaded machine: 2 warmup calls, then 5-25 samples until the 100 ms
# limit; their median ignores one or two preempted calls. 0.16 s in all measured there,
# beside the ~1.3 s a worker spends importing torch.
PROBE_SETTINGS = TimingSettings(warmup_s=0.02, min_samples=5, min_time_s=0.01,
                                max_time_s=0.1, target_rel_ci=0.01)
# How far probe and cache may disagree, as a factor either way, before the cache is stale.
# GPU: copies repeat within ~1%, and the probe's median of ~30 samples is within ~1% of a
# full measurement: 1.1x is ten times that noise, while a cache measured at idle clocks or
# beside other work (2x and more, issue 12) trips it.
# CPU, measured on the 2-core CI machine (AMD EPYC, 64 MiB copy), each figure a
# fresh process: `peak --force --json` 30.5 32.6 33.6 36.0 32.6 33.0 27.4 27.6 GB/s and the
# probe 26.7-35.9 GB/s (a probe within 1.17x of the peak taken just before it) while both
# cores were ours: extremes 1.35x apart. With the second core taken by other work the copy
# runs on one thread at 16.7-16.8 GB/s (set_num_threads(1): 16.2-18.7), half the rate:
# exactly the 2x of issue 12; under heavier load 9.6-11 GB/s, probes down to 3.8. 1.6x is
# midway (geometric) between the quiet spread (1.35x) and that 2x.
STALE_FACTOR_GPU = 1.1
STALE_FACTOR_CPU = 1.6
# Cached ceilings measured, or found to agree with a probe, this recently are not probed
# again: the probe costs each worker 0.2-0.36 s before its first point on 4 H200s, and
# one that agreed minutes ago says what a new one would. An hour, as the interference
# reference (run/interference/cache.py): both are what gpubench knows of the machine.
# 0 probes every time; a check that found the cache stale is never reused, so
# the warning stays until `gpubench peak --force`.
CHECK_MAX_AGE_S = 3600.0
CHECK_MAX_AGE_ENV = "GPUBENCH_CEILINGS_CHECK_MAX_AGE_S"
# The copy curve's copies (copy_curve.LADDER_BYTES, cold: the L2 flushed by reads before
# each, as the rows it judges are timed). Each copy of 2-512 MiB takes 1-170 us at ~3 TB/s;
# a sample adds the ~40 us flush and a >= 20 us spin: under 0.3 ms. 10 ms of warmup, then
# 10 samples and 10 ms at least, 50 ms at most: <= ~70 ms a size, ~0.6 s for nine, plus the
# ~70 ms window-cost fit the first cold measurement makes. GPU copies repeat within ~1%.
CURVE_SETTINGS = TimingSettings(warmup_s=0.01, min_samples=10, min_time_s=0.01,
                                max_time_s=0.05, target_rel_ci=0.01)


@dataclass(frozen=True)
class Ceilings(Record):
    key: str
    device: str
    bandwidth_gbps: float | None  # copy: bytes read + bytes written, per second
    tflops: dict[str, float]  # dense matmul rate per precision (timing/precision.py)
    measured: str
    method: str
    # What was not measured and why: a precision this device lacks (fp8 before sm_89), one
    # whose measurement failed, "copy" or "copy_curve". Empty in caches from before
    # precisions.
    unmeasured: dict[str, str] = field(default_factory=dict)
    # Copy bandwidth by footprint, cold: ((bytes moved, GB/s), ...) ascending
    # (timing/copy_curve.py). A CPU has one point, the large copy. None in caches from
    # before the curve.
    bandwidth_curve: copy_curve.Curve | None = None
    # On a CPU: the CPUs other processes kept busy while these were measured
    # (timing/hostload.py). A run's first worker measures while the run's own build phase
    # compiles on every core (3.19 GB/s against 41.5 quiet on the 2-core machine), so a
    # busy measurement is never trusted unprobed (recent_check). None on a GPU, and in
    # caches from before it was kept.
    others_cpus: float | None = None

    @classmethod
    def upgrade(cls, data: Mapping) -> dict:
        """Either form: a cache from before precisions has rates keyed by dtype, one from
        before the copy curve none (None)."""
        return {**data, "tflops": normalized_rates(data.get("tflops")),
                "unmeasured": dict(data.get("unmeasured") or {}),
                "bandwidth_curve": copy_curve.normalized(data.get("bandwidth_curve"))}

    def missing(self) -> tuple[str, ...]:
        """Precisions, and the copy curve ("copy_curve"), neither measured nor explained:
        the cache predates them."""
        lacks = [p for p in PRECISIONS if p not in self.tflops and p not in self.unmeasured]
        if self.bandwidth_curve is None and "copy_curve" not in self.unmeasured:
            lacks.append("copy_curve")
        return tuple(lacks)


def device_key(env: dict) -> str:
    """One cache entry per GPU model (or CPU), driver and torch version."""
    parts = [env.get("gpu") or f"cpu-{env.get('cpu', '')}-{env.get('cpu_threads', '')}",
             env.get("driver") or "", env.get("torch") or ""]
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", "-".join(p for p in parts if p)).strip("_")


def cache_dir() -> Path:
    from gpubench.build.cache import cache_base

    path = cache_base() / "ceilings"
    path.mkdir(parents=True, exist_ok=True)
    return path


def load_cached(key: str) -> Ceilings | None:
    path = cache_dir() / f"{key}.json"
    try:
        return Ceilings.from_dict(json.loads(path.read_text()))
    except (OSError, ValueError, TypeError):
        return None


def load_or_measure(env: dict, force: bool = False) -> Ceilings:
    """The cached ceilings of this device, measuring them first when absent (or forced)."""
    return load_checked(env, force, probe=False)[0]


def load_checked(env: dict, force: bool = False, probe: bool = True
                 ) -> tuple[Ceilings, dict | None]:
    """The ceilings, and, when they came from the cache, a probe's verdict on them
    (check_cached). Freshly measured ones get no check (None): they are this moment's. A
    cache the probe finds slower than this moment (measured beside other work, such as a
    first run's own builds) is measured again now, and the check says so."""
    key = device_key(env)
    cached = None if force else load_cached(key)
    if cached is not None and not cached.missing():
        if not probe:
            return cached, None
        now = dt.datetime.now(dt.UTC).timestamp()
        kept = recent_check(_read_check(key), cached, now, check_max_age_s())
        if kept is not None:
            return cached, kept
        check = check_cached(cached, env["device"])
        if not measured_at_a_slow_moment(check):
            _write_check(key, {**check, "at": now})
            return cached, check
        ceilings = _measure_and_keep(env, key)
        return ceilings, remeasured(check, ceilings)
    return _measure_and_keep(env, key), None


def _measure_and_keep(env: dict, key: str) -> Ceilings:
    ceilings = measure(env["device"], key, env.get("gpu") or "CPU")
    atomic_write(cache_dir() / f"{key}.json", json.dumps(ceilings.to_dict(), indent=2))
    return ceilings


def measured_at_a_slow_moment(check: dict) -> bool:
    """Whether a probe found the cache stale because this moment copies faster than the
    cache says (ratio above the stale factor): the cache, not the machine, is wrong, so it
    is measured again. A slower probe (a busy machine now) keeps the cache and warns. Pure."""
    ratio = check.get("ratio")
    return bool(check.get("stale")) and isinstance(ratio, int | float) and ratio > 1


def remeasured(check: dict, ceilings: Ceilings) -> dict:
    """The check record of a cache replaced because it was measured at a slow moment."""
    return {**check, "stale": False, "remeasured": True,
            "message": f"cached copy bandwidth {check['cached_gbps']:.4g} GB/s was measured at "
                       f"a slow moment (this run's probe: {check['probe_gbps']:.4g} GB/s): "
                       f"measured again, {ceilings.bandwidth_gbps or 0:.4g} GB/s"}


def check_max_age_s(environ=os.environ) -> float:
    """How old a measurement or an agreeing check may be and spare the probe; a value that
    is not a number counts as 0 (probe), so that a typo never skips a check."""
    try:
        return max(0.0, float(environ.get(CHECK_MAX_AGE_ENV, CHECK_MAX_AGE_S)))
    except ValueError:
        return 0.0


def recent_check(last: dict | None, cached: Ceilings, now: float, max_age: float
                 ) -> dict | None:
    """The check record a run keeps instead of probing (CHECK_MAX_AGE_S), or None to
    probe: the cache was measured within `max_age` seconds of `now`, or `last` (the
    previous check of this cache, with its time `at`) agreed with this very bandwidth
    within it. Pure."""
    if max_age <= 0 or busy_measurement(cached):
        return None
    age = now - _timestamp(cached.measured)
    if 0 <= age <= max_age:
        return {"probe_gbps": None, "cached_gbps": cached.bandwidth_gbps, "ratio": None,
                "stale": False, "age_s": age,
                "message": f"cached copy bandwidth {cached.bandwidth_gbps:.4g} GB/s was "
                           f"measured {age:.0f} s ago: not probed again"}
    if not last or last.get("stale") or not _positive(last.get("probe_gbps")) \
            or last.get("cached_gbps") != cached.bandwidth_gbps:
        return None
    at = last.get("at")
    age = now - at if isinstance(at, int | float) else math.inf  # a mangled file: probe
    if not 0 <= age <= max_age:
        return None
    probe = last["probe_gbps"]
    return {"probe_gbps": probe, "cached_gbps": cached.bandwidth_gbps,
            "ratio": last.get("ratio"), "stale": False, "age_s": age,
            "message": f"cached copy bandwidth {cached.bandwidth_gbps:.4g} GB/s agreed with "
                       f"a probe {age:.0f} s ago ({probe:.4g} GB/s): not probed again"}


def busy_measurement(cached: Ceilings) -> bool:
    """Whether other processes kept enough of the CPUs busy, while the cache was measured,
    to have slowed it (hostload.OTHERS_CPUS). Pure."""
    others = cached.others_cpus
    return isinstance(others, int | float) and others >= OTHERS_CPUS


def _timestamp(iso: str) -> float:
    """Seconds since the epoch of an ISO time (a Ceilings' `measured`); -inf if it is none."""
    try:
        return dt.datetime.fromisoformat(iso).timestamp()
    except (TypeError, ValueError):
        return -math.inf


# The record of the last probe of <key>.json, beside it (recent_check reads it).
CHECK_SUFFIX = ".check.json"


def _check_path(key: str) -> Path:
    return cache_dir() / f"{key}{CHECK_SUFFIX}"


def _read_check(key: str) -> dict | None:
    """The last check of this cache; None (probe) if there is none or it is not a check's
    record (a file cut short or written by something else)."""
    try:
        last = json.loads(_check_path(key).read_text())
    except (OSError, ValueError):
        return None
    return last if isinstance(last, dict) else None


def _write_check(key: str, check: dict) -> None:
    """A check that cannot be kept only means the next run probes again."""
    with contextlib.suppress(OSError):
        atomic_write(_check_path(key), json.dumps(check))


def check_cached(cached: Ceilings, device: str) -> dict:
    """Probe the copy now and judge the cached bandwidth by it (see bandwidth_check). A
    probe that cannot run (out of memory, say) is recorded, not raised: a worker must
    still start, and an unchecked cache is no worse than before."""
    if not _positive(cached.bandwidth_gbps):
        why = cached.unmeasured.get("copy") or "not a bandwidth"
        return {"probe_gbps": None, "cached_gbps": cached.bandwidth_gbps, "ratio": None,
                "stale": True, "message": f"the cached ceilings have no copy bandwidth ({why}): "
                                          "no \"of roof\" figures; re-measure with "
                                          "`gpubench peak --force`"}
    try:
        probe_gbps = probe_bandwidth_gbps(device)
    except Exception as exc:
        return {"probe_gbps": None, "cached_gbps": cached.bandwidth_gbps, "ratio": None,
                "stale": False, "message": f"copy probe failed: {type(exc).__name__}: {exc}"}
    return bandwidth_check(cached.bandwidth_gbps, probe_gbps, cached.measured, device)


def is_stale(cached_gbps: float, probe_gbps: float, device: str) -> bool:
    """Whether a cached bandwidth disagrees with a probe of the same copy by more than
    that device's copies move between quiet runs (STALE_FACTOR_*), either way. Pure. A
    cached value that is not a positive number is stale; a probe that is not says
    nothing (the probe failed, not the cache)."""
    if not _positive(cached_gbps):
        return True
    if not _positive(probe_gbps):
        return False
    factor = STALE_FACTOR_GPU if device == "cuda" else STALE_FACTOR_CPU
    ratio = probe_gbps / cached_gbps
    return ratio > factor or ratio < 1 / factor


def bandwidth_check(cached_gbps: float, probe_gbps: float, measured: str, device: str) -> dict:
    """The record of one check, for env["ceilings_check"] (results.json) and the warning
    line: both figures, their ratio, the verdict and, when stale, what it means and the
    remedy. Pure."""
    stale = is_stale(cached_gbps, probe_gbps, device)
    ratio = probe_gbps / cached_gbps if _positive(cached_gbps) and _positive(probe_gbps) \
        else None
    if stale:
        times = f" ({ratio:.2f}x the cache)" if ratio is not None else ""
        message = (f"cached copy bandwidth {cached_gbps:.4g} GB/s (measured {measured}) "
                   f"disagrees with this run's probe of the same copy, {probe_gbps:.4g} "
                   f"GB/s{times}: {_likely_cause(ratio)}. The \"of roof\" figures use the "
                   "cached value; re-measure with `gpubench peak --force`")
    else:
        message = (f"cached copy bandwidth {cached_gbps:.4g} GB/s agrees with this run's "
                   f"probe: {probe_gbps:.4g} GB/s")
    return {"probe_gbps": probe_gbps, "cached_gbps": cached_gbps, "ratio": ratio,
            "stale": stale, "message": message}


def _likely_cause(ratio: float | None) -> str:
    """Which side is likely wrong: a faster probe means the cache saw a slow moment; a
    slower one, a busy or throttled machine now (this run's timings suffer too)."""
    if ratio is None:
        return "the cached value is not a bandwidth"
    if ratio > 1:
        return "the cache was measured at a slow moment"
    return "this machine copies slower now (other work? low clocks?) or the cache is wrong"


def _positive(value) -> bool:
    return isinstance(value, int | float) and math.isfinite(value) and value > 0


def probe_bandwidth_gbps(device: str) -> float:
    """This moment's copy bandwidth: measure()'s copy (same bytes, same timer mode, so
    like is compared with like) with PROBE_SETTINGS' few samples. Frees what it took:
    on CUDA the caching allocator would otherwise keep the 2 GiB from the kernels."""
    import torch

    from gpubench.timing.timers import make_timer

    nbytes = copy_size(device)
    timer = make_timer(_mode(device), PROBE_SETTINGS)
    (call,) = _copy_call(torch, nbytes, device)
    try:
        seconds = _median_s(timer, call)
    finally:
        del call, timer  # the closure holds the tensors, the timer its flush buffer
        if device == "cuda":
            torch.cuda.empty_cache()
    return 2 * nbytes / seconds / 1e9


def copy_size(device: str) -> int:
    """measure()'s copy size on this device; the probe uses it too."""
    return GPU_COPY_BYTES if device == "cuda" else CPU_COPY_BYTES


def _mode(device: str) -> str:
    """Events on a warm L2 on GPUs (1 GiB is 20x L2: nothing to flush); the host clock."""
    return "warm" if device == "cuda" else "cpu"


def measure(device: str, key: str, name: str) -> Ceilings:
    """Time a large copy, on GPUs the copy curve, and a large matmul per precision with
    gpubench's own timers (a CPU's curve is its one large copy). What
    fails (out of memory, a precision this torch cannot run) is recorded in `unmeasured`
    with its reason, never raised: a run's worker measures these before any kernel."""
    import torch

    from gpubench.timing.timers import make_timer

    before = Snapshot.now() if device != "cuda" else None
    shared: dict = {}  # one flush buffer and window-cost fit for the copies' timers
    timer = make_timer(_mode(device), SETTINGS, shared)
    nbytes = copy_size(device)
    bandwidth, unmeasured = None, {}
    try:
        bandwidth = 2 * nbytes / _median_s(timer, *_copy_call(torch, nbytes, device)) / 1e9
    except Exception as exc:
        unmeasured["copy"] = matmul_ceilings.failure_text(exc)
    curve = ((2 * nbytes, bandwidth),) if bandwidth else ()
    if device == "cuda":
        try:
            curve = _copy_curve(torch, make_timer("cold", CURVE_SETTINGS, shared), device)
        except Exception as exc:
            unmeasured["copy_curve"] = matmul_ceilings.failure_text(exc)
    skips = _skips(torch, device)
    try:
        rates, failed = matmul_ceilings.measure_rates(
            lambda p: matmul_ceilings.matmul_tflops(torch, p, device,
                                                    lambda call: _median_s(timer, call)),
            skips)
    finally:
        if device == "cuda":
            torch.cuda.empty_cache()  # ~1 GiB of operands, not kept from the kernels
    others = load_between(before, Snapshot.now(), 1).others_cpus if before else None
    return Ceilings(key=key, device=name, bandwidth_gbps=bandwidth, tflops=rates,
                    measured=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
                    method=f"median of {timer.method}: copy of {nbytes >> 20} MiB "
                           f"(read + write), a square torch matmul per precision"
                           + ("; copies of 2-512 MiB, L2 flushed by reads, for the curve"
                              if device == "cuda" else ""),
                    unmeasured={**unmeasured, **failed}, bandwidth_curve=curve,
                    others_cpus=others)


def _copy_curve(torch, timer, device: str) -> copy_curve.Curve:
    """Copy bandwidth at each footprint of copy_curve.LADDER_BYTES, timed cold: slices of
    one pair of buffers as large as the largest copy (512 MiB each), so nothing is
    allocated per size. A size whose median is not positive is left out (the window-cost
    subtraction can floor a sample at 0); the rest still make a curve."""
    largest = max(copy_curve.LADDER_BYTES) // 2
    source = torch.ones(largest // 4, device=device)
    target = torch.empty_like(source)
    points = []
    try:
        for moved in copy_curve.LADDER_BYTES:
            count = moved // 2 // 4

            def call(src=source[:count], dst=target[:count]):
                dst.copy_(src)

            seconds = _median_s(timer, call)
            if seconds > 0:
                points.append((moved, moved / seconds / 1e9))
    finally:
        del source, target
    return tuple(points)


def _skips(torch, device: str) -> dict[str, str]:
    """The precisions this device cannot measure. A capability that cannot be read skips
    nothing: each precision is then tried, and a failure recorded."""
    try:
        found = matmul_ceilings.capability(torch, device)
    except Exception:
        found = None
    return matmul_ceilings.skip_reasons(device, found, hasattr(torch, "_scaled_mm"))


def _copy_call(torch, nbytes: int, device: str):
    source = torch.ones(nbytes // 4, device=device)
    target = torch.empty_like(source)
    return (lambda: target.copy_(source)),


def _median_s(timer, fn) -> float:
    from gpubench.timing.stats import summarize

    return summarize(timer.measure(fn).samples_s, with_ci=False).median
