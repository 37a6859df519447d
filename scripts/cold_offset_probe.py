"""Where does a cold sample's time go, against ncu? The study behind cold mode's correction.

    python scripts/cold_offset_probe.py [--out DIR] [--ncu ncu]

For a range of ops (a null kernel, elementwise, reductions, matmuls, multi-kernel ops),
in one process and before any profiler is loaded:
  W      the raw event window of a cold sample: flush, spin, start event, call, end event
  E0     an empty event pair behind a spin (what cold mode subtracted up to issue 11)
  fit    spin, start event, N back-to-back calls, end event, N = 1, 2, 4, 8: the
         window's intercept (a) and slope (b) per call
then, with torch.profiler (CUPTI) on, the same cold sample: the gap from the spin's end
to the call's first kernel, the kernels' summed duration, their span, and the event
window of the same sample. Then ncu's gpu__time_duration.sum per kernel (ncu run on
this script with --ncu-target). Everything goes to DIR/probe.json; a table is printed.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))  # the op builders of benchmarks/fidelity.py

NCU_CALLS = 7
PREFIX = "probe/"
SPIN_US = 300.0  # outlasts the host enqueueing 8 calls of any op here


def ops():
    import torch
    from fidelity import add, attention, conv, layer_norm, matmul, softmax, sort, total, transpose

    return {
        "null": lambda: (lambda: torch.cuda._sleep(0)),
        "add_2^12": lambda: add(1 << 12),
        "add_2^16": lambda: add(1 << 16),
        "add_2^20": lambda: add(1 << 20),
        "sum_2^20": lambda: total(1 << 20),
        "matmul_bf16_1024": lambda: matmul(1024, torch.bfloat16),
        "transpose_2048": lambda: transpose(2048),
        "layer_norm_8192x1024": layer_norm,
        "sum_2^24": lambda: total(1 << 24),
        "softmax_4096^2": softmax,
        "add_2^24": lambda: add(1 << 24),
        "conv_bf16_32x64x56": conv,
        "sdpa_bf16_1024": lambda: attention(1024),
        "sort_2^20": lambda: sort(1 << 20),
        "matmul_bf16_4096": lambda: matmul(4096, torch.bfloat16),
    }


class Gpu:
    def __init__(self):
        import torch

        self.torch = torch
        l2 = torch.cuda.get_device_properties(0).L2_cache_size
        self.buffer = torch.ones(2 * l2 // 4, device="cuda")
        self.sink = torch.empty((), device="cuda")
        self.cycles_per_us = self._calibrate()

    def _calibrate(self) -> float:
        for _ in range(3):  # ramp clocks first
            self.torch.cuda._sleep(10_000_000)
        begin, end = self.event(), self.event()
        begin.record()
        self.torch.cuda._sleep(2_000_000)
        end.record()
        self.torch.cuda.synchronize()
        return 2_000_000 / (begin.elapsed_time(end) * 1e3)

    def event(self):
        return self.torch.cuda.Event(enable_timing=True)

    def flush(self):
        self.torch.sum(self.buffer, dim=0, out=self.sink)

    def spin(self, us=SPIN_US):
        self.torch.cuda._sleep(int(us * self.cycles_per_us))

    def windows(self, body, count, flush=True):
        pairs = [(self.event(), self.event()) for _ in range(count)]
        for begin, end in pairs:
            if flush:
                self.flush()
            self.spin()
            begin.record()
            body()
            end.record()
        self.torch.cuda.synchronize()
        return [b.elapsed_time(e) * 1e3 for b, e in pairs]  # us


def median(values):
    return statistics.median(values) if values else None


def fit(points):
    """Least squares a + b*N over (N, us) points."""
    n = len(points)
    mx = sum(p[0] for p in points) / n
    my = sum(p[1] for p in points) / n
    b = sum((x - mx) * (y - my) for x, y in points) / sum((x - mx) ** 2 for x, _ in points)
    return my - b * mx, b


def event_side(name, fn, gpu):
    for _ in range(20):
        gpu.flush()
        fn()
    gpu.torch.cuda.synchronize()
    row = {"op": name}
    row["E0"] = median(gpu.windows(lambda: None, 100, flush=False))
    row["W"] = median(gpu.windows(fn, 200))
    row["W_warm"] = median(gpu.windows(fn, 100, flush=False))
    points = []
    for calls in (1, 2, 4, 8):
        batch = lambda calls=calls: [fn() for _ in range(calls)]  # noqa: E731
        value = median(gpu.windows(batch, 40, flush=False))
        points.append((calls, value))
    row["fit_points"] = points
    row["fit_a"], row["fit_b"] = fit(points)
    row["fit_a_again"] = fit([(calls, median(gpu.windows(
        lambda calls=calls: [fn() for _ in range(calls)], 40, flush=False)))
        for calls in (1, 2, 4, 8)])[0]
    return row


def cupti_side(row, fn, gpu):
    from torch.profiler import ProfilerActivity, profile, record_function

    from gpubench.timing.chrome_trace import device_events

    count = 40
    pairs = [(gpu.event(), gpu.event()) for _ in range(count)]
    start = time.perf_counter()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for begin, end in pairs:
            gpu.flush()
            gpu.spin()
            begin.record()
            with record_function("probe::call"):
                fn()
            end.record()
        gpu.torch.cuda.synchronize()
    row["profile_s"] = time.perf_counter() - start
    handle, path = tempfile.mkstemp(suffix=".json")
    os.close(handle)
    prof.export_chrome_trace(path)
    trace = json.loads(Path(path).read_text())
    os.unlink(path)
    calls = call_kernels(trace, "probe::call")
    spins = [k for k in device_events(trace)
             if any(word in k.get("name", "").lower() for word in ("spin", "sleep"))]
    windows = [b.elapsed_time(e) * 1e3 for b, e in pairs]
    pre, span, ksum, inner, launches, post_w = [], [], [], [], [], []
    for work, window in zip(calls, windows, strict=False):
        if not work:
            continue
        first = min(k["ts"] for k in work)
        last = max(k["ts"] + k["dur"] for k in work)
        spin = max((s for s in spins if s["ts"] + s["dur"] <= first + 0.01
                    and all(s is not k for k in work)),
                   key=lambda s: s["ts"], default=None)
        if spin is None:
            continue
        pre.append(first - (spin["ts"] + spin["dur"]))
        span.append(last - first)
        ksum.append(sum(k["dur"] for k in work))
        launches.append(len(work))
        row.setdefault("cupti_work", [(k.get("cat"), k.get("name", "")[:50], k["dur"])
                                      for k in sorted(work, key=lambda k: k["ts"])])
        inner.append((last - first) - ksum[-1])
        post_w.append(window - (last - first))
    row.update(cupti_pre_gap=median(pre), cupti_span=median(span), cupti_sum=median(ksum),
               cupti_inner_gaps=median(inner), cupti_launches=median(launches),
               cupti_window=median(windows), window_minus_span=median(post_w))


def call_kernels(trace, name):
    """Per annotated call, its device events (matched by correlation id)."""
    events = [e for e in trace.get("traceEvents", []) if isinstance(e, dict)]
    device = {}
    for e in events:
        if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset") and e.get("ph") == "X":
            device.setdefault((e.get("args") or {}).get("correlation"), []).append(e)
    launches = [e for e in events if e.get("cat") in ("cuda_runtime", "cuda_driver")]
    calls = sorted((e for e in events if e.get("cat") == "user_annotation"
                    and e.get("name") == name), key=lambda e: e["ts"])
    out = []
    for call in calls:
        lo, hi = call["ts"], call["ts"] + call.get("dur", 0)
        work = [d for launch in launches if launch.get("tid") == call.get("tid")
                and lo <= launch["ts"] <= hi
                for d in device.get((launch.get("args") or {}).get("correlation"), [])]
        out.append(work)
    return out


def ncu_target():
    import torch

    for name, build in ops().items():
        fn = build()
        for _ in range(3):
            fn()
        torch.cuda.synchronize()
        torch.cuda.cudart().cudaProfilerStart()
        for _ in range(NCU_CALLS):
            torch.cuda.nvtx.range_push(PREFIX + name)
            fn()
            torch.cuda.synchronize()
            torch.cuda.nvtx.range_pop()
        torch.cuda.cudart().cudaProfilerStop()
        del fn
        torch.cuda.empty_cache()


def ncu_side(ncu, log):
    command = [ncu, "--clock-control", "none", "--profile-from-start", "off", "--nvtx",
               "--metrics", "gpu__time_duration.sum", "--csv", "--page", "raw",
               "--print-units", "base", sys.executable, str(Path(__file__).resolve()),
               "--ncu-target"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=900)
    log.write_text(done.stdout + "\n--- stderr ---\n" + done.stderr)
    rows = list(csv.reader(line for line in done.stdout.splitlines() if line.startswith('"')))
    header, data = rows[0], rows[2:]
    col = header.index("gpu__time_duration.sum")
    kcol = header.index("Kernel Name")
    ncol = next(i for i, h in enumerate(header) if h.startswith("thread Domain"))
    per = {}
    for r in data:
        m = re.search(re.escape(PREFIX) + r'([^:"\s]+)', r[ncol])
        if m:
            us = float(r[col].replace(",", "")) / 1e3
            per.setdefault(m.group(1), []).append((r[kcol][:60], us))
    out = {}
    for name, values in per.items():
        k = len(values) // NCU_CALLS or 1
        sums = [sum(v for _, v in values[i:i + k]) for i in range(0, len(values), k)]
        out[name] = {"ncu": median(sums), "ncu_kernels": k,
                     "ncu_each": [median([values[i + j][1] for i in range(0, len(values), k)
                                          if i + j < len(values)]) for j in range(k)],
                     "ncu_names": [values[j][0] for j in range(k)]}
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, default=Path(os.environ.get("OUT", ".")))
    parser.add_argument("--ncu", default="ncu")
    parser.add_argument("--ncu-target", action="store_true")
    args = parser.parse_args()
    if args.ncu_target:
        return ncu_target()
    import torch

    gpu = Gpu()
    built = {name: build() for name, build in ops().items()}
    rows = [event_side(name, fn, gpu) for name, fn in built.items()]
    first_profile = time.perf_counter()
    for row in rows:
        cupti_side(row, built[row["op"]], gpu)
    print(f"profiler passes: {time.perf_counter() - first_profile:.2f} s", flush=True)
    for row in rows:  # does the profiler, once loaded, change event windows?
        row["W_after_cupti"] = median(gpu.windows(built[row["op"]], 200))
    del built
    torch.cuda.empty_cache()
    (args.out / "probe-events.json").write_text(json.dumps(rows, indent=1))
    found = ncu_side(args.ncu, args.out / "probe-ncu.log")
    for row in rows:
        row.update(found.get(row["op"], {}))
    env = {"gpu": torch.cuda.get_device_name(), "torch": torch.__version__,
           "date": time.strftime("%Y-%m-%d %H:%M:%S"), "cycles_per_us": gpu.cycles_per_us}
    (args.out / "probe.json").write_text(json.dumps({"env": env, "rows": rows}, indent=1))
    cols = ("ncu", "ncu_kernels", "E0", "W", "W_after_cupti", "fit_a", "fit_a_again", "fit_b",
            "cupti_pre_gap", "cupti_span", "cupti_sum", "cupti_inner_gaps", "window_minus_span",
            "profile_s")
    print(env)
    print("| op | " + " | ".join(cols) + " |")
    for row in rows:
        cells = [f"{row.get(c):.3f}" if isinstance(row.get(c), float) else str(row.get(c))
                 for c in cols]
        print(f"| {row['op']} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
