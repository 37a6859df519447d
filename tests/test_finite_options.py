"""Float options refuse nan and inf: click's usage error (exit 2) naming the option given,
before anything runs (issue 61: a nan --threshold was taken, and never flagged a change)."""

import pytest
from click.testing import CliRunner

from gpubench.cli import cli

CASES = [
    (["history", "--threshold", "nan"], "--threshold"),
    (["compare", "a", "b", "--threshold", "inf"], "--threshold"),
    (["ab", "matmul", "--threshold", "nan"], "--threshold"),
    (["ab", "matmul", "--threshold", "inf"], "--threshold"),
    (["ab", "matmul", "--target-ci", "nan"], "--target-ci"),
    (["ab", "matmul", "--budget", "nan"], "--budget"),
    (["bisect", "matmul", "--good", "a", "--bad", "b", "--threshold", "inf"], "--threshold"),
    (["tune", "matmul", "--variant", "v", "--threshold", "nan"], "--threshold"),
    (["tune", "matmul", "--variant", "v", "--min-time", "inf"], "--min-time"),
    (["run", "matmul", "--warmup", "inf"], "--warmup"),
    (["run", "matmul", "--min-time", "nan"], "--min-time"),
    (["run", "matmul", "--max-time", "1e999"], "--max-time"),
    (["run", "matmul", "--target-ci", "nan"], "--target-ci"),
    (["run", "--build-timeout", "nan", "matmul"], "--build-timeout"),
    (["ncu", "matmul", "--timeout", "inf"], "--timeout"),
]


@pytest.mark.parametrize(("args", "option"), CASES)
def test_a_non_finite_float_is_exit_2_naming_the_option(args, option):
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2, result.output
    assert f"'{option}'" in result.output and "not a finite number" in result.output
    assert "Traceback" not in result.output


def test_a_finite_value_still_passes_the_type():
    from gpubench.cli.options import FiniteFloat

    assert FiniteFloat(min=0, min_open=True).convert("2.5", None, None) == 2.5
