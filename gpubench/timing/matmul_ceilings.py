"""The matmul ceiling of each precision (timing/precision.py): one large square torch matmul
per precision, timed with gpubench's own timer; which precisions this device cannot run, and
why. ceilings.py caches what this measures.

What to expect on an H100/H200 SXM (same GH100 compute: 132 SMs at up to 1.98 GHz; the
H200 only adds memory): datasheet dense rates fp32 67, TF32 495, fp16/bf16 989, fp8 1979
TFLOP/s. cuBLAS at 8192^3 reaches less, power-limited: fp32 ~50-55 (51.3 measured on an
H200), TF32 ~350-450, fp16/bf16 ~650-750 (656/675 measured), fp8 ~1200-1500.
Those are ranges to judge a measurement by, never used as values: the roof is what this
GPU does. A CPU measures fp32, fp16 and bf16 only (no TF32, no fp8).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager

from gpubench.timing.precision import PRECISIONS

# An 8192^3 matmul (1.1 TFLOP) keeps cuBLAS in its steady state: ~21 ms in fp32 on CUDA
# cores, ~3 ms as TF32, ~1.6 ms in fp16/bf16, ~0.8 ms in fp8 on an H100/H200; its three
# fp32 operands take 768 MiB.
GPU_MATMUL_N = 8192
# On CPUs: 1024^3 in fp32 (2 GFLOP, ~0.1 s on 2 cores); fp16/bf16 run far slower there.
CPU_MATMUL_N = {"fp32": 1024, "fp16": 256, "bf16": 512}
# TF32 and bf16 tensor cores came with Ampere (8.0); fp8 with Ada (8.9) and Hopper (9.0).
AMPERE = (8, 0)
FP8_CAPABILITY = (8, 9)


def skip_reasons(device: str, capability: tuple[int, int] | None,
                 has_scaled_mm: bool) -> dict[str, str]:
    """precision -> why this device does not measure it. Pure."""
    if device != "cuda":
        return {"tf32": "a CPU has no TF32: fp32 inputs compute in fp32",
                "fp8": "fp8 needs a CUDA GPU of compute capability 8.9 or newer"}
    skips = {}
    cc = tuple(capability) if capability is not None else None
    if cc is not None and cc < AMPERE:
        skips["tf32"] = skips["bf16"] = (f"compute capability {cc[0]}.{cc[1]}: TF32 and bf16 "
                                         "tensor cores need 8.0 or newer")
    if cc is not None and cc < FP8_CAPABILITY:
        skips["fp8"] = (f"compute capability {cc[0]}.{cc[1]}: fp8 tensor cores need 8.9 or "
                        "newer")
    elif not has_scaled_mm:
        skips["fp8"] = "this torch has no torch._scaled_mm"
    return skips


def measure_rates(rate_of: Callable[[str], float], skips: Mapping[str, str]
                  ) -> tuple[dict[str, float], dict[str, str]]:
    """({precision: TFLOP/s}, {precision: why not}) over every precision: the skipped ones
    with their reason, each other one measured by `rate_of`, and a measurement that raises
    or gives no positive rate recorded with what went wrong, never raised (a worker must
    still start; `gpubench peak --force` tries again)."""
    rates, unmeasured = {}, {}
    for name in PRECISIONS:
        if name in skips:
            unmeasured[name] = skips[name]
            continue
        try:
            rate = rate_of(name)
        except Exception as exc:  # any failure of one precision leaves the others measured
            unmeasured[name] = failure_text(exc)
            continue
        if isinstance(rate, int | float) and math.isfinite(rate) and rate > 0:
            rates[name] = float(rate)
        else:
            unmeasured[name] = f"measured no positive rate ({rate!r})"
    return rates, unmeasured


def failure_text(exc: BaseException) -> str:
    """'OutOfMemoryError: CUDA out of memory...', its first line only (a CUDA error's text
    runs to a dozen lines)."""
    first = (str(exc).strip().splitlines() or [""])[0]
    return f"{type(exc).__name__}: {first[:200]}"


def matmul_size(precision: str, device: str) -> int:
    return GPU_MATMUL_N if device == "cuda" else CPU_MATMUL_N[precision]


def matmul_tflops(torch, precision: str, device: str, time_s: Callable[[Callable], float]
                  ) -> float:
    """The rate of one n^3 matmul in `precision`, timed by `time_s(call) -> median s`."""
    n = matmul_size(precision, device)
    if precision == "fp8":
        call = _fp8_call(torch, n, device)
    else:
        dtype = {"fp32": torch.float32, "tf32": torch.float32, "fp16": torch.float16,
                 "bf16": torch.bfloat16}[precision]
        a = torch.randn(n, n, device=device).to(dtype)
        b = torch.randn(n, n, device=device).to(dtype)
        out = torch.empty_like(a)

        def call():
            torch.matmul(a, b, out=out)
    with tf32_matmuls(torch, precision == "tf32"):
        seconds = time_s(call)
    return 2 * n**3 / seconds / 1e12


def _fp8_call(torch, n: int, device: str) -> Callable:
    """torch._scaled_mm on e4m3 operands: A row-major, B column-major (what cuBLASLt's fp8
    kernels take), unit float32 scales, bf16 out. Fast accumulation on: it is the fastest
    fp8 rate, and a ceiling a kernel could beat would call honest kernels suspect."""
    a = torch.randn(n, n, device=device).to(torch.float8_e4m3fn)
    b = torch.randn(n, n, device=device).to(torch.float8_e4m3fn).t()
    one = torch.tensor(1.0, device=device)

    def call():
        torch._scaled_mm(a, b, one, one, out_dtype=torch.bfloat16, use_fast_accum=True)
    return call


@contextmanager
def tf32_matmuls(torch, enabled: bool) -> Iterator[None]:
    """fp32 matmuls on TF32 tensor cores (enabled) or CUDA cores, then torch's flags as
    they were: the worker measures ceilings in the process that then runs the variants,
    and a changed flag is blamed on a variant (families/sideeffects.py). allow_tf32 is
    restored first: setting it rewrites float32_matmul_precision ('high'/'highest'),
    which is then set back itself (a user's 'medium' survives). Torch's newer
    fp32_precision ('none' until a flag is set, then 'ieee' or 'tf32') is set back last:
    Inductor's FX-graph cache keys on it (torch 2.13), and a worker that measured the
    ceilings left at 'ieee' compiles under another key than the next run's, which then
    misses the cache."""
    matmul = torch.backends.cuda.matmul
    allowed, precision = matmul.allow_tf32, torch.get_float32_matmul_precision()
    fp32 = getattr(matmul, "fp32_precision", None)  # torch >= 2.9
    matmul.allow_tf32 = enabled
    try:
        yield
    finally:
        matmul.allow_tf32 = allowed
        torch.set_float32_matmul_precision(precision)
        if fp32 is not None:
            matmul.fp32_precision = fp32


def capability(torch, device: str) -> tuple[int, int] | None:
    """The GPU's compute capability, None on a CPU."""
    return tuple(torch.cuda.get_device_capability()) if device == "cuda" else None
