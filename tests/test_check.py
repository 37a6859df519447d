import torch

from gpubench.families.check import compare, poison


def test_poison_makes_float_outputs_nan_and_ints_max():
    f = torch.zeros(4)
    poison(f)
    assert torch.isnan(f).all()
    i = torch.zeros(3, dtype=torch.int32)
    poison(i)
    assert (i == torch.iinfo(torch.int32).max).all()


def test_within_tolerance_passes():
    ref = torch.randn(1000, dtype=torch.float64)
    out = (ref * (1 + 5e-5)).float()
    result = compare(out, ref, atol=1e-4, rtol=1e-4)
    assert result.passed and result.mismatches == 0
    assert result.max_abs_err > 0


def test_beyond_tolerance_fails_with_counts():
    ref = torch.linspace(1, 2, 100, dtype=torch.float64)
    out = ref.clone().float()
    out[:10] += 0.5
    result = compare(out, ref, atol=1e-4, rtol=1e-4)
    assert not result.passed
    assert result.mismatches == 10
    assert abs(result.max_abs_err - 0.5) < 1e-6
    assert "10 of 100 elements off" in result.summary()


def test_nan_never_passes_even_with_huge_tolerance():
    ref = torch.ones(8, dtype=torch.float64)
    out = torch.ones(8)
    out[3] = float("nan")
    result = compare(out, ref, atol=1e9, rtol=1e9)
    assert not result.passed
    assert result.nonfinite == 1
    assert result.max_abs_err == float("inf")


def test_unwritten_poisoned_elements_are_caught():
    ref = torch.randn(64, dtype=torch.float64)
    out = torch.empty(64)
    poison(out)
    out[:32] = ref[:32].float()
    result = compare(out, ref, atol=1e-4, rtol=1e-4)
    assert not result.passed and result.nonfinite == 32


def test_reference_nan_must_be_matched_exactly():
    ref = torch.tensor([1.0, float("nan")], dtype=torch.float64)
    assert compare(torch.tensor([1.0, float("nan")]), ref, 1e-4, 1e-4).passed
    assert not compare(torch.tensor([1.0, 0.0]), ref, 1e-4, 1e-4).passed


def test_shape_mismatch_fails():
    result = compare(torch.ones(3), torch.ones(4, dtype=torch.float64), 1e-4, 1e-4)
    assert not result.passed and "shape" in result.summary()
