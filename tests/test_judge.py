"""The judge (gpubench/run/judge/): outputs cross to it intact, it decides from its own
draw, and its word overrules a worker that reports a pass it did not see. The exploit
suite (tests/adversarial/, exploits_tamper) runs the same boundary end to end."""

from __future__ import annotations

import errno
import json
import os
import time
from dataclasses import replace

import pytest
import torch

from conftest import REPO
from gpubench.records import result as R
from gpubench.records.point import Task
from gpubench.records.shape import Shape
from gpubench.records.worker_result import WorkerResult
from gpubench.run.judge import wire
from gpubench.run.judge.client import JudgeError, RemoteJudge
from gpubench.run.judge.dumpable import prctl_dumpable
from gpubench.run.judge.line import JudgeLine
from gpubench.run.judge.ruling import (
    CHECK,
    FRESH,
    RECHECK,
    JudgeSummary,
    rule,
    task_digest,
    unbound,
)
from gpubench.run.judge.server import JudgeEnds, fork_judge
from gpubench.run.judge.truth import Judge
from gpubench.run.lanes.protocol import send
from gpubench.timing.check_result import CheckResult
from gpubench.timing.measurement import Measurement

SEED = 1234


def task(variant: str = "torch", seed: int = SEED) -> Task:
    return Task(0, "square", str(REPO / "kernels" / "square"), variant, "float32",
                Shape({"n": 4096}), seed)


def drawn(seed: int = SEED) -> torch.Tensor:
    """The square family's input for `seed`, as the worker draws it."""
    judge = Judge("cpu")
    judge.open(task(seed=seed))
    return judge._draw(seed)[0]


# ---------------------------------------------------------------- ruling (pure)


def timed(recheck: dict | None = None) -> WorkerResult:
    cold = Measurement("cold", samples_s=[1e-6] * 5, recheck=recheck)
    return WorkerResult(R.OK, check=CheckResult(True), measurements={"cold": cold})


def test_a_pass_the_judge_saw_stands_with_the_judges_own_check():
    summary = JudgeSummary({CHECK: 1, RECHECK: 8, FRESH: 9}, None, {"passed": True, "by": 1})
    ruled = rule(timed({"passed": True}), summary)
    assert ruled.status == R.OK and ruled.check == {"passed": True, "by": 1}


@pytest.mark.parametrize("summary, words", [
    (None, "gave no verdict"),
    (JudgeSummary({CHECK: 1, RECHECK: 8}, "a recheck output wrong", None, {RECHECK: 1}),
     "found a recheck"),
    (JudgeSummary({CHECK: 1, RECHECK: 8}, "a check output wrong", None, {CHECK: 1}),
     "found a check"),
    (JudgeSummary({RECHECK: 8}, None, None), "checked call reached the judge"),
    (JudgeSummary({CHECK: 1}, None, None), "re-checked output of the timed calls"),
])
def test_a_pass_the_judge_did_not_see_or_refused_is_a_fail(summary, words):
    ruled = rule(timed({"passed": True}), summary)
    assert ruled.status == R.FAIL and words in ruled.error


def test_a_wrong_re_check_the_worker_reports_in_its_mode_is_left_to_the_worker():
    cold = Measurement("cold", samples_s=[1e-6] * 5, recheck=CheckResult(False),
                       recheck_failed=True, error="while timed: timed call 9 differs")
    reported = WorkerResult(R.OK, check=CheckResult(True), measurements={"cold": cold})
    summary = JudgeSummary({CHECK: 1, RECHECK: 3}, "a recheck output wrong", None,
                           {RECHECK: 1})
    assert rule(reported, summary).status == R.OK  # the row FAILs from its measurement


def test_a_result_that_is_not_a_pass_is_left_as_the_worker_said_it():
    failed = WorkerResult(R.FAIL, "output differs from the reference")
    assert rule(failed, None) is failed
    assert rule(replace(failed, status=R.ERROR), None).status == R.ERROR


def test_an_untimed_pass_needs_the_check_only():
    untimed = WorkerResult(R.OK, check=CheckResult(True), untimed="interpreter")
    assert rule(untimed, JudgeSummary({CHECK: 1}, None, None)).status == R.OK


# ---------------------------------------------------------------- binding (pure)


NONCE = "n" * 32


def bound_summary(**changes) -> dict:
    """A clean summary as the judge sends it for task() after a "close" with NONCE."""
    summary = {"roles": {CHECK: 1}, "failure": None, "check": None, "wrong": {},
               "nonce": NONCE, "task": task_digest(task()), "tampering": []}
    return {"summary": {**summary, **changes}}


