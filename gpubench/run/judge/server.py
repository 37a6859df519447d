"""The judge process: forked from the worker before any variant code runs, then serving
the parent's control pipe (open a task, close it and say what was seen) and the worker's
requests (is this output right? are these inputs still as drawn?).

The fork comes before anything a variant could have touched: on a CPU right after torch's
import (the judge then costs no import of its own), on a GPU before the CUDA driver starts
(a forked child cannot use its parent's CUDA context; the judge makes its own). The child
drops the worker's descriptors, makes itself non-dumpable (no ptrace, no /proc/PID/mem
from processes of the same user: dumpable.py), imports the family itself, and exits when
the parent closes the control pipe.

Only gpubench writes to the control pipe, so the judge holds one task at a time: a second
"open" before the task's "close" is refused (the first task stays), and a "close" without
the parent's nonce is not answered; each is noted as tampering in the task's summary, which
echoes the nonce and the loaded task's digest (ruling.py says how the parent reads it).
"""

from __future__ import annotations

import contextlib
import os
import select
import sys
import traceback
from dataclasses import dataclass, replace

from gpubench.records.point import Task
from gpubench.run.judge import wire
from gpubench.run.judge.dumpable import prctl_dumpable
from gpubench.run.judge.ruling import INPUTS, PIPES, task_digest
from gpubench.run.lanes.protocol import LineReader, send

# What the judge notes when its control pipe says what gpubench never says.
SECOND_OPEN = f"a second 'open' reached the judge during the task: {PIPES}"
NONCELESS_CLOSE = f"a 'close' without gpubench's nonce reached the judge: {PIPES}"
FOREIGN_ORDER = f"a message gpubench does not send reached the judge: {PIPES}"


@dataclass(frozen=True)
class JudgeEnds:
    """The descriptors a worker is given for its judge: the judge's (control from the
    parent, reports to the parent, its socket end) and the worker's socket end."""

    control: int
    report: int
    judge_socket: int
    worker_socket: int

    def to_arg(self) -> str:
        return f"{self.control},{self.report},{self.judge_socket},{self.worker_socket}"

    @classmethod
    def from_arg(cls, text: str) -> JudgeEnds:
        return cls(*(int(part) for part in text.split(",")))


def fork_judge(ends: JudgeEnds, device: str) -> int:
    """Fork the judge; returns its pid, having closed the judge's descriptors here."""
    pid = os.fork()
    if pid == 0:  # the judge: never returns into the worker's code
        status = 1
        try:
            status = _become_judge(ends, device)
        except BaseException:  # the child must end here, whatever happened
            with contextlib.suppress(Exception):
                traceback.print_exc()
        finally:
            os._exit(status)
    for fd in (ends.control, ends.report, ends.judge_socket):
        os.close(fd)
    return pid


def _become_judge(ends: JudgeEnds, device: str) -> int:
    _drop_worker_descriptors(ends)
    prctl_dumpable(0)
    import socket

    sock = socket.socket(fileno=ends.judge_socket)
    return serve(ends.control, ends.report, sock, device)


def _drop_worker_descriptors(ends: JudgeEnds) -> None:
    """Close the worker's own ends (its socket end, its task pipe on stdin, its message
    channel): the judge holds only its own, so the worker's death shows as EOF."""
    keep = {1, 2, ends.control, ends.report, ends.judge_socket}
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    for name in os.listdir("/proc/self/fd"):
        fd = int(name)
        if fd > 2 and fd not in keep:
            with contextlib.suppress(OSError):
                os.close(fd)


def serve(control: int, report: int, sock, device: str) -> int:
    """Answer the parent and the worker until the parent closes the control pipe."""
    from gpubench.run.judge.truth import Judge

    _ready(device)
    judge, parent = Judge(device), LineReader(control)
    desk = Desk(judge, report)
    buffer = wire.SharedBuffer(pinned=device == "cuda")
    _log(f"pid {os.getpid()} serving ({device})")
    watched = [control, sock.fileno()]
    while True:
        message = parent.pop()
        if message is not None:
            desk.take(message)
            continue
        if parent.closed:
            return 0
        ready, _, _ = select.select(watched, [], [])
        if control in ready:
            parent.feed()
        elif sock.fileno() in ready and not _answer(judge, sock, buffer, device):
            watched = [control]  # the worker is gone: wait for the parent's word


class Desk:
    """The judge's side of the control pipe: one task open at a time, and each summary
    bound to the "close" that asked for it (its nonce, the loaded task's digest)."""

    def __init__(self, judge, report: int):
        self.judge, self.report = judge, report
        self.digest: str | None = None  # the task open now (None: none is)
        self.tampering: list[str] = []  # for the next summary

    def take(self, message: dict) -> None:
        if "open" in message:
            self._open(message["open"])
        elif "close" in message:
            self._close(message["close"])
        else:
            self._note(FOREIGN_ORDER)

    def _open(self, data) -> None:
        if self.digest is not None:  # the first task stays: its check must not move
            self._note(SECOND_OPEN)
            return
        try:
            task = Task.from_dict(data)
        except (TypeError, ValueError):
            self._note(FOREIGN_ORDER)
            return
        self.judge.open(task)
        self.digest = task_digest(task)
        self.judge.prefetch()

    def _close(self, data) -> None:
        nonce = data.get("nonce") if isinstance(data, dict) else None
        if not isinstance(nonce, str) or not nonce:
            self._note(NONCELESS_CLOSE)
            return
        summary = replace(self.judge.close(), nonce=nonce, task=self.digest,
                          tampering=tuple(self.tampering))
        self.digest, self.tampering = None, []
        send(self.report, {"summary": summary.to_dict()})

    def _note(self, why: str) -> None:
        if why not in self.tampering:
            self.tampering.append(why)


def _ready(device: str) -> None:
    """torch imported and, on a GPU, this process's context made now, while the worker
    starts too: not on the first check's path."""
    import torch

    if device == "cuda":
        torch.zeros(1, device=device)


def _answer(judge, sock, buffer: wire.SharedBuffer, device: str) -> bool:
    """Answer one request; False when the worker's end is closed."""
    try:
        request, fd = wire.receive_message(sock)
    except (wire.JudgeGone, ValueError):
        return False
    if fd is not None:
        buffer.adopt(fd)
    try:
        memory = (wire.receive_inline(sock, int(request["inline"])) if "inline" in request
                  else buffer.map)
    except wire.JudgeGone:
        return False
    try:
        reply = _decide(judge, request, memory, device)
    except Exception as exc:  # a family's reference that raises: the worker says ERROR
        judge.refuse(f"the judge could not decide ({type(exc).__name__}: {exc})")
        reply = {"error": f"{type(exc).__name__}: {exc}"}
    with contextlib.suppress(wire.JudgeGone):
        wire.send_message(sock, {**reply, "id": request.get("id")})
    return True


def _decide(judge, request: dict, memory, device: str) -> dict:
    tensors = wire.read(memory, request.get("tensors") or [], device)
    if request.get("role") == INPUTS:
        return {"mutated": judge.mutated(int(request["seed"]), list(request["digests"]))}
    batch = request.get("batch")
    result = judge.check(str(request["role"]), int(request["seed"]), tensors[0],
                         None if batch is None else int(batch))
    return {"check": result.to_dict()}


def _log(line: str) -> None:
    with contextlib.suppress(OSError, ValueError):
        print(f"[gpubench judge] {line}", file=sys.stderr, flush=True)



