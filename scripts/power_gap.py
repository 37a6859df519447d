"""Diagnostic: does idling between samples bring a power-capped matmul back to ncu's number?"""
import statistics
import time

import pynvml
import torch

pynvml.nvmlInit()
h = pynvml.nvmlDeviceGetHandleByIndex(0)
n = 8192
a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
c = torch.empty_like(a)
flush = torch.ones(2 * torch.cuda.get_device_properties(0).L2_cache_size // 4, device="cuda")
sink = torch.empty((), device="cuda")


def run(gap_factor, samples=60):
    times, clocks = [], []
    for _ in range(samples):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.sum(flush, dim=0, out=sink)
        torch.cuda._sleep(100_000)
        s.record()
        torch.matmul(a, b, out=c)
        e.record()
        e.synchronize()
        t = s.elapsed_time(e) / 1e3
        times.append(t)
        clocks.append(pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM))
        if gap_factor:
            time.sleep(gap_factor * t)
    return statistics.median(times) * 1e6, min(clocks), max(clocks)


for _ in range(20):
    torch.matmul(a, b, out=c)
torch.cuda.synchronize()
for gap in (0, 1, 3, 0, 10):
    print("gap x", gap, "median us, sm MHz min/max:", run(gap))
