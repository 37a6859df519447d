"""Why a kernel's time changed: BASE's and NEW's ncu counters, each given its share of the
duration change (`ab --explain`). Pure: two KernelProfiles in, a KernelChange out.

The ranking rests on an identity ncu's own counters satisfy, per warp scheduler (SMSP):

    active cycles = instructions x warp cycles per issued instruction / active warps
    duration      = active cycles / (active share of elapsed cycles) / clock

(On the recorded H200 square kernel: 16,880 instructions a scheduler x 61.84 / 11.12 warps
= 93,897 cycles, against ncu's 93,942.) Taking logs, log(NEW/BASE) of the duration is the
sum of each factor's log-ratio, so each factor gets the share of NEW - BASE that its own
log-ratio is of the total: instructions executed, warp cycles per issued instruction (split
further by stall reason), achieved occupancy (active warps), the SMs' busy share (tail
and launch gaps), the clock, and what the identity leaves over. The factors that moved the
time the way it went come first, largest share first; those that offset it follow. A
percent change alone would
rank a 40% drop in a hit rate that costs nothing above a 3% rise in instructions that costs
everything; this ranks by time.

A factor's causes are shown beside it with its share: registers per thread, when they
limit occupancy and changed, and theoretical occupancy, after achieved occupancy. Counters
outside the identity (DRAM bytes, hit rates, launch shape) follow unranked by time, by how
much they moved.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from gpubench.records.kernel_change import CounterChange, KernelChange
from gpubench.tools.ncu import metrics as M
from gpubench.tools.ncu.kernel_profile import KernelProfile
from gpubench.tools.ncu.metrics import to_float

# A log-ratio under this (0.1%) is no change: ncu's counters of one kernel repeat to ~0.1%
# run to run, and a share split over a near-zero total would be noise magnified.
NO_CHANGE = 1e-3
# Stall reasons shown under warp cycles per issued instruction: the three that moved most.
TOP_STALLS = 3
# Context counters (no time share) shown only where they moved by more than this.
CONTEXT_CHANGE = 0.02


def kernel_change(base: KernelProfile, new: KernelProfile, variant: str, dtype: str,
                  shape: str) -> KernelChange:
    """NEW's main kernel against BASE's: counters ranked by share of the duration change."""
    b, n = _values(base), _values(new)
    base_ns, new_ns = base.duration_ns or math.nan, new.duration_ns or math.nan
    delta = new_ns - base_ns
    total = _log_ratio(base_ns, new_ns)
    terms = _terms(b, n)
    explained = sum(sign * log for *_, sign, log in terms if log is not None)
    counters: list[tuple[float, list[CounterChange]]] = []
    for name, unit, key, sign, log in terms:
        if log is None:
            continue
        share = _share(sign * log, total, delta, base_ns)
        rows = [CounterChange(name, unit, b.get(key), n.get(key), share)]
        rows += _causes(name, b, n, share, base, new)
        if key == M.WARP_CYCLES_PER_ISSUE:
            rows += _stalls(b, n, share)
        counters.append((0.0 if math.isnan(share) else abs(share), rows))
    if total is not None and abs(total - explained) > NO_CHANGE:
        rest = _share(total - explained, total, delta, base_ns)
        counters.append((abs(rest), [CounterChange("not in the identity (launch, averaging)",
                                                   "", None, None, rest)]))
    counters.sort(key=lambda c: (not _toward(c[1][0].share_ns, delta), -c[0]))
    ranked = [row for _, rows in counters for row in rows]
    return KernelChange(variant, dtype, shape, new.base_name or new.name, base_ns, new_ns,
                        tuple(ranked + _context(base, new)), *_hints(base, new))


def _toward(share: float | None, delta_ns: float) -> bool:
    """Whether a factor moved the time the way it went (a positive share of a slowdown):
    those rank first. In a latency-bound kernel the factors pull both ways at once: a
    quarter of the warps (+3.2 ms) left each warp's loads less contention, so its cycles
    per issued instruction fell (-4.0 ms), and the +0.66 ms slowdown is their difference;
    by size alone the offsetting fall would head the table of a slowdown."""
    return share is not None and not math.isnan(share) and (share > 0) == (delta_ns > 0)


def _values(profile: KernelProfile) -> dict[str, float]:
    raw = {k: to_float(v) for k, v in profile.raw_metrics.items()}
    values = {k: v for k, v in raw.items() if v is not None}
    active, elapsed = values.get(M.SMSP_ACTIVE_CYCLES), values.get(M.SMSP_ELAPSED_CYCLES)
    if active and elapsed:
        values["busy_share"] = 100.0 * active / elapsed
    occupancy = profile.metrics.get("achieved_occupancy_pct")
    if occupancy is not None:
        values["achieved_occupancy_pct"] = occupancy
    return values


# (shown name, unit, metric, sign): duration goes with instructions and cycles per issue,
# against active warps, busy share and clock. Occupancy is shown as ncu's percent; its
# log-ratio is the active warps' (the same ratio: warps / the scheduler's maximum).
_IDENTITY = (
    ("instructions executed", "inst", M.INSTRUCTIONS, 1),
    ("warp cycles per issued instruction", "cycles", M.WARP_CYCLES_PER_ISSUE, 1),
    ("achieved occupancy", "%", M.ACTIVE_WARPS, -1),
    ("SM busy share of elapsed cycles", "%", "busy_share", -1),
    ("SM clock", "Hz", M.SMSP_HZ, -1),
)


def _terms(b: Mapping[str, float], n: Mapping[str, float]) -> list[tuple]:
    """(name, unit, shown key, sign, log-ratio or None) for each factor of the identity."""
    terms = []
    for name, unit, key, sign in _IDENTITY:
        log = _log_ratio(b.get(key), n.get(key))
        shown = "achieved_occupancy_pct" if key == M.ACTIVE_WARPS and \
            "achieved_occupancy_pct" in b else key
        terms.append((name, unit, shown, sign, log))
    return terms


def _causes(name: str, b, n, share: float, base: KernelProfile,
            new: KernelProfile) -> list[CounterChange]:
    """Beside achieved occupancy: theoretical occupancy, and registers per thread where
    registers limit the blocks an SM holds (ncu's occupancy limit) on either side."""
    if name != "achieved occupancy":
        return []
    rows = []
    theory_b = base.metrics.get("theoretical_occupancy_pct")
    theory_n = new.metrics.get("theoretical_occupancy_pct")
    if _moved(theory_b, theory_n):
        rows.append(CounterChange("theoretical occupancy", "%", theory_b, theory_n, share,
                                  via="achieved occupancy"))
    regs_b, regs_n = base.registers_per_thread, new.registers_per_thread
    if regs_b != regs_n and regs_b is not None and regs_n is not None:
        limiting = any(_register_bound(v) for v in (b, n))
        rows.append(CounterChange("registers per thread", "regs", float(regs_b), float(regs_n),
                                  share if limiting else None,
                                  via="achieved occupancy" if limiting else ""))
    return rows


def _register_bound(values: Mapping[str, float]) -> bool:
    """Registers allow no more blocks per SM than any other limit (warps, blocks, shared)."""
    limit = values.get(M.REGISTER_LIMIT)
    others = [values.get(f"launch__occupancy_limit_{k}") for k in ("warps", "blocks",
                                                                   "shared_mem")]
    known = [v for v in others if v is not None]
    return limit is not None and (not known or limit <= min(known))


def _stalls(b, n, share: float) -> list[CounterChange]:
    """The stall reasons behind warp cycles per issued instruction that moved most, each
    with the part of that factor's share its own change is of the reasons' total change."""
    moves = []
    for reason in M.STALL_REASONS:
        key = M.STALL_RATIO.format(reason)
        if key in b and key in n:
            moves.append((reason, b[key], n[key], n[key] - b[key]))
    total = sum(d for *_, d in moves)
    sum_b = sum(v for _, v, _, _ in moves)
    split = sum_b > 0 and abs(total) > NO_CHANGE * sum_b
    moves.sort(key=lambda m: -abs(m[3]))
    return [CounterChange(f"stall: {reason.replace('_', ' ')}", "cycles", old, new_value,
                          share * d / total if split else None,
                          within="warp cycles per issued instruction")
            for reason, old, new_value, d in moves[:TOP_STALLS] if d != 0]


# (shown name, unit, where): counters outside the identity, for context.
_CONTEXT = (
    ("DRAM bytes", "B", "dram_bytes"),
    ("L2 hit rate", "%", "l2_hit_rate_pct"),
    ("L1/TEX hit rate", "%", "l1_hit_rate_pct"),
    ("DRAM throughput", "%", "dram_throughput_pct"),
    ("compute (SM) throughput", "%", "compute_throughput_pct"),
    ("waves per SM", "", "waves_per_sm"),
)


def _context(base: KernelProfile, new: KernelProfile) -> list[CounterChange]:
    rows = [CounterChange(name, unit, base.metrics.get(key), new.metrics.get(key))
            for name, unit, key in _CONTEXT if _moved(base.metrics.get(key),
                                                      new.metrics.get(key))]
    if base.block != new.block and base.block and new.block:
        rows.append(CounterChange("threads per block", "", float(math.prod(base.block)),
                                  float(math.prod(new.block))))
    return sorted(rows, key=lambda r: -abs(r.change or 0.0))


def _hints(base: KernelProfile, new: KernelProfile) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """ncu's hints (OPT, WRN) NEW has and BASE lacks, and those BASE had and NEW lacks."""
    def headings(profile: KernelProfile) -> dict[str, None]:
        return dict.fromkeys(h.heading for h in profile.hints())

    old, now = headings(base), headings(new)
    return (tuple(h for h in now if h not in old), tuple(h for h in old if h not in now))


def _log_ratio(base: float | None, new: float | None) -> float | None:
    if base is None or new is None or base <= 0 or new <= 0 or \
            math.isnan(base) or math.isnan(new):
        return None
    return math.log(new / base)


def _share(log: float, total: float | None, delta_ns: float, base_ns: float) -> float:
    """The part of the duration change (ns) a factor's log-ratio accounts for: its fraction
    of the total log-ratio, or, where the total is ~0, what it alone would change."""
    if total is not None and abs(total) > NO_CHANGE:
        return delta_ns * log / total
    return base_ns * (math.exp(log) - 1.0) if not math.isnan(base_ns) else math.nan


def _moved(base: float | None, new: float | None) -> bool:
    if base is None or new is None:
        return False
    if base == 0:
        return new != 0
    return abs(new / base - 1.0) > CONTEXT_CHANGE
