"""`gpubench ab --aa` (issue 63): the family against an identical copy of itself; per point
the smallest change an A/B decides at 80% power, any false verdict, and the calibration
kept per device model for later A/Bs."""

from __future__ import annotations

import math

import pytest
from test_ab import write_version

from conftest import FAST
from gpubench.analysis.aa import Z_POWER, Calibration, calibrate, detectable_change, with_resolution
from gpubench.records.ab import PairVerdict


def verdict(said: str, ratio: float, low: float, high: float, z: float = 2.0,
            bar: float = 0.005) -> PairVerdict:
    return PairVerdict("work", "float32", "n=65536", "cpu", False, said, ratio=ratio,
                       low=low, high=high, blocks=100, bar=bar, z=z)


def test_the_detectable_change_is_the_bar_plus_z_and_z_power_standard_errors():
    v = verdict("SAME", 1.0, math.exp(-0.01), math.exp(0.01))  # 0.01 = z * se: se = 0.005
    assert detectable_change(v) == pytest.approx(math.exp(math.log1p(0.005)
                                                          + (2.0 + Z_POWER) * 0.005) - 1)
    wider = verdict("SAME", 1.0, math.exp(-0.02), math.exp(0.02))
    assert detectable_change(wider) > detectable_change(v) > 0.005
    assert math.isnan(detectable_change(verdict("UNSURE", math.nan, math.nan, math.nan)))


def test_the_footer_says_which_threshold_each_point_had_to_clear():
    from gpubench.report.ab_view import threshold_text

    points = [PairVerdict("work", "float32", f"n={n}", "cold", False, "SAME") for n in (1, 2)]
    assert threshold_text(points, 0.005, None) == "threshold +-0.5%"
    own = {"work n=1 float32 cold": 0.0012, "work n=9 float32 cold": 0.5}  # n=9: not here
    assert threshold_text(points, 0.005, own) == (
        "threshold from the A/A at 1 of 2 points (+-0.12%), +-0.5% at the rest")
    own["work n=2 float32 cold"] = 0.003
    assert threshold_text(points, 0.005, own) == (
        "threshold from the A/A at 2 of 2 points (+-0.12% to +-0.30%)")


def test_an_aa_verdict_of_faster_or_slower_is_false():
    found = calibrate([verdict("SLOWER", 1.01, 1.006, 1.014), verdict("SAME", 1.0, 0.998,
                                                                          1.002)])
    assert [c.false for c in found] == [True, False]


def test_an_unsure_change_below_what_its_point_resolves_says_so():
    known = {c.label: c for c in [Calibration("work", "float32", "n=65536", "cpu", 0.012,
                                              "SAME")]}
    small = with_resolution([verdict("UNSURE", 1.004, 0.99, 1.02)], known)[0]
    assert "below what this point resolves here (A/A: 1.20% at 80% power)" in small.reason
    decided = with_resolution([verdict("SLOWER", 1.05, 1.04, 1.06)], known)[0]
    assert decided.reason == ""  # a decided point needs no note
    assert with_resolution([verdict("UNSURE", 1.004, 0.99, 1.02)], {})[0].reason == ""


def test_a_calibration_is_kept_per_model_and_no_name_leaves_its_folder(tmp_path,
                                                                        monkeypatch):
    from gpubench.store.aa_calibration import calibration_path, load_calibration, save_calibration

    monkeypatch.setenv("GPUBENCH_CACHE_DIR", str(tmp_path))
    found = [Calibration("work", "float32", "n=1", "cold", 0.006, "SAME", 40),
             Calibration("torch", "float32", "n=1", "cold", math.nan, "UNSURE", 3)]
    save_calibration("pair", "NVIDIA H200", found)
    again = load_calibration("pair", "NVIDIA H200")
    assert again["work n=1 float32 cold"].detectable == 0.006
    assert math.isnan(again["torch n=1 float32 cold"].detectable)
    assert load_calibration("pair", "NVIDIA H100") == {}  # another model: none
    path = calibration_path("../../etc/x", "../..")
    assert path.is_relative_to(tmp_path / "aa")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("{damaged")
    assert load_calibration("../../etc/x", "../..") == {}


@pytest.mark.slow
def test_aa_prints_each_points_detectable_change_and_keeps_it(gpubench, tmp_path):
    family = tmp_path / "fam" / "pair"
    write_version(family, cuda=False)
    own = {"GPUBENCH_CACHE_DIR": str(tmp_path / "cache")}  # its calibration its own
    args = ("ab", "pair", "--kernels-dir", str(family.parent), "--device", "cpu", *FAST)
    before = gpubench(*args, "--base", str(family), "--threshold-from-aa", env=own)
    assert "no A/A of pair on " in before.stdout, before.output
    done = gpubench(*args, "--aa", "--out", str(tmp_path / "aa"), env=own)
    assert done.code == 0, done.output
    assert "detectable" in done.stdout and "A/A: 2 points" in done.stdout, done.stdout
    assert "calibration: " in done.stdout
    after = gpubench(*args, "--base", str(family), "--threshold-from-aa", "--out",
                     str(tmp_path / "after"), env=own)
    assert after.code == 0 and "no A/A" not in after.stdout, after.output
    said = "threshold from the A/A at 2 of 2 points (+-"  # the footer says what was cleared
    assert said in " ".join(after.stdout.split()), after.stdout
    assert said in " ".join(gpubench("compare", str(tmp_path / "after")).stdout.split())
    refused = gpubench("ab", "pair", "--aa", "--base", str(family), "--kernels-dir",
                       str(family.parent), "--device", "cpu")
    assert refused.code == 2 and "identical copy" in refused.output


