"""The worker's side of the judge: ask whether an output is right, or whether inputs are
still as drawn. RemoteJudge asks the judge process (the runs that give verdicts);
LocalJudge decides in the worker itself (one-shot tools: ncu, a trace, a profile, whose
check is a courtesy, not a verdict)."""

from __future__ import annotations

import os
import socket

from gpubench.families.check import CheckResult
from gpubench.records.point import Task
from gpubench.run.judge import wire
from gpubench.run.judge.ruling import INPUTS
from gpubench.run.judge.truth import Judge


class JudgeError(Exception):
    """The judge could not decide a request (its reason), or is gone."""


class RemoteJudge:
    """The judge process, through the worker's end of the socket."""

    def __init__(self, fd: int, device: str):
        self.sock = socket.socket(fileno=fd)
        self.buffer = wire.SharedBuffer(pinned=device == "cuda")
        self.batches = 0  # check_all calls so far: the judge tallies each as one
        self.asked = 0  # requests so far: each reply must name its own
        self.pid = os.getpid()

    def begin(self, task: Task) -> None:
        """Nothing: the parent opens the task with the judge, not the worker."""

    def check(self, role: str, seed: int, output) -> CheckResult:
        return CheckResult(**self._ask({"role": role, "seed": seed}, [output])["check"])

    def check_all(self, role: str, outputs: list[tuple[int, object]]) -> list[CheckResult]:
        """Several outputs (seed, output), one request each, tallied as one: the shared
        buffer stays one output large (page-locking a mode's eight at once costs more
        than the round trips it saves)."""
        self.batches += 1
        return [CheckResult(**self._ask({"role": role, "seed": seed, "batch": self.batches},
                                        [output])["check"]) for seed, output in outputs]

    def mutated(self, seed: int, inputs: tuple) -> list[str]:
        """Digests cross, not the inputs (wire.digest): a few numbers a tensor."""
        digests = [wire.digest(item) for item in inputs]
        return list(self._ask({"role": INPUTS, "seed": seed, "digests": digests}, [])
                    ["mutated"])

    def _ask(self, request: dict, tensors: list) -> dict:
        if os.getpid() != self.pid:  # a copy a variant's fork() made: it must not speak
            os._exit(0)
        self.asked += 1
        specs, nbytes = wire.layout(tensors)
        request = {**request, "tensors": specs, "id": self.asked}
        try:
            self._send(request, tensors, specs, nbytes)
            reply, _ = wire.receive_message(self.sock)
        except wire.JudgeGone as gone:
            raise JudgeError(f"the judge process is gone: {gone}") from None
        if reply.get("id") != self.asked:
            raise JudgeError(f"the judge answered request {reply.get('id')} for request "
                             f"{self.asked}: something else in this process spoke to it")
        if "error" in reply:
            raise JudgeError(f"the judge could not decide: {reply['error']}")
        return reply

    def _send(self, request: dict, tensors: list, specs: list, nbytes: int) -> None:
        """Through the shared buffer, or inline where no memfd of the size can be made."""
        try:
            replaced = self.buffer.ensure(nbytes)
        except OSError:  # EFBIG under `ulimit -f`, ENOMEM: the bytes go on the socket
            self.buffer.close()
            payload = bytearray(nbytes)
            wire.write(payload, tensors, specs)
            wire.send_inline(self.sock, request, payload)
            return
        wire.write(self.buffer.map, tensors, specs)
        wire.send_message(self.sock, request, self.buffer.fd if replaced else None)


class LocalJudge:
    """The same decisions made in this process (no boundary: see the module docstring)."""

    def __init__(self, device: str):
        self.judge = Judge(device)

    def begin(self, task: Task) -> None:
        self.judge.open(task)

    def check(self, role: str, seed: int, output) -> CheckResult:
        return self.judge.check(role, seed, output)

    def check_all(self, role: str, outputs: list[tuple[int, object]]) -> list[CheckResult]:
        return self.judge.check_all(role, outputs)

    def mutated(self, seed: int, inputs: tuple) -> list[str]:
        return self.judge.mutated(seed, [wire.digest(item) for item in inputs])
