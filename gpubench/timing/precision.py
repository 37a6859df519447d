"""The precisions a matmul computes in, and which measured ceiling a result is placed under.

A dtype does not say how fast a kernel may go: fp32 inputs run on CUDA cores (~67 TFLOP/s
on an H100/H200) or, as TF32, on tensor cores (~7x that), and a kernel may quantise fp16
inputs to fp8. So `gpubench peak` measures one matmul ceiling per precision, and a variant
that computes in another precision than its dtype's own declares it (spec.py `precision=`);
its roof is that precision's ceiling (verdicts/derive.py roof_position). Pure data.
"""

from __future__ import annotations

from collections.abc import Mapping

# What `gpubench peak` measures, in its table's order, and what each one means.
PRECISIONS: Mapping[str, str] = {
    "fp32": "fp32 inputs and math (GPU: CUDA cores, TF32 off)",
    "tf32": "fp32 inputs as TF32 (10-bit mantissa) on tensor cores",
    "fp16": "fp16 inputs (GPU: tensor cores, fp32 accumulate)",
    "bf16": "bf16 inputs (GPU: tensor cores, fp32 accumulate)",
    "fp8": "fp8 e4m3 inputs on tensor cores (torch._scaled_mm)",
}
# The precision a dtype computes in when its variant declares none.
DTYPE_PRECISION: Mapping[str, str] = {
    "float32": "fp32", "float16": "fp16", "bfloat16": "bf16", "float64": "fp64",
}
# Ceilings cached (and results.json written) before precisions were measured keyed their
# rates by dtype: {"float32": 51.3, "float16": 656, "bfloat16": 675}.
LEGACY_KEYS: Mapping[str, str] = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16"}


def of_dtype(dtype: str) -> str:
    """The precision a dtype computes in by default ('float32' -> 'fp32')."""
    return DTYPE_PRECISION.get(dtype, dtype)


def normalized_rates(rates: Mapping[str, float] | None) -> dict[str, float]:
    """Matmul rates keyed by precision, from either form (old dtype keys are renamed)."""
    legacy = {dtype: name for name, dtype in LEGACY_KEYS.items()}
    return {legacy.get(key, key): value for key, value in (rates or {}).items()}


def peak_tflops(ceilings: Mapping, precision: str) -> float | None:
    """The measured matmul rate of `precision` in a ceilings dict of either form, or None."""
    rates = ceilings.get("tflops") or {}
    rate = rates.get(precision) or rates.get(LEGACY_KEYS.get(precision, ""))
    return rate if isinstance(rate, int | float) and rate > 0 else None


def compute_roof(ceilings: Mapping, dtype: str, declared: str | None) -> tuple[str, float] | None:
    """(precision, TFLOP/s) of the ceiling a result of `dtype` is placed under: the declared
    precision's, else (not measured on this device: TF32 on a CPU) the dtype's own, else
    fp32's (float64 has no ceiling of its own, as before precisions). None without any."""
    for name in (declared, of_dtype(dtype), "fp32"):
        rate = peak_tflops(ceilings, name) if name else None
        if rate is not None:
            return name, rate
    return None


def differs(roof, dtype: str) -> str | None:
    """The precision a compute roof was taken from, when it is not the dtype's own (the
    table then names it: '85% tf32'); None when it is, or for an old roof that says none."""
    used = roof.compute if roof else None
    return used if used and used != of_dtype(dtype) else None


def roof_label(roof, dtype: str) -> str:
    """Which roof a result is under, as its "of roof" cell says it: 'mem', 'comp', or the
    precision of a compute roof other than the dtype's own ('tf32')."""
    if roof.bound == "memory":
        return "mem"
    return differs(roof, dtype) or "comp"
