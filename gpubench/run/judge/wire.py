"""How tensors cross from the worker to the judge: one message per request on a
SOCK_SEQPACKET socket (its boundaries kept), the bytes in a shared memfd.

A request is a JSON header naming each tensor's dtype, shape and place in the shared
buffer; the buffer is a memfd the worker grows when a request needs more, and sends (as an
SCM_RIGHTS descriptor) with the first request that uses it. One copy each way: the worker
writes its tensors into the mapping (a device-to-host copy on a GPU), the judge reads them
out of it (host-to-device). The reply is one JSON message.

Where no memfd of the size can be made (a file-size limit, `ulimit -f`, applies to memfds),
the bytes follow the header inline, in messages of CHUNK bytes: slower, never refused.
"""

from __future__ import annotations

import json
import mmap
import os
import socket

# A header is a few hundred bytes; this bounds what one recvmsg takes.
MAX_HEADER = 1 << 16
# Tensors start on 64-byte boundaries in the buffer (any dtype's alignment).
ALIGN = 64
# Inline bytes per message: well under a Unix socket's default send buffer (~208 KiB).
CHUNK = 1 << 16


class JudgeGone(Exception):
    """The other end of the judge's socket is closed (the judge exited, or was killed)."""


def pair() -> tuple[socket.socket, socket.socket]:
    """The two ends of a worker-judge link."""
    return socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)


class SharedBuffer:
    """A memfd and its mapping, grown (replaced) when a request needs more bytes."""

    def __init__(self):
        self.fd: int | None = None
        self.map: mmap.mmap | None = None
        self.size = 0

    def ensure(self, nbytes: int) -> bool:
        """Room for `nbytes`; True when the buffer was replaced (its fd must be sent)."""
        if nbytes <= self.size and self.map is not None:
            return False
        self.close()
        size = max(nbytes, 1 << 20)
        self.fd = os.memfd_create("gpubench-judge", os.MFD_CLOEXEC)
        os.ftruncate(self.fd, size)
        self.map, self.size = mmap.mmap(self.fd, size), size
        return True

    def adopt(self, fd: int) -> None:
        """Map a buffer the other side created (judge side)."""
        self.close()
        self.size = os.fstat(fd).st_size
        self.fd, self.map = fd, mmap.mmap(fd, self.size)

    def close(self) -> None:
        if self.map is not None:
            self.map.close()
        if self.fd is not None:
            os.close(self.fd)
        self.fd, self.map, self.size = None, None, 0


def layout(tensors: list) -> tuple[list[dict], int]:
    """Each tensor's spec (dtype, shape, offset, nbytes; None for a non-tensor) and the
    bytes they need together."""
    import torch

    specs, offset = [], 0
    for item in tensors:
        if not isinstance(item, torch.Tensor):
            specs.append(None)
            continue
        nbytes = item.numel() * item.element_size()
        specs.append({"dtype": str(item.dtype).removeprefix("torch."),
                      "shape": list(item.shape), "offset": offset, "nbytes": nbytes})
        offset += -(-nbytes // ALIGN) * ALIGN
    return specs, offset


def write(memory, tensors: list, specs: list) -> None:
    """Copy each tensor's bytes to its place in `memory` (a mapping or a bytearray)."""
    import torch

    for item, spec in zip(tensors, specs, strict=True):
        if spec is None or not spec["nbytes"]:
            continue
        flat = item.detach().contiguous().reshape(-1).view(torch.uint8)
        place = torch.frombuffer(memory, dtype=torch.uint8, count=spec["nbytes"],
                                 offset=spec["offset"])
        place.copy_(flat)
        del place


def read(memory, specs: list, device: str) -> list:
    """The tensors the specs name in `memory`, on `device` (copies: memory is reused)."""
    import torch

    tensors = []
    for spec in specs:
        if spec is None:
            tensors.append(None)
            continue
        dtype = getattr(torch, spec["dtype"])
        if not spec["nbytes"]:
            tensors.append(torch.empty(spec["shape"], dtype=dtype, device=device))
            continue
        raw = torch.frombuffer(memory, dtype=torch.uint8, count=spec["nbytes"],
                               offset=spec["offset"])
        tensors.append(raw.view(dtype).reshape(spec["shape"]).to(device, copy=True))
        del raw
    return tensors


def send_message(sock: socket.socket, message: dict, fd: int | None = None) -> None:
    data = json.dumps(message).encode()
    try:
        if fd is None:
            sock.sendmsg([data])
        else:
            socket.send_fds(sock, [data], [fd])
    except OSError as exc:
        raise JudgeGone(f"the judge's socket is closed ({exc.strerror or exc})") from None


def receive_message(sock: socket.socket) -> tuple[dict, int | None]:
    """The next message and the descriptor that came with it (None if none)."""
    try:
        data, fds, _flags, _address = socket.recv_fds(sock, MAX_HEADER, 1)
    except OSError as exc:
        raise JudgeGone(f"the judge's socket is closed ({exc.strerror or exc})") from None
    if not data:
        raise JudgeGone("the other end of the judge's socket closed it")
    message = json.loads(data)
    if not isinstance(message, dict):
        raise ValueError("a judge message is a JSON object")
    return message, (fds[0] if fds else None)


def send_inline(sock: socket.socket, message: dict, payload: bytearray) -> None:
    """A request whose bytes follow it in CHUNK-sized messages (no shared buffer)."""
    send_message(sock, {**message, "inline": len(payload)})
    view = memoryview(payload)
    for start in range(0, len(payload), CHUNK):
        try:
            sock.sendmsg([view[start:start + CHUNK]])
        except OSError as exc:
            raise JudgeGone(f"the judge's socket is closed ({exc.strerror or exc})") from None


def receive_inline(sock: socket.socket, nbytes: int) -> bytearray:
    """The bytes of an inline request, gathered from their messages."""
    payload = bytearray(nbytes)
    view, got = memoryview(payload), 0
    while got < nbytes:
        try:
            count = sock.recv_into(view[got:], min(CHUNK, nbytes - got))
        except OSError as exc:
            raise JudgeGone(f"the judge's socket is closed ({exc.strerror or exc})") from None
        if not count:
            raise JudgeGone("the other end of the judge's socket closed it")
        got += count
    return payload
