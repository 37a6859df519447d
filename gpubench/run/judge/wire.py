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
# The smallest shared buffer: outputs of small points fit without a new one.
MIN_BUFFER = 1 << 22
# Inline bytes per message: well under a Unix socket's default send buffer (~208 KiB).
CHUNK = 1 << 16


class JudgeGone(Exception):
    """The other end of the judge's socket is closed (the judge exited, or was killed)."""


def pair() -> tuple[socket.socket, socket.socket]:
    """The two ends of a worker-judge link."""
    return socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)


class SharedBuffer:
    """A memfd and its mapping, grown (replaced) when a request needs more bytes. With
    `pinned` (a GPU's worker or judge), the mapping is page-locked for the GPU's copy
    engines: a device-to-host copy into pageable memory runs at a fraction of the link's
    speed, and a run sends tens of outputs a point (the check, 8 re-checks a mode, 9 or 18
    fresh-probe calls), 64 MB each at 4096x4096 float32."""

    def __init__(self, pinned: bool = False):
        self.fd: int | None = None
        self.map: mmap.mmap | None = None
        self.size = 0
        self.pinned = pinned
        self._anchor = None  # the ctypes view whose address was registered with CUDA

    def ensure(self, nbytes: int) -> bool:
        """Room for `nbytes`; True when the buffer was replaced (its fd must be sent)."""
        if nbytes <= self.size and self.map is not None:
            return False
        # Exactly what is asked (a floor for small points): mapping, faulting in and
        # page-locking cost by the page, on both sides, more than a regrowth saves.
        size = max(nbytes, MIN_BUFFER)
        self.close()
        self.fd = os.memfd_create("gpubench-judge", os.MFD_CLOEXEC)
        try:
            os.ftruncate(self.fd, size)
        except OSError:
            self.close()
            raise
        self.map, self.size = mmap.mmap(self.fd, size), size
        self._pin()
        return True

    def adopt(self, fd: int) -> None:
        """Map a buffer the other side created (judge side)."""
        self.close()
        self.size = os.fstat(fd).st_size
        self.fd, self.map = fd, mmap.mmap(fd, self.size)
        self._pin()

    def _pin(self) -> None:
        """Page-lock the mapping for the GPU (cudaHostRegister); left pageable if refused
        (a locked-memory limit): slower copies, the same bytes."""
        if not self.pinned:
            return
        import ctypes

        import torch

        anchor = ctypes.c_char.from_buffer(self.map)
        if int(torch.cuda.cudart().cudaHostRegister(ctypes.addressof(anchor), self.size, 0)) == 0:
            self._anchor = anchor

    def _unpin(self) -> None:
        if self._anchor is not None:
            import ctypes

            import torch

            torch.cuda.cudart().cudaHostUnregister(ctypes.addressof(self._anchor))
            self._anchor = None

    def close(self) -> None:
        self._unpin()
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


# Words per step of a digest: 16 Mi int64s (128 MiB of scratch) at most at a time.
DIGEST_STEP = 1 << 24
# The position weights' modulus: the largest prime below 2^16.
DIGEST_PRIME = 65521


def digest(item) -> list | None:
    """What a tensor's bytes sum to, plain and weighted by position, with its dtype and
    shape: two processes that hold the same tensor get the same digest (integer sums are
    exact in any order), and any write into it changes one. None for a number (a Python
    number cannot be written into)."""
    import torch

    if not isinstance(item, torch.Tensor):
        return None
    raw = item.detach().contiguous().reshape(-1).view(torch.uint8)
    words = raw.view(torch.int32) if raw.numel() % 4 == 0 else raw
    plain = weighted = 0
    for start in range(0, words.numel(), DIGEST_STEP):
        part = words[start:start + DIGEST_STEP].to(torch.int64)
        weights = torch.arange(start, start + part.numel(), device=part.device) \
            % DIGEST_PRIME + 1
        plain += int(part.sum())
        weighted += int((part * weights).sum())
    return [str(item.dtype), list(item.shape), plain % (1 << 64), weighted % (1 << 64)]
