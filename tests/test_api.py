"""gpubench.measure() on the CPU: the same Result, statistics and roofline as the CLI."""

import re

import pytest
import torch

import gpubench


@pytest.mark.skipif(torch.cuda.is_available(), reason="on a GPU the default mode is cold")
def test_measure_times_a_callable_with_the_host_clock_on_cpu():
    a = torch.randn(128, 128)
    result = gpubench.measure(torch.mm, a, a, flops=2 * 128**3, bytes_moved=3 * 128 * 128 * 4,
                              name="mm", max_time_s=0.05, min_time_s=0.01)
    assert result.mode == "cpu" and result.device == "cpu" and result.passed
    assert result.variant == "mm" and result.dtype == "float32"
    summary = result.summary
    assert summary.n >= 10 and summary.ci_low <= summary.median <= summary.ci_high
    assert result.tflops > 0 and result.stop_reason in ("converged", "max_time", "max_samples")
    assert "host-clock" in result.method
    record = result.to_dict()
    assert record["samples"] == len(record["measurement"]["samples_s"]) == summary.n
    text = repr(result)  # short: the median with its unit, no raw samples
    assert re.match(r"<Result api/mm  float32 cpu: [\d.]+ (ns|us|ms|s) ±", text), text
    assert len(text) < 160


def test_help_shows_measures_parameters_and_docstring():
    import inspect
    import pydoc

    import gpubench.api

    assert gpubench.measure is gpubench.api.measure  # not a (fn, *args, **kwargs) forwarder
    assert {"mode", "flops", "bytes_moved", "shape", "settings"} <= set(
        inspect.signature(gpubench.measure).parameters)
    text = pydoc.render_doc(gpubench.measure, renderer=pydoc.plaintext)
    assert "mode: str = 'cold'" in text.replace("'str'", "str") and "Result" in text
    assert "measure" in dir(gpubench)
    with pytest.raises(AttributeError):
        gpubench.no_such_thing  # noqa: B018
