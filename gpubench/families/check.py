"""Correct before fast: compare a variant's output with the reference.

The output buffer is poisoned with NaN (or, on some timed calls, with a finite
sentinel) before the variant runs, so an element the kernel never wrote stays
poisoned and fails, and NaN never passes: an output
element passes only if it is finite where the reference is finite and within
atol + rtol * |reference| of it (the rule of torch.allclose, computed in float64).
"""

from __future__ import annotations

from gpubench.timing.check_result import CheckResult

__all__ = ["CheckResult", "compare", "poison"]


def poison(out, finite: bool = False) -> None:
    """Fill `out` with a value no correct kernel writes: NaN for floats, the max for
    integers; with `finite`, a finite one instead (the most negative float, the integer
    minimum, False), which an unwritten element keeps where the reference is NaN too: a
    variant that writes nothing cannot pass on a NaN reference under both poisons."""
    import torch

    if out.is_floating_point() or out.is_complex():
        dtype = out.real.dtype if out.is_complex() else out.dtype
        out.fill_(-torch.finfo(dtype).max if finite else float("nan"))
    elif out.dtype == torch.bool:
        out.fill_(not finite)
    else:
        info = torch.iinfo(out.dtype)
        out.fill_(info.min if finite else info.max)


class OwnVerdict:
    """A reference that judges an output itself, where a problem brings its own check (a
    leaderboard problem's check_implementation, families/leaderboard/): a family's
    reference may return one instead of a tensor, and `compare` then asks it. Everything
    around the comparison (poisoned outputs, re-checks of timed calls, fresh inputs, side
    effects) stays the harness's; only the verdict on one output is the problem's."""

    def judge(self, out, atol: float, rtol: float) -> CheckResult:
        raise NotImplementedError


def compare(out, ref, atol: float, rtol: float) -> CheckResult:
    """Compare `out` with the float64 reference `ref` elementwise (or let `ref` judge it,
    when it is an OwnVerdict)."""
    import torch

    if isinstance(ref, OwnVerdict):
        return ref.judge(out, atol, rtol)
    if tuple(out.shape) != tuple(ref.shape):
        note = f"shape {tuple(out.shape)}, expected {tuple(ref.shape)}"
        return CheckResult(False, float("inf"), float("inf"), out.numel(), 0, ref.numel(),
                           atol, rtol, note=note)
    if ref.is_complex() and not out.is_complex():
        # A cast to float64 would drop the reference's imaginary parts and pass an output
        # that has none: refused, with the way to check complex results as real ones.
        note = (f"the reference is complex ({str(ref.dtype).removeprefix('torch.')}) and "
                f"the output real: return torch.view_as_real(...) from both to check it")
        return CheckResult(False, float("inf"), float("inf"), out.numel(), 0, ref.numel(),
                           atol, rtol, note=note)
    # Complex outputs are compared as complex128, the error being |got - want|.
    wide = torch.complex128 if out.is_complex() else torch.float64
    got = out.detach().to(wide)
    want = ref.detach().to(wide)
    total = want.numel()
    if total == 0:
        return CheckResult(True, 0.0, 0.0, 0, 0, 0, atol, rtol)
    want_finite = torch.isfinite(want)
    nonfinite = want_finite & ~torch.isfinite(got)
    # Where the reference itself is NaN/inf, the output must match it exactly.
    special_mismatch = ~want_finite & ~((got == want) | (torch.isnan(got) & torch.isnan(want)))
    diff = (got - want).abs().masked_fill(~want_finite, 0.0)
    diff = diff.masked_fill(nonfinite, float("inf"))
    tolerance = atol + rtol * want.abs().masked_fill(~want_finite, 0.0)
    ratio = diff / tolerance
    bad = (diff > tolerance) | nonfinite | special_mismatch
    mismatches = int(bad.sum().item())
    max_abs = float(diff.max().item())
    worst = float(ratio.max().item())
    if special_mismatch.any():
        max_abs, worst = float("inf"), float("inf")
    return CheckResult(
        passed=mismatches == 0,
        max_abs_err=max_abs,
        worst_ratio=worst,
        mismatches=mismatches,
        nonfinite=int(nonfinite.sum().item()),
        total=total,
        atol=atol,
        rtol=rtol,
    )
