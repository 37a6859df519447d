"""The cold-mode window cost fit (timing/calibration.py), on recorded and synthetic windows."""

import json
from pathlib import Path

import pytest

from gpubench.timing.calibration import fit_line, window_cost

# Recorded on an H200 on 2026-11-23 by scripts/cold_offset_probe.py (two processes): per op,
# median windows around N back-to-back calls, ncu's duration, the empty pair. Microseconds.
PROBES = sorted((Path(__file__).parent / "fixtures" / "calibration").glob("h200-probe-*.json"))


def probe_rows(path: Path) -> dict[str, dict]:
    return {row["op"]: row for row in json.loads(path.read_text())["rows"]}


H200_NULL_WINDOWS_US = {n: us for n, us in probe_rows(PROBES[-1])["null"]["fit_points"]}


def test_fit_line_recovers_a_line():
    intercept, slope = fit_line([(1, 3.0), (2, 5.0), (4, 9.0), (8, 17.0)])
    assert intercept == pytest.approx(1.0)
    assert slope == pytest.approx(2.0)


def test_fit_line_needs_two_distinct_x():
    with pytest.raises(ValueError):
        fit_line([(1, 3.0), (1, 3.1)])


def test_window_cost_is_the_intercept_of_null_kernel_windows():
    windows = {n: [us * 1e-6] * 5 for n, us in H200_NULL_WINDOWS_US.items()}
    cost = window_cost(windows, empty_pair_s=1.28e-6)
    intercept, slope = fit_line([(n, us) for n, us in H200_NULL_WINDOWS_US.items()])
    assert cost.fixed_s == pytest.approx(intercept * 1e-6)
    assert cost.null_kernel_s == pytest.approx(slope * 1e-6)
    # The fit lands between one window and the empty pair: a kernel's launch costs more
    # than two bare events, less than a whole null kernel's window.
    assert 1.28e-6 < cost.fixed_s < 3.424e-6
    assert cost.method == "null-kernel fit"
    details = cost.to_details()
    assert details["window_cost_us"] == pytest.approx(intercept)
    assert details["empty_pair_us"] == pytest.approx(1.28)
    assert [n for n, _ in details["window_cost_points"]] == [1, 2, 4, 8]


def test_the_fit_takes_medians_so_a_late_host_does_not_move_it():
    clean = {n: [us * 1e-6] * 9 for n, us in H200_NULL_WINDOWS_US.items()}
    noisy = {n: [*values[:7], 80e-6, 95e-6] for n, values in clean.items()}
    assert window_cost(noisy, None).fixed_s == pytest.approx(window_cost(clean, None).fixed_s)


@pytest.mark.parametrize("windows, why", [
    ({1: [9e-6], 2: [5e-6], 4: [3e-6]}, "slope"),  # shrinking with more kernels
    ({1: [30e-6], 2: [31e-6], 4: [33e-6]}, "intercept"),  # 29 us: the host fell behind
    ({1: [3e-6]}, "two different x"),
])
def test_an_implausible_fit_falls_back_to_the_empty_pair_and_says_so(windows, why):
    cost = window_cost(windows, empty_pair_s=1.28e-6)
    assert cost.fixed_s == pytest.approx(1.28e-6)
    assert cost.null_kernel_s is None
    assert cost.method.startswith("empty pair") and why in cost.method


def test_no_empty_pair_and_no_fit_subtracts_nothing():
    assert window_cost({1: [3e-6]}, empty_pair_s=None).fixed_s == 0.0


@pytest.mark.parametrize("path", PROBES, ids=lambda p: p.stem)
def test_on_recorded_h200_windows_the_fit_lands_nearer_ncu_than_the_empty_pair(path):
    """The reason for the method: with the fitted cost subtracted, single-kernel ops of
    3-60 us read closer to ncu than with the empty pair's, in each recorded process: on
    three in four of them at least, by half on average, and all within 7%."""
    rows = probe_rows(path)
    null = rows["null"]
    cost = window_cost({n: [us * 1e-6] for n, us in null["fit_points"]}, null["E0"] * 1e-6)
    assert cost.null_kernel_s * 1e6 == pytest.approx(null["ncu"], rel=0.1)  # slope ~ ncu's
    single = [r for r in rows.values() if r.get("ncu_kernels") == 1 and r["op"] != "null"
              and 3 <= r["ncu"] <= 60 and not any(w[0] == "gpu_memset"
                                                  for w in r.get("cupti_work") or ())]
    assert len(single) >= 5
    fitted = [abs(r["W"] - cost.fixed_s * 1e6 - r["ncu"]) / r["ncu"] for r in single]
    before = [abs(r["W"] - null["E0"] - r["ncu"]) / r["ncu"] for r in single]
    assert sum(f < b for f, b in zip(fitted, before, strict=True)) >= 0.75 * len(single)
    assert sum(fitted) < 0.5 * sum(before)
    assert max(fitted) < 0.07


# Windows (us) of two fits recorded on 2 H200s on 2026-11-27 (scale_out all-cold, results.json
# window_cost_points): cuda:0's at a clock that had not ramped, cuda:1's at steady clocks.
UNRAMPED_US = {1: 14.128, 2: 19.664, 4: 30.832, 8: 54.352}
STEADY_US = {1: 4.5, 2: 6.1, 4: 9.3, 8: 15.6}


def fit_of(points_us: dict[int, float], scale: float = 1.0):
    return window_cost({n: [us * scale * 1e-6] for n, us in points_us.items()}, None)


def test_a_fit_is_kept_once_two_in_a_row_agree():
    from gpubench.timing.calibration import settled_fit

    unramped, steady = fit_of(UNRAMPED_US), fit_of(STEADY_US)
    assert unramped.null_kernel_s == pytest.approx(5.75e-6, rel=0.01)  # plausible alone
    assert settled_fit([]) is None and settled_fit([unramped]) is None
    assert settled_fit([unramped, steady]) is None  # 3.7x apart: one more
    again = fit_of(STEADY_US, 1.02)
    kept = settled_fit([unramped, steady, again])
    assert kept.fixed_s == again.fixed_s and kept.to_details()["window_cost_fits"] == 3


def test_fits_that_never_agree_keep_the_fastest_null_kernel():
    from gpubench.timing.calibration import MAX_FITS, settled_fit

    fits = [fit_of(STEADY_US, scale) for scale in (3.0, 1.5, 1.2, 2.0)][:MAX_FITS]
    kept = settled_fit(fits)
    assert kept.null_kernel_s == pytest.approx(fits[2].null_kernel_s)
    assert "fastest of 4 fits that disagreed" in kept.method
    fallbacks = [window_cost({1: [3e-6]}, None)] * MAX_FITS  # no line: the empty pair
    assert settled_fit(fallbacks).method == fallbacks[-1].method
