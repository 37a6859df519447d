"""Diagnostic: what an empty CUDA event pair costs behind a spin, vs a small kernel (GPU only)."""
import statistics

import torch

torch.cuda.synchronize()
a = torch.randn(1 << 16, device="cuda")
b = torch.randn(1 << 16, device="cuda")
out = torch.empty_like(a)
flush = torch.ones(2 * torch.cuda.get_device_properties(0).L2_cache_size // 4, device="cuda")
sink = torch.empty((), device="cuda")


def pairs(body, n=2000, do_flush=True):
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
          for _ in range(n)]
    for s, e in ev:
        if do_flush:
            torch.sum(flush, dim=0, out=sink)
        torch.cuda._sleep(100_000)
        s.record()
        body()
        e.record()
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) * 1e3 for s, e in ev)


for _ in range(2):
    pairs(lambda: None, 200)
print("empty pair us", pairs(lambda: None))
print("empty pair, two events back to back us", pairs(lambda: None, do_flush=False))
print("add 2^16 us", pairs(lambda: torch.add(a, b, out=out)))
print("two adds us", pairs(lambda: (torch.add(a, b, out=out), torch.add(a, b, out=out))))
print("sleep(0) kernel us", pairs(lambda: torch.cuda._sleep(0)))