def test_a_summary_with_the_nonce_and_the_tasks_digest_is_bound_to_the_task():
    assert unbound(bound_summary(), NONCE, task_digest(task())) is None


@pytest.mark.parametrize("message, words", [
    (bound_summary(nonce=None), "not bound to this task (no nonce)"),
    ({"summary": {"roles": {CHECK: 1}, "failure": None}}, "not bound to this task (no nonce)"),
    (bound_summary(nonce="f" * 32), "not bound to this task (wrong nonce)"),
    (bound_summary(task=task_digest(task("cuda"))), "of another task than gpubench opened"),
    (bound_summary(task=None), "the judge loaded no task"),
    ({"type": "garbage", "text": "{"}, "not a judge summary"),
])
def test_anything_else_on_the_report_pipe_is_tampering(message, words):
    why = unbound(message, NONCE, task_digest(task()))
    assert words in why and "something wrote into the judge's pipes" in why


def test_a_task_has_one_digest_across_the_pipe_and_another_task_another():
    sent = task()
    loaded = Task.from_dict(json.loads(json.dumps(sent.to_dict())))
    assert task_digest(loaded) == task_digest(sent)
    assert task_digest(replace(sent, seed=SEED + 1)) != task_digest(sent)


def test_tampering_fails_any_result_and_names_it():
    tampered = JudgeSummary({CHECK: 1, RECHECK: 8}, None, None, tampering=("pipes written",))
    ruled = rule(timed({"passed": True}), tampered)
    assert ruled.status == R.FAIL and ruled.error == "pipes written"
    failed = rule(WorkerResult(R.FAIL, "output differs"), tampered)
    assert failed.status == R.FAIL
    assert failed.error == "pipes written (the worker said fail: output differs)"


# ---------------------------------------------------------------- wire


@pytest.mark.parametrize("tensor", [
    torch.randn(3, 5), torch.randn(4, 6).t(), torch.randn(7).to(torch.bfloat16),
    torch.tensor([True, False, True]), torch.randn(3, dtype=torch.complex64),
    torch.empty(0, 3), torch.tensor(2.5), torch.arange(10, dtype=torch.int64)],
    ids=["f32", "transposed", "bf16", "bool", "complex", "empty", "scalar", "int64"])
def test_a_tensor_crosses_the_shared_buffer_unchanged(tensor):
    sender, receiver = wire.pair()
    out, into = wire.SharedBuffer(), wire.SharedBuffer()
    try:
        specs, nbytes = wire.layout([tensor, 3.0])
        replaced = out.ensure(nbytes)
        wire.write(out.map, [tensor, 3.0], specs)
        wire.send_message(sender, {"tensors": specs}, out.fd if replaced else None)
        message, fd = wire.receive_message(receiver)
        into.adopt(fd)
        got, number = wire.read(into.map, message["tensors"], "cpu")
        assert number is None and got.dtype == tensor.dtype
        assert got.shape == tensor.shape and torch.equal(got, tensor)
    finally:
        out.close()
        into.close()
        sender.close()
        receiver.close()


def test_a_closed_link_is_said_to_be_gone_not_raised_as_an_os_error():
    sender, receiver = wire.pair()
    receiver.close()
    with pytest.raises(wire.JudgeGone):
        wire.send_message(sender, {"role": CHECK})
    sender.close()


# ---------------------------------------------------------------- the judge process


@pytest.fixture
def forked():
    """A judge forked from this process as a worker forks it, and the worker's link."""
    line = JudgeLine()
    ends = line.ends
    pid = fork_judge(ends, "cpu")
    link = RemoteJudge(ends.worker_socket, "cpu")
    line.ends = JudgeEnds(-1, -1, -1, -1)  # the parent's copies: closed by fork_judge
    yield line, link, pid
    link.sock.close()
    line.close()
    os.waitpid(pid, 0)


def test_the_judge_decides_from_its_own_draw_and_tells_the_parent_what_it_saw(forked):
    line, link, _ = forked
    line.open(task())
    truth = drawn()
    assert link.check(CHECK, SEED, truth * truth).passed
    assert not link.check(RECHECK, SEED, torch.zeros_like(truth)).passed
    assert link.mutated(SEED, (truth,)) == []
    assert link.mutated(SEED, (truth + 1,)) != []
    summary = line.summary()
    assert summary.roles == {CHECK: 1, RECHECK: 1, "inputs": 2}
    assert summary.wrong == {RECHECK: 1, "inputs": 1}
    assert "recheck output wrong" in summary.failure and summary.check.passed


