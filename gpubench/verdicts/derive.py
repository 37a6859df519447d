"""What a complete group of results implies: speedups, roofline positions, warnings.

Pure functions that return new Results (the observed fields untouched), run
once per (family, dtype, shape) group as soon as it completes.
"""

from __future__ import annotations

from dataclasses import replace

from gpubench.records.result import OK, SUSPECT, Result
from gpubench.records.warning import TimingWarning
from gpubench.timing import copy_curve, precision, roofline
from gpubench.timing.ratio_ci import ratio_ci
from gpubench.verdicts import behaviour, noise, physics

# Fewer samples a side and the bootstrap of a median has a handful of distinct values:
# no CI (analysis/comparison.py's MIN_SAMPLES, for the same reason).
MIN_CI_SAMPLES = 5


def speedups(group: list[Result]) -> list[float | None]:
    """Baseline median / row median, against the group's baseline in the same mode;
    only for rows that passed (a wrong answer's speed is not worth comparing) and were
    measured on the same device model as the baseline (with --devices or --cluster a
    group may be spread over several devices: an H100 against an H200 is no speedup)."""
    baselines = {r.mode: r for r in group if r.baseline and r.passed}
    values = []
    for result in group:
        base = baselines.get(result.mode)
        comparable = base is not None and result.passed and same_model(base, result)
        values.append(roofline.speedup(base.median_s, result.median_s) if comparable
                      else None)
    return values


def speedup_cis(group: list[Result], values: list[float | None]) -> list[tuple | None]:
    """The 95% CI (low, high) of each speedup in `values` (speedups(group)), by the
    bootstrap `gpubench compare` uses (timing/ratio_ci.py): None for the baseline itself
    (1 by definition), for a row with no speedup, or with too few samples."""
    baselines = {r.mode: r for r in group if r.baseline and r.passed}
    found = []
    for result, value in zip(group, values, strict=True):
        base = baselines.get(result.mode)
        if value is None or base is None or result is base or min(
                len(result.samples_s), len(base.samples_s)) < MIN_CI_SAMPLES:
            found.append(None)
            continue
        _, low, high = ratio_ci(result.samples_s, base.samples_s)
        found.append((low, high))
    return found


def same_model(one: Result, other: Result) -> bool:
    """Whether two results were measured on the same device model (unknown matches: a
    record from before devices were named)."""
    return not one.device_name or not other.device_name or one.device_name == other.device_name


def roof_position(result: Result, ceilings: dict | None) -> roofline.RoofPosition | None:
    """Where a passing row sits under the measured roofline ({'bandwidth_gbps',
    'tflops': {precision: x}}, or the older {dtype: x}), or None. The compute ceiling is
    that of the precision the variant declares (fp32 inputs as TF32), else its dtype's
    (precision.compute_roof); the roof names it in "compute" ("tf32"). The memory ceiling
    is the copy's bandwidth at the row's footprint (copy_curve.memory_roof_gbps: a kernel
    whose writes fit in L2 beats a large copy honestly), recorded in "bandwidth_gbps"."""
    if not ceilings or not result.correct or result.bytes_moved is None:
        return None
    used, peak = precision.compute_roof(ceilings, result.dtype, result.precision) or (None, None)
    bandwidth = copy_curve.memory_roof_gbps(ceilings, result.bytes_moved)
    roof = roofline.position(result.flops or 0.0, result.bytes_moved, result.median_s,
                             bandwidth, peak)
    return replace(roof, compute=used, bandwidth_gbps=bandwidth) if roof else None


def measurement_warnings(result: Result) -> list[TimingWarning]:
    """Noise and clock warnings of a measured, passing row."""
    if result.summary is None or not result.passed:
        return []
    target = result.measurement.target_rel_ci or 0.0
    return noise.assess(result.summary, result.stop_reason, target, result.clocks, result.mode,
                        result.host_load)


def launch_bound_warnings(group: list[Result]) -> dict[int, TimingWarning]:
    """index of a `wall` row -> the launch-bound warning, when a GPU-time mode of the same
    variant shows the kernel is much faster than what the caller waits."""
    by_variant: dict[str, dict[str, int]] = {}
    for index, result in enumerate(group):
        if result.passed:
            by_variant.setdefault(result.variant, {})[result.mode] = index
    found = {}
    for modes in by_variant.values():
        gpu = next((modes[m] for m in ("cold", "cupti", "graph") if m in modes), None)
        if gpu is not None and "wall" in modes:
            warning = physics.launch_bound(group[gpu].median_s, group[modes["wall"]].median_s)
            if warning:
                found[modes["wall"]] = warning
    return found


def suspect_warning(result: Result, roof: dict | None) -> TimingWarning | None:
    """Whether a passing row is beyond what any kernel can do (see physics.suspect)."""
    if not result.passed:
        return None
    return physics.suspect(roof.fraction if roof else None, result.median_s, result.mode)


def beyond_physics(result: Result, doubt: TimingWarning | None) -> Result:
    """A passing row beyond physics becomes SUSPECT, its reason in `error`: a time no
    kernel can reach is not a PASS, whatever produced it."""
    if doubt is None or result.status != OK:
        return result
    return result.with_derived(status=SUSPECT, error=doubt.message)


def doubts(group: list[Result], roofs: list[dict | None]) -> list[TimingWarning | None]:
    """Per row, the reason its time is not trusted, or None: beyond physics (its own
    figures), or behavioural evidence (verdicts/behaviour.py) in any mode of the same variant —
    a variant seen skipping work in one mode is not trusted in the others."""
    physics = [suspect_warning(r, roof) for r, roof in zip(group, roofs, strict=True)]
    caught: dict[str, TimingWarning] = {}
    for result in group:
        found = behaviour.behavioural_doubt(result) if result.passed else None
        if found is not None and result.variant not in caught:
            caught[result.variant] = TimingWarning(found.code, f"{found.message} "
                                                   f"({result.mode} mode)", found.remedy)
    return [own or caught.get(r.variant) for r, own in zip(group, physics, strict=True)]


def finish_group(group: list[Result], ceilings: dict | None) -> list[Result]:
    """The group's results with everything derived: speedups, roofline, warnings. A row
    beyond physics or caught gaming the timer becomes SUSPECT; a SUSPECT row gets no
    speedup, and neither does any row when the baseline is SUSPECT."""
    roofs = [roof_position(r, ceilings) for r in group]
    suspects = doubts(group, roofs)
    group = [beyond_physics(r, s) for r, s in zip(group, suspects, strict=True)]
    trusted = [r for r in group if r.passed]
    values = speedups(trusted)
    by_key = dict(zip((r.key for r in trusted), values, strict=True))
    cis = dict(zip((r.key for r in trusted), speedup_cis(trusted, values), strict=True))
    launch = launch_bound_warnings(group)
    finished = []
    for index, (result, roof, doubt) in enumerate(zip(group, roofs, suspects, strict=True)):
        warnings = [doubt] if doubt else []
        warnings += measurement_warnings(result)
        cached = physics.cpu_cache_roof(roof.fraction if roof else None, result.mode) \
            if result.correct else None
        if cached:
            warnings.append(cached)
        if index in launch:
            warnings.append(launch[index])
        finished.append(result.with_derived(speedup=by_key.get(result.key),
                                            speedup_ci=cis.get(result.key), roof=roof,
                                            warnings=tuple(warnings)))
    return finished
