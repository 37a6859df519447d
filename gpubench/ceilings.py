"""This machine's measured ceilings: memory bandwidth and matmul rates per dtype.

Datasheet numbers are leads; the roofline uses what this GPU actually does:
a large device-to-device copy (bytes read + written over time) and a large
torch.matmul per dtype (cuBLAS on GPUs). Measured once per GPU model, driver
and torch version, cached as JSON under <cache>/ceilings/, re-measured with
`gpubench peak --force`.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from dataclasses import asdict, dataclass
from pathlib import Path

from gpubench.stopping import TimingSettings

# Sizes that run at the ceiling: a 1 GiB copy is 20x the H100's 50 MB L2; an
# 8192^3 matmul (1.1 TFLOP) keeps cuBLAS in its steady state for 1-25 ms.
GPU_COPY_BYTES = 1 << 30
GPU_MATMUL_N = 8192
# On CPUs: 64 MiB (beyond any L3) and 1024^3 (2 GFLOP, ~0.1 s on 2 cores).
CPU_COPY_BYTES = 64 << 20
CPU_MATMUL_N = {"float32": 1024, "float16": 256, "bfloat16": 512}
DTYPES = ("float32", "float16", "bfloat16")
SETTINGS = TimingSettings(warmup_s=0.2, min_samples=10, min_time_s=0.1, max_time_s=1.0,
                          target_rel_ci=0.005)


@dataclass(frozen=True)
class Ceilings:
    key: str
    device: str
    bandwidth_gbps: float  # copy: bytes read + bytes written, per second
    tflops: dict[str, float]  # dense matmul rate per dtype
    measured: str
    method: str

    def to_dict(self) -> dict:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict) -> Ceilings:
        return cls(**data)


def device_key(env: dict) -> str:
    """One cache entry per GPU model (or CPU), driver and torch version."""
    parts = [env.get("gpu") or f"cpu-{env.get('cpu', '')}-{env.get('cpu_threads', '')}",
             env.get("driver") or "", env.get("torch") or ""]
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", "-".join(p for p in parts if p)).strip("_")


def cache_dir() -> Path:
    from gpubench.build import cache_base

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
    key = device_key(env)
    cached = None if force else load_cached(key)
    if cached is not None:
        return cached
    ceilings = measure(env["device"], key, env.get("gpu") or "CPU")
    (cache_dir() / f"{key}.json").write_text(json.dumps(ceilings.to_dict(), indent=2))
    return ceilings


def measure(device: str, key: str, name: str) -> Ceilings:
    """Time a large copy and a large matmul per dtype with gpubench's own timers."""
    import torch

    from gpubench.timers import make_timer

    mode = "warm" if device == "cuda" else "cpu"
    timer = make_timer(mode, SETTINGS)
    copy_bytes = GPU_COPY_BYTES if device == "cuda" else CPU_COPY_BYTES
    copy_s = _median_s(timer, *_copy_call(torch, copy_bytes, device))
    rates = {}
    for dtype in DTYPES:
        n = GPU_MATMUL_N if device == "cuda" else CPU_MATMUL_N[dtype]
        a = torch.randn(n, n, device=device).to(getattr(torch, dtype))
        b = torch.randn(n, n, device=device).to(getattr(torch, dtype))
        out = torch.empty_like(a)
        seconds = _median_s(timer, lambda a=a, b=b, out=out: torch.matmul(a, b, out=out))
        rates[dtype] = 2 * n**3 / seconds / 1e12
    return Ceilings(key=key, device=name, bandwidth_gbps=2 * copy_bytes / copy_s / 1e9,
                    tflops=rates, measured=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
                    method=f"median of {timer.method}: copy of {copy_bytes >> 20} MiB "
                           f"(read + write), torch.matmul per dtype")


def _copy_call(torch, nbytes: int, device: str):
    source = torch.ones(nbytes // 4, device=device)
    target = torch.empty_like(source)
    return (lambda: target.copy_(source)),


def _median_s(timer, fn) -> float:
    from gpubench.stats import summarize

    return summarize(timer.measure(fn).samples_s, with_ci=False).median