def test_a_modes_re_checks_are_tallied_as_one_request_and_fail_it_once(forked):
    line, link, _ = forked
    line.open(task())
    truth = drawn()
    right, wrong = truth * truth, torch.zeros(4096)
    results = link.check_all(RECHECK, [(SEED, right), (SEED, wrong), (SEED, wrong)])
    assert [r.passed for r in results] == [True, False, False]
    summary = line.summary()
    assert summary.roles == {RECHECK: 1} and summary.wrong == {RECHECK: 1}


def test_each_task_is_tallied_alone(forked):
    line, link, _ = forked
    line.open(task())
    link.check(CHECK, SEED, torch.zeros(4096))
    assert line.summary().failure
    line.open(task("cuda"))
    truth = drawn()
    link.check(CHECK, SEED, truth * truth)
    summary = line.summary()
    assert summary.task == task_digest(task("cuda")) and summary.nonce
    assert replace(summary, nonce=None, task=None) == JudgeSummary({CHECK: 1}, None,
                                                                   line_check(truth), {})


def line_check(truth: torch.Tensor) -> CheckResult:
    judge = Judge("cpu")
    judge.open(task())
    return judge.check(CHECK, SEED, truth * truth)


def test_a_killed_judge_gives_the_parent_no_summary_and_the_worker_an_error(forked):
    line, link, pid = forked
    line.open(task())
    os.kill(pid, 9)
    time.sleep(0.2)
    with pytest.raises(JudgeError, match="gone"):
        link.check(CHECK, SEED, torch.zeros(4096))
    assert line.summary(timeout_s=5) is None


def test_a_request_it_cannot_decide_is_an_error_for_the_worker_and_a_refusal_for_the_parent(
        forked):
    line, link, _ = forked
    line.open(task())
    with pytest.raises(JudgeError, match="could not decide"):
        link._ask({"role": CHECK, "seed": "not a seed"}, [torch.zeros(4096)])
    assert "could not decide" in line.summary().failure


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_a_gpu_output_crosses_to_the_judges_device_unchanged():
    tensor = torch.randn(1 << 20, device="cuda").to(torch.bfloat16)
    buffer = wire.SharedBuffer(pinned=True)
    try:
        specs, nbytes = wire.layout([tensor])
        buffer.ensure(nbytes)
        wire.write(buffer.map, [tensor], specs)
        (got,) = wire.read(buffer.map, specs, "cuda")
        assert buffer._anchor is not None  # page-locked for the copy engines
        assert got.device.type == "cuda" and torch.equal(got, tensor)
    finally:
        buffer.close()


def test_without_a_shared_buffer_the_bytes_go_inline_and_are_judged_the_same(forked,
                                                                             monkeypatch):
    """Under `ulimit -f` no memfd of an output's size can be made (EFBIG)."""
    line, link, _ = forked

    def too_large(nbytes):
        raise OSError(27, "File too large")

    monkeypatch.setattr(link.buffer, "ensure", too_large)
    line.open(task())
    truth = drawn()
    assert link.check(CHECK, SEED, truth * truth).passed
    assert not link.check(CHECK, SEED, truth).passed
    assert line.summary().roles == {CHECK: 2}


def test_a_digest_is_the_same_for_the_same_bits_and_changes_with_any_write():
    x = torch.randn(1000)
    x[3] = float("nan")
    same = x.clone()
    assert wire.digest(x) == wire.digest(same)  # NaN included: bits, not values
    for change in (lambda t: t.__setitem__(999, 0.5), lambda t: t.__setitem__(0, -t[0]),
                   lambda t: t.copy_(t.flip(0))):
        other = x.clone()
        change(other)
        assert wire.digest(other) != wire.digest(x)
    assert wire.digest(x.reshape(10, 100)) != wire.digest(x)
    flags = torch.ones(3, dtype=torch.bool)
    assert wire.digest(flags) != wire.digest(~flags)
    assert wire.digest(2.5) is None


def test_a_copy_a_variant_forked_ends_before_it_speaks_to_the_judge(forked):
    """A variant's fork() returns into gpubench's code in the copy, which shares the
    judge's socket: had it asked, its answer could reach the worker (a CI run's
    'KeyError: mutated'). The copy ends at its first request; replies name their request."""
    line, link, _ = forked
    line.open(task())
    truth = drawn()
    pid = os.fork()
    if pid == 0:  # the copy
        link.check(CHECK, SEED, torch.zeros(4096))
        os._exit(3)  # not reached: the request ends the copy with status 0
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert link.check(CHECK, SEED, truth * truth).passed
    assert line.summary().roles == {CHECK: 1}  # the copy's request never reached it


# ---------------------------------------------------------------- what only gpubench says


