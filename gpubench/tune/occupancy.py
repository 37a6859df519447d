"""Theoretical occupancy from a kernel's resources: the warps one SM can hold of it, as a
fraction of the SM's maximum. The CUDA occupancy calculator's arithmetic, reduced to its
three limits (registers, shared memory, threads); block-count limits and allocation
granularity are left out, so this is an upper bound (within one block's worth).

Napkin check, H100 (65536 registers, 228 KiB shared, 2048 threads per SM): a 256-thread
block of 128 registers needs 32768 registers -> 2 blocks, 512 threads -> 25%.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SmLimits:
    registers: int  # per SM
    shared_bytes: int  # per SM
    threads: int  # per SM


def occupancy(limits: SmLimits, threads_per_block: int, registers_per_thread: int | None,
              shared_per_block: int | None) -> float | None:
    """Resident warps / max warps, or None when a resource count is unknown."""
    if not threads_per_block or registers_per_thread is None or shared_per_block is None:
        return None
    blocks = limits.threads // threads_per_block
    if registers_per_thread:
        blocks = min(blocks, limits.registers // (registers_per_thread * threads_per_block))
    if shared_per_block:
        blocks = min(blocks, limits.shared_bytes // shared_per_block)
    return max(blocks, 0) * threads_per_block / limits.threads
