"""What a fresh GPU process pays the first time it uses Triton and the profiler: the costs
each worker of a several-GPU run pays once in its own span (journal, issue 32).

    python3 scripts/first_use_probe.py      # on a GPU, gpubench installed; run twice: the
                                            # second finds a warm Triton cache

Prints seconds per step: torch and CUDA, `import triton`, Triton's driver, the first launch
of a kernel, a second launch, the first launch of another kernel, the first and second
torch.profiler capture (gpubench's profile_calls), the first bf16 and fp16 matmuls.
"""

from __future__ import annotations

import time

import torch
import triton
import triton.language as tl


@triton.jit
def _add(x, n, amount: tl.constexpr, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(x + offsets, tl.load(x + offsets, mask=mask) + amount, mask=mask)


@triton.jit
def _add_again(x, n, amount: tl.constexpr, BLOCK: tl.constexpr):
    offsets = tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(x + offsets, tl.load(x + offsets, mask=mask) + amount, mask=mask)


def main() -> None:
    from gpubench.timing.timers.cupti import profile_calls

    last = time.perf_counter()

    def step(name: str) -> None:
        nonlocal last
        torch.cuda.synchronize()
        now = time.perf_counter()
        print(f"{name}: {now - last:.3f} s", flush=True)
        last = now

    torch.zeros(1, device="cuda")
    step("CUDA context")
    from triton.runtime import driver

    driver.active.get_current_device()
    step("Triton's driver")
    x = torch.zeros(1024, device="cuda")
    _add[(1,)](x, 1024, amount=1, BLOCK=1024)
    step("first Triton launch")
    _add[(1,)](x, 1024, amount=1, BLOCK=1024)
    step("second launch")
    _add_again[(1,)](x, 1024, amount=2, BLOCK=1024)
    step("another kernel's first launch")
    y = torch.zeros(1 << 20, device="cuda")
    for name in ("first profiler capture", "second profiler capture"):
        profile_calls(lambda: y.add_(1), 1, "probe", lambda: None, torch.cuda.synchronize)
        step(name)
    for dtype in (torch.bfloat16, torch.float16):
        a = torch.randn(4096, 4096, device="cuda", dtype=dtype)
        step(f"inputs {dtype}")
        a @ a
        step(f"first {dtype} matmul 4096")


if __name__ == "__main__":
    main()