def test_a_second_open_during_a_task_is_refused_and_the_summary_says_so(forked):
    """A variant's "open" (issue 60: a family copy whose reference is zeros) leaves the
    judge on the task gpubench opened."""
    line, link, _ = forked
    line.open(task())
    other = Task(0, "square", str(REPO / "kernels" / "square"), "torch", "float32",
                 Shape({"n": 1024}), SEED)
    send(line.control, {"open": other.to_dict()})
    truth = drawn()
    assert link.check(CHECK, SEED, truth * truth).passed  # against the first task's draw
    summary = line.summary()
    assert summary.task == task_digest(task()) and summary.roles == {CHECK: 1}
    assert any("a second 'open' reached the judge" in why for why in summary.tampering)
    assert rule(WorkerResult(R.OK, check=CheckResult(True)), summary).status == R.FAIL


def test_a_close_without_the_nonce_is_not_answered_and_the_summary_says_so(forked):
    line, link, _ = forked
    line.open(task())
    send(line.control, {"close": True})
    truth = drawn()
    assert link.check(CHECK, SEED, truth * truth).passed  # the task is still open
    summary = line.summary()  # the first answer on the pipe: the judge's to gpubench's close
    assert summary.nonce and summary.roles == {CHECK: 1}
    assert any("a 'close' without gpubench's nonce" in why for why in summary.tampering)


def test_a_close_with_a_made_up_nonce_leaves_gpubench_an_answer_it_did_not_ask_for(forked):
    line, _, _ = forked
    line.open(task())
    send(line.control, {"close": {"nonce": "f" * 32}})
    summary = line.summary()
    assert "not bound to this task (wrong nonce)" in summary.tampering[0]
    assert line.broken  # spent: the lane replaces the worker and its judge


def test_a_summary_forged_ahead_of_the_judges_is_tampering(forked):
    """Issue 60's forged summary: written into the report pipe through a new end of it
    (this process's own /proc/self/fd, as a variant opens gpubench's)."""
    line, _, _ = forked
    line.open(task())
    clean = {"roles": {CHECK: 1, RECHECK: 8}, "failure": None, "wrong": {},
             "check": {"passed": True}}
    forger = os.open(f"/proc/self/fd/{line.reports}", os.O_WRONLY)
    send(forger, {"summary": clean})
    os.close(forger)
    summary = line.summary()
    assert summary.tampering == ("a judge summary not bound to this task (no nonce) reached "
                                 "gpubench: something wrote into the judge's pipes",)
    assert rule(timed({"passed": True}), summary).status == R.FAIL


# ---------------------------------------------------------------- non-dumpable


def in_a_child(body) -> int:
    """Run `body()` in a forked child and return its exit status (its return value)."""
    pid = os.fork()
    if pid == 0:
        status = 99
        try:
            status = body()
        finally:
            os._exit(status)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


def test_starting_a_worker_makes_gpubench_non_dumpable(tmp_path, monkeypatch):
    """In a child, so that this process keeps its own flag."""
    from gpubench.run.lanes import worker_process

    def no_worker(*args, **kwargs):
        raise RuntimeError("no worker in this test")

    def start() -> int:
        prctl_dumpable(1)
        monkeypatch.setattr(worker_process.subprocess, "Popen", no_worker)
        with pytest.raises(RuntimeError):
            worker_process.WorkerProcess("cpu", tmp_path / "worker.log").start()
        return prctl_dumpable()

    if prctl_dumpable() is None:
        pytest.skip("no prctl here")
    assert in_a_child(start) == 0


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to become another user")
def test_a_non_dumpable_process_keeps_its_pipes_from_processes_of_its_user():
    """A child that is `nobody` holds a pipe; its own child (the same user, as a worker is
    gpubench's) opens the pipe through /proc/<child>/fd while the child is dumpable, and is
    refused once it is not."""
    def holder() -> int:
        prctl_dumpable()  # ctypes imported while this user may still read the venv
        os.setgroups([])
        os.setgid(65534)
        os.setuid(65534)
        _, write = os.pipe()  # nobody's: a pipe's inode is its maker's, mode 0600
        path = f"/proc/{os.getpid()}/fd/{write}"
        refused = []
        for flag in (1, 0):
            prctl_dumpable(flag)
            refused.append(in_a_child(lambda: _open_errno(path)))
        if refused[0]:
            return 1
        return 0 if refused[1] in (errno.EACCES, errno.EPERM) else 2

    status = in_a_child(holder)
    assert status != 1, "dumpable, the pipe did not open: the test proves nothing here"
    assert status == 0, "non-dumpable, the pipe opened for another process of its user"


def _open_errno(path: str) -> int:
    """0 when `path` opens for writing, else the errno."""
    try:
        os.close(os.open(path, os.O_WRONLY))
    except OSError as error:
        return error.errno or 98
    return 0