SLEEPY = "lambda a, b, out: (__import__('time').sleep(0.004), torch.add(a, b, out=out))[1]"


@pytest.mark.slow
def test_a_long_call_gets_its_blocks_within_the_budget_and_says_so_without(gpubench,
                                                                          tmp_path):
    """Issue 63, time where it decides: a 4 ms call times ~2 blocks in a 30 ms --max-time;
    with --budget it takes the ~0.6 s more that 30 blocks need, and without one the
    reason says how much more it would need."""
    import json

    base, new = tmp_path / "v1" / "pair", tmp_path / "v2" / "pair"
    for folder in (base, new):
        write_version(folder, cuda=False, work=SLEEPY)
    args = ("ab", "pair", "--base", str(base), "--new", str(new), "--variants", "work",
            "--device", "cpu", *FAST)
    given = gpubench(*args, "--budget", "5", "--out", str(tmp_path / "given"))
    assert given.code == 0, given.output
    found = json.loads((tmp_path / "given" / "results.json").read_text())["meta"]["ab"]
    work = found["verdicts"][0]
    assert work["blocks"] >= 30 and work["stop"] == "extended", work
    assert "1 point took more to reach 30 blocks" in given.stdout, given.stdout
    none = gpubench(*args, "--budget", "0", "--out", str(tmp_path / "none"))
    assert none.code == 0, none.output
    assert "0 points took more" in none.stdout
    found = json.loads((tmp_path / "none" / "results.json").read_text())["meta"]["ab"]
    work = found["verdicts"][0]
    assert work["blocks"] < 30 and "s more of pairs: --budget" in work["reason"], work


def test_a_threshold_from_the_aa_decides_what_the_fixed_one_calls_same():
    """Issue 63: a +0.4% change with a +-0.03% interval is SAME at the fixed +-0.5%; with
    the point's threshold from its A/A (its interval's far end, at least 0.1%) it is SLOWER.
    A point without a calibration keeps the fixed threshold."""
    from dataclasses import replace

    from test_ab import synthetic_blocks

    from gpubench.analysis.aa import NOISE_FLOOR, noise_thresholds
    from gpubench.analysis.ab import PairEntry, judge_pairs

    aa = Calibration("work", "float32", "n=1024", "cold", 0.002, "SAME", 400, 0.9997, 1.0004)
    assert aa.noise_threshold == NOISE_FLOOR  # 0.04% apart at most: the floor
    wide = replace(aa, low=0.995, high=1.003)
    assert wide.noise_threshold == pytest.approx(0.005)
    thresholds = noise_thresholds({aa.label: aa})
    entry = PairEntry("work", "float32", "n=1024", "cold", False,
                      synthetic_blocks(1.004, 1.0, 400, noise=0.001, seed=2))
    fixed = judge_pairs([entry], threshold=0.005)[0]
    own = judge_pairs([replace(entry, threshold=thresholds[aa.label])], threshold=0.005)[0]
    assert fixed.verdict == "SAME" and own.verdict == "SLOWER", (fixed, own)


def test_the_aa_threshold_bounds_the_bias_not_the_aa_intervals_far_end():
    """A calibration with its ratio and z: |change| + 1.645 standard errors, which a 0.5%
    change with a +-0.19% interval clears where the far end (+-0.45%) would not; an
    unchanged point under that small threshold is still SAME within the run's +-0.5%."""
    from dataclasses import replace

    from test_ab import synthetic_blocks

    from gpubench.analysis.aa import Z_BIAS
    from gpubench.analysis.ab import PairEntry, judge_pairs

    z = 3.59  # a 30-point A/A's intervals (timing/paired.family_z)
    aa = Calibration("work", "float32", "n=1024", "cold", 0.009, "SAME", 300, 0.9956,
                     1.0047, 1.0001, z)
    error = (math.log(1.0047) - math.log(0.9956)) / (2 * z)
    assert aa.noise_threshold == pytest.approx(math.expm1(math.log(1.0001) + Z_BIAS * error))
    assert 0.001 < aa.noise_threshold < 0.0025 < max(aa.high - 1, 1 - aa.low)
    plant = PairEntry("work", "float32", "n=1024", "cold", False,
                      synthetic_blocks(1.005, 1.0, 400, noise=0.015, seed=3),
                      threshold=aa.noise_threshold)
    steady = replace(plant, variant="steady", control=True,
                     paired=synthetic_blocks(1.0, 1.0, 400, noise=0.015, seed=4))
    slower, same = judge_pairs([plant, steady], threshold=0.005)
    assert slower.verdict == "SLOWER" and slower.low - 1 < 0.0045, slower
    outside = same.low < 1 - aa.noise_threshold or same.high > 1 + aa.noise_threshold
    assert same.verdict == "SAME" and outside, same  # SAME by the run's +-0.5% alone
    farthest = judge_pairs([replace(plant, threshold=0.0047)], threshold=0.005)[0]
    assert farthest.verdict == "UNSURE" and "for a change" in farthest.reason, farthest


def test_an_ab_of_a_variant_that_cannot_run_here_says_why(gpubench, tmp_path):
    """`ab --variants X` where X cannot run (wmma: float16 and bfloat16 only) says so, as
    `run` does, rather than print an empty table; with --fail-on-regression, no verdict is
    exit 13."""
    done = gpubench("ab", "matmul", "--aa", "--variants", "wmma", "--device", "cpu",
                    "--sizes", "64", "--out", str(tmp_path / "ab"), "--fail-on-regression")
    assert "skipped 1 point(s) of matmul/wmma: supports float16, bfloat16 only" in \
        done.stdout, done.output
    assert done.code == 13, done.output
