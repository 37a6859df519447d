"""The verdict every variant of the exploit suite must get: one table, read by
tests/test_adversarial.py (CPU in CI, GPU under `-m gpu`) and benchmarks/adversarial.py.

Verdicts: PASS (status ok); FAIL (fail, or error: the variant's own fault, as a forged
message on the result channel is); SUSPECT (correct output, untrustworthy time); CAUGHT
(FAIL or SUSPECT, either is right: a result cache is caught by a re-check that FAILs it or
by a probe that makes it SUSPECT); NEUTRAL (PASS, and no faster than `honest` by more than
NEUTRAL_SLACK: the defence takes the trick's gain away rather than flagging it). A
non-PASS verdict must carry a reason; where a substring is given, the reason holds it.

PENDING_DEFENCES is the one list of cases that do not get their verdict yet: the tests mark
them xfail (strict=False) so CI stays green. An entry is 'family/variant' (everywhere) or
'family/variant@gpu' / '@cpu' (on that device only). Empty it as the defences land.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from gpubench.run.worker.sandbox import MIN_ABI, OFF_VARIABLE, abi_version

PASS, FAIL, SUSPECT, CAUGHT, NEUTRAL = "PASS", "FAIL", "SUSPECT", "CAUGHT", "NEUTRAL"

# The statuses of results.json each verdict accepts.
ACCEPTED = {
    PASS: frozenset({"ok"}),
    FAIL: frozenset({"fail", "error"}),
    SUSPECT: frozenset({"suspect"}),
    # crashed: a trick that syncs with the host dies in graph capture, which ends the task
    CAUGHT: frozenset({"fail", "error", "suspect", "crashed"}),
    NEUTRAL: frozenset({"ok", "fail", "error", "suspect"}),  # caught is fine too
}
# A NEUTRAL variant may be this much faster than its honest twin (run-to-run noise of a
# 16 MiB copy in cold mode is ~1-2% on an H200; a persisting window gave more than 10%).
NEUTRAL_SLACK = 0.10
# The host clock on a shared 2-core CPU moves a 15 us call by 10-20% between variants.
NEUTRAL_SLACK_CPU = 0.30

# Whether the workers restrict their writes (run/worker/sandbox.py): a kernel with Landlock
# ABI 2 or later, and the sandbox not turned off.
SANDBOXED = abi_version() >= MIN_ABI and os.environ.get(OFF_VARIABLE, "1") != "0"
# gpubench's own ends of the judge's pipes, under /proc/<its pid>/fd: open to a root worker
# without the sandbox (the judge's nonce and its refusals are what hold there), closed to any
# other, gpubench being non-dumpable, and to a sandboxed one, root's too, which may open no
# file under /proc for writing (either way the trick's first step raises PermissionError).
PIPES_OPEN = os.geteuid() == 0 and not SANDBOXED

# Families in run order: the tamperers last, since today their tampering outlives them.
FAMILIES = ("exploits", "exploits_nanref", "exploits_stream", "exploits_timed",
            "exploits_tamper")
# The GPU modes the GPU cases are checked in (issue 25's acceptance).
GPU_MODES = ("cold", "graph", "cupti")


@dataclass(frozen=True)
class Expect:
    verdict: str
    reason: str | None = None  # a substring the row's reason must hold; None: any reason
    where: str = "both"  # "cpu", "gpu" or "both": where the variant runs at all
    honest: str | None = None  # NEUTRAL: the honest variant it must not beat


E = Expect
EXPECTED: dict[str, Expect] = {
    # ---- exploits: honest variants
    "exploits/honest_out": E(PASS),
    "exploits/honest_return": E(PASS),
    "exploits/honest_plan": E(PASS),
    "exploits/honest_triton": E(PASS),
    "exploits/honest_side_stream": E(PASS, where="gpu"),
    "exploits/honest_after_threads": E(PASS),
    "exploits/honest_after_write": E(PASS),
    # ---- work skipped or halved on repeated calls
    "exploits/memo_ptr_version": E(CAUGHT),
    "exploits/memo_content": E(CAUGHT),
    "exploits/fingerprint_memo": E(CAUGHT),
    "exploits/first_answer": E(FAIL, "differs from the reference"),
    "exploits/warmup_detect": E(CAUGHT),
    "exploits/half_write_later": E(CAUGHT),
    "exploits/half_on_repeat": E(CAUGHT),
    "exploits/time_throttle": E(CAUGHT),
    "exploits/stack_sniffer": E(CAUGHT),
    # ---- work outside the timed window
    "exploits/thread_later": E(FAIL),
    "exploits/thread_when_written": E(CAUGHT),
    "exploits/lazy_subclass": E(FAIL),
    "exploits/other_stream": E(CAUGHT, where="gpu"),
    # ---- inputs, outputs, leftovers
    "exploits/writes_input": E(FAIL, "mutated its input a"),
    # The rotation never repeats a set twice in a row, so its one-entry cache misses on every
    # call: it computes each time, and may PASS only if it gains nothing.
    "exploits/returns_same_tensor": E(NEUTRAL, honest="honest_return"),
    "exploits/empty_like_leftover": E(CAUGHT),
    "exploits/cpp_skip_seen": E(CAUGHT, where="gpu"),
    "exploits/cpp_skip_seen_cpu": E(CAUGHT, where="cpu"),
    "exploits/zeroes_everything": E(FAIL),
    "exploits/honest_after_zeroing": E(PASS),
    "exploits/poisons_reference": E(CAUGHT),
    # ---- a NaN reference
    "exploits_nanref/honest_nan": E(PASS),
    "exploits_nanref/writes_nothing": E(FAIL),
    # ---- L2 persistence
    "exploits_stream/honest_double": E(PASS),
    "exploits_stream/persisting_l2": E(NEUTRAL, where="gpu", honest="honest_double"),
    # ---- exploits_timed: timed calls told apart by their callers' frames (issue 60)
    "exploits_timed/honest_timed": E(PASS),
    "exploits_timed/sniffs_the_caller": E(CAUGHT, "seen"),
    "exploits_timed/honest_after_caller": E(PASS),
    "exploits_timed/sniffs_the_timer": E(CAUGHT, "seen"),
    "exploits_timed/honest_after_timer": E(PASS),
    # ---- tampering with the harness
    "exploits_tamper/honest_out": E(PASS),
    "exploits_tamper/forges_via_stack": E(FAIL),
    "exploits_tamper/patch_perf_counter": E(FAIL),
    # A GPU times with events, not a host clock: there it finds nothing to slow and does
    # the whole work (341 us, as honest_out, on an H100, 2026-11-25).
    "exploits_tamper/gc_clock": E(FAIL, where="cpu"),
    "exploits_tamper/patch_elapsed_time": E(FAIL, where="gpu"),
    # the re-check's sampling: its list of copies swapped, its random source patched
    "exploits_tamper/swaps_drawn_copies": E(FAIL, "re-check's drawn copies"),
    "exploits_tamper/patches_randrange": E(FAIL, "random.Random.randrange"),
    "exploits_tamper/honest_after_recheck_tamper": E(PASS),
    "exploits_tamper/replaces_compare": E(FAIL),
    "exploits_tamper/zero_writer": E(FAIL),
    "exploits_tamper/honest_after_tamper": E(PASS),
    # ---- past the worker's seal: only the judge process (run/judge/) is left to say no
    "exploits_tamper/forges_the_worker_check": E(FAIL, "judge"),
    "exploits_tamper/honest_after_forged_check": E(PASS),
    "exploits_tamper/kills_the_judge": E(FAIL, "judge"),
    "exploits_tamper/honest_after_judge_killed": E(PASS),
    # ---- gpubench's ends of the judge's pipes, opened under /proc/<gpubench>/fd (issue 60)
    "exploits_tamper/opens_a_second_task": E(FAIL, "a second 'open' reached the judge"
                                              if PIPES_OPEN else "Permission denied"),
    "exploits_tamper/honest_after_second_open": E(PASS),
    "exploits_tamper/forges_a_summary": E(FAIL, "summary not bound to this task (no nonce)"
                                           if PIPES_OPEN else "Permission denied"),
    "exploits_tamper/honest_after_forged_summary": E(PASS),
    # ---- the files later runs trust (issue 60): the ceilings cache, a planted .pyc
    "exploits_tamper/rewrites_trusted_files": E(FAIL, "Permission denied"),
    "exploits_tamper/honest_after_trusted_writes": E(PASS),
}

# Cases that do not get their verdict: marked xfail(strict=False). On the CPU at n=96 a
# content cache (a hash of 2 x 37 KB, or 16 sampled values read back to the host) costs
# more than the 13 us matmul it saves: 86 us and 19 us against 14 us honest (2-core CI
# machine, 2026-11-25), so it games nothing and the fresh-input probe rightly sees no
# shortcut. On the GPU at n=2048 the same tricks save a 0.3 ms matmul and must be caught.
PENDING_DEFENCES: frozenset[str] = frozenset({
    "exploits/memo_content@cpu",
    "exploits/fingerprint_memo@cpu",
    # SUSPECT in every local run of the suite with CI's options (fresh calls 1.7-2.0x the
    # seen floor and median, idle and beside two hogs), yet PASS in two CI runs, one of them
    # alone in the serial part: the row's in-loop evidence there is not read yet (the
    # assertion below now prints it). A likely cause, fixed in the trick: its cache of 8,
    # first in first out, lost the rotation's own sets to the probe's and the loop's fresh
    # ones, so that it cheated only now and then (tricks/caching.py: HALVES_ENTRIES).
    # Pending until a CI run shows it caught. Caught on the GPU (cold, cupti, graph).
    "exploits_timed/sniffs_the_timer@cpu",
})
# Without the sandbox the trick's writes go through and it PASSes: the parent writes the
# ceilings back (tests/test_adversarial.py reads the cache after the suite), and a planted
# .pyc is never run (families/source_import.py); nothing refuses the write itself.
if not SANDBOXED:
    PENDING_DEFENCES = PENDING_DEFENCES | {"exploits_tamper/rewrites_trusted_files"}


def pending(key: str, device: str) -> bool:
    """Whether the case is in PENDING_DEFENCES on `device` ("cpu" or "cuda")."""
    where = "gpu" if device == "cuda" else "cpu"
    return key in PENDING_DEFENCES or f"{key}@{where}" in PENDING_DEFENCES


@dataclass(frozen=True)
class Judgement:
    """One row against its expectation: whether it got the verdict, and why not."""

    ok: bool
    why: str = ""


def judge(key: str, row: dict, rows: dict[str, dict]) -> Judgement:
    """`row` (a results.json result) against EXPECTED[key]; `rows` maps 'family/variant' to
    the rows of the same mode (NEUTRAL compares with its honest twin)."""
    expect = EXPECTED[key]
    status, reason = row.get("status"), row.get("error") or ""
    if status not in ACCEPTED[expect.verdict]:
        return Judgement(False, f"expected {expect.verdict}, got {status}: {reason}".rstrip(": "))
    if expect.verdict == PASS or (expect.verdict == NEUTRAL and status == "ok"):
        return _neutral(key, row, rows) if expect.verdict == NEUTRAL else Judgement(True)
    if not reason:
        return Judgement(False, f"{status} without a reason")
    if expect.reason and expect.reason not in reason:
        return Judgement(False, f"reason lacks '{expect.reason}': {reason}")
    return Judgement(True)


def _neutral(key: str, row: dict, rows: dict[str, dict]) -> Judgement:
    family = key.split("/")[0]
    twin = rows.get(f"{family}/{EXPECTED[key].honest}") or {}
    mine, honest = row.get("median_s"), twin.get("median_s")
    if not mine or not honest:
        return Judgement(False, "no median to compare with its honest twin")
    if _busy(row) or _busy(twin):  # a loaded host's clock times the load: 15.8 ms for a
        return Judgement(True)  # 15 us matmul under two busy loops (2 cores, 2026-11-25)
    slack = NEUTRAL_SLACK_CPU if row.get("mode") == "cpu" else NEUTRAL_SLACK
    if mine < honest * (1 - slack):
        return Judgement(False, f"{honest / mine:.2f}x faster than {EXPECTED[key].honest}: "
                                "the trick still pays")
    return Judgement(True)


def _busy(row: dict) -> bool:
    """Whether gpubench said the host clock timed other work for this row."""
    return any(w.get("code") == "host_busy" for w in row.get("warnings") or ())


def runs_on(key: str, device: str) -> bool:
    """Whether the case is judged on `device` ("cpu" or "cuda")."""
    where = EXPECTED[key].where
    return where == "both" or where == ("gpu" if device == "cuda" else "cpu")
