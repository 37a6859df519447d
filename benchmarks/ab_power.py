"""Issue 51's measurement: does `gpubench ab` decide a planted 1% and 2% slowdown, and stay
quiet on unchanged code? On a GPU:

    python3 benchmarks/ab_power.py [--out DIR] [--sizes 2^20,...] [--aa-family vector_add ...]

It writes a family `planted` (out = 2 x, a torch baseline and two CUDA kernels, `steady` and
`planted`) in three versions: BASE, and NEW with `planted` doing 1% or 2% more work for the
same answer (its grid covers n + n x PCT / 100 elements; the extra threads write the first
elements again, with the same values). `steady` and `torch` are unchanged: controls.
Then, each a `gpubench ab` run:

  +1%, +2%    BASE against each NEW, at sizes from ~5 us to ~200 us;
  A/A         BASE against a copy of itself, and each --aa-family (shipped) against a copy:
              every point is unchanged code, so any FASTER or SLOWER is a false verdict;
  run         one `gpubench run` of BASE's points, for the wall-time ratio.

Prints the power per size (the planted variant's verdict and change at +1% and +2%), the
A/A's verdict counts, and the wall times. Targets (the issue's): +2% SLOWER at every point,
+1% at >= 90% of points >= 5 us, no false verdict in >= 40 A/A points, ab <= 2x run.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SIZES = "2^20,2^21,2^22,2^23,12582912,2^24,2^25,2^26,100663296,2^27"

SPEC = '''"""planted: out = 2 x; `planted` may do PCT% more work for the same answer."""
import torch

from gpubench import CudaVariant, Family, TorchVariant

family = Family(
    reference=lambda x: 2 * x,
    make_inputs=lambda n, dtype, device: (torch.randn(n, device=device, dtype=dtype),),
    flops=lambda n: n,
    bytes_moved=lambda n, itemsize: 2 * n * itemsize,
    dtypes=("float32",),
    sizes=(2**20, 2**24),
    variants=(
        TorchVariant("torch", fn=lambda x, out: torch.mul(x, 2, out=out), baseline=True),
        CudaVariant("steady", function="steady", cuda=("steady.cu",),
                    cpp=("steady_binding.cpp",)),
        CudaVariant("planted", function="planted", cuda=("planted.cu",),
                    cpp=("planted_binding.cpp",)),
    ),
)
'''
KERNEL = '''// {name}.cu: out[i] = 2 x[i]. {plant}
#include <cstdint>
#include <cuda_runtime.h>

__device__ unsigned int {name}_blocks_done = 0;

// A grid-stride loop over a grid of one full wave (8 blocks of 256 per SM): every block
// counts itself once when done, so the counter costs ~1000 atomics at any size (one a
// block of 256 elements cost +50-90% at 2^27). The block counted last spins for `spin`
// cycles with nothing beside it: that time adds to the kernel's, at any size.
__global__ void {name}_kernel(const float* __restrict__ x, float* __restrict__ out,
                              int64_t n, int64_t total, long long spin) {{
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += stride) {{
    const int64_t j = i < n ? i : i - n;
    out[j] = 2.0f * x[j];
  }}
  // Each block's stores done before it counts itself: the spin then starts after every
  // store of the kernel, never beside a tail of them still draining.
  __threadfence();
  __syncthreads();
  if (threadIdx.x == 0) {{
    if (atomicAdd(&{name}_blocks_done, 1u) == gridDim.x - 1) {{
      const long long start = clock64();
      while (clock64() - start < spin) {{
      }}
      atomicExch(&{name}_blocks_done, 0u);
    }}
  }}
}}

// The unplanted kernel's median at each size of the fitting run (n, ns)
static const double {name}_times[][2] = {{{table}}};

static int {name}_wave_blocks() {{
  static int blocks = 0;
  if (blocks == 0) {{
    int device = 0, sms = 0;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
    blocks = 8 * (sms > 0 ? sms : 1);
  }}
  return blocks;
}}

cudaError_t {name}_launch(const float* x, float* out, int64_t n, cudaStream_t stream) {{
  const int64_t total = n + n * {extra_pct} / 100;
  double time_ns = 0.0;
  for (const auto& entry : {name}_times) {{
    if (entry[0] == static_cast<double>(n)) time_ns = entry[1];
  }}
  // {spin_pct}% of that time, in SM cycles at {mhz} MHz
  const long long spin = static_cast<long long>({spin_pct} / 100.0 * time_ns * {mhz} * 1e-3);
  if (total == 0) return cudaSuccess;
  const int64_t needed = (total + 255) / 256;
  const int blocks = static_cast<int>(needed < {name}_wave_blocks() ? needed
                                                                    : {name}_wave_blocks());
  {name}_kernel<<<blocks, 256, 0, stream>>>(x, out, n, total, spin);
  return cudaGetLastError();
}}
'''
PLANTS = {
    "spin": "The last block to finish spins for {pct}% of the kernel's fitted time: {pct}% "
            "more time, one answer.",
    "traffic": "The grid covers n + n x {pct} / 100 elements; the threads past n write the "
               "first elements again (the same values): {pct}% more traffic, one answer.",
}


BINDING = '''#include <gpubench/binding.h>

cudaError_t {name}_launch(const float* x, float* out, int64_t n, cudaStream_t stream);

void {name}(at::Tensor x, at::Tensor out) {{
  gb_check_cuda_tensor(x, "x", x);
  gb_check_cuda_tensor(out, "out", x);
  gb_check_launch({name}_launch(x.data_ptr<float>(), out.data_ptr<float>(), x.numel(),
                                gb_current_stream()), "{name}_kernel");
}}
'''


@dataclass(frozen=True)
class Plant:
    """How `planted` is made slower: 'spin' (the block counted last spins for pct% of the
    kernel's median at that size in a run of the unplanted version: a known change at
    every size; every version counts its blocks, so the code differs only in the spin's
    length) or 'traffic' (pct% more elements written again: the issue's plant, whose time
    change at a few us is well under pct%, the extra work running beside the rest: a
    kernel's time there is mostly its fixed cost, not its bytes)."""

    kind: str = "spin"
    times_ns: tuple[tuple[int, float], ...] = ()  # (n, the unplanted kernel's median)
    mhz: float = 1980.0  # the SM clock the spin counts cycles of

    def source(self, name: str, pct: float) -> str:
        spin, extra = (pct, 0) if self.kind == "spin" else (0, pct)
        table = ", ".join(f"{{{n}.0, {ns:.1f}}}" for n, ns in self.times_ns) or "{0.0, 0.0}"
        return KERNEL.format(name=name, plant=PLANTS[self.kind].format(pct=pct),
                             extra_pct=extra, spin_pct=spin, table=table,
                             mhz=f"{self.mhz:.0f}")


def write_family(folder: Path, pct: float, plant: Plant = Plant()) -> Path:
    family = folder / "planted"
    family.mkdir(parents=True, exist_ok=True)
    (family / "spec.py").write_text(SPEC)
    for name in ("steady", "planted"):
        (family / f"{name}_binding.cpp").write_text(BINDING.format(name=name))
    (family / "steady.cu").write_text(Plant().source("steady", 0))  # the same in every one
    (family / "planted.cu").write_text(plant.source("planted", pct))
    return family


def medians_ns(run: Path) -> tuple[tuple[int, float], ...]:
    """(n, `steady`'s median in ns) per size of a run: the unplanted kernel's time."""
    rows = json.loads((run / "results.json").read_text())["results"]
    return tuple((r["shape"]["n"], r["median_s"] * 1e9) for r in rows
                 if r["variant"] == "steady" and r["status"] == "ok")


def sm_clock_mhz() -> float:
    try:
        text = subprocess.run(["nvidia-smi", "--query-gpu=clocks.max.sm",
                               "--format=csv,noheader,nounits"], capture_output=True,
                              text=True, timeout=30).stdout
        return float(text.split()[0])
    except (OSError, ValueError, IndexError, subprocess.TimeoutExpired):
        return Plant.mhz


def gpubench(*args: str) -> tuple[int, float, str]:
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "gpubench", *args], capture_output=True,
                          text=True, cwd=REPO)
    return done.returncode, time.perf_counter() - start, done.stdout + done.stderr


def verdicts(run: Path) -> list[dict]:
    return json.loads((run / "results.json").read_text())["meta"]["ab"]["verdicts"]


def ab(name: str, base: Path | None, new: Path, out: Path, sizes: str | None,
       extra: list[str], log: Path) -> tuple[list[dict], float]:
    """One `gpubench ab` (BASE None: `--aa` against a copy of NEW, in extra)."""
    args = ["ab", name, *(["--base", str(base)] if base else []), "--new", str(new),
            "--out", str(out), *extra]
    code, wall, text = gpubench(*args, *(["--sizes", sizes] if sizes else []))
    log.write_text(text)
    if code not in (0, 13):
        sys.exit(f"gpubench {' '.join(args)} exited {code}; its output: {log}")
    return verdicts(out), wall


def power_table(plus: dict[float, list[dict]]) -> list[str]:
    pcts = list(plus)
    head = "| size | base median | " + " | ".join(f"+{p:g}%: change [CI] | verdict"
                                                for p in pcts) + " |"
    lines = [head, "|---|---|" + "---|---|" * len(pcts)]
    rows = {pct: {v["shape"]: v for v in found if v["variant"] == "planted"}
            for pct, found in plus.items()}
    for shape, first in rows[pcts[0]].items():
        cells = [f"{_change(rows[p].get(shape, {}))} | {rows[p].get(shape, {}).get('verdict', '-')}"
                 for p in pcts]
        lines.append(f"| {shape} | {_us(first.get('base_median_s'))} | {' | '.join(cells)} |")
    return lines


def decided_share(planted: list[dict], from_us: float) -> str:
    """'SLOWER at 7 of 7 points >= 50 us': the issue's bar, over the points at least this
    long in BASE."""
    long = [v for v in planted if (v.get("base_median_s") or 0) * 1e6 >= from_us]
    slower = sum(v["verdict"] == "SLOWER" for v in long)
    return f"SLOWER at {slower} of {len(long)} points >= {from_us:g} us"


def _us(seconds) -> str:
    return "-" if seconds is None else f"{seconds * 1e6:.1f} us"


def _change(v: dict) -> str:
    if not v or v.get("ratio") is None:
        return "-"
    return (f"{v['ratio'] - 1:+.2%} [{v['low'] - 1:+.2%}, {v['high'] - 1:+.2%}] "
            f"({v['blocks']} blocks)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=REPO / "profiles" / "ab-power")
    parser.add_argument("--sizes", default=SIZES)
    parser.add_argument("--aa-family", action="append", default=None,
                        help="shipped families for the A/A (default: vector_add, square; "
                             "'none': only the planted family's)")
    parser.add_argument("--plant", choices=sorted(PLANTS), default="spin")
    parser.add_argument("--pcts", default="1,2",
                        help="the planted slowdowns, in %% (comma-separated; 0.5 allowed)")
    parser.add_argument("--calibrate", action="store_true",
                        help="the planted family's A/A as `ab --aa` (kept per device model), "
                             "and every plant's A/B with --threshold-from-aa")
    parser.add_argument("extra", nargs="*", help="options for every ab run (after --)")
    args = parser.parse_args()
    out = args.out
    shutil.rmtree(out, ignore_errors=True)
    base = write_family(out / "families" / "base", 0)
    copy = write_family(out / "families" / "copy", 0)
    walls = {}
    run_args = ["run", "planted", "--kernels-dir", str(base.parent), "--sizes", args.sizes,
                "--no-compiled"]
    # BASE's run first: its medians fit the spin plant's time model, and its builds land in
    # the cache; the wall-time reference is a second run, at the end, as cached as ab's
    code, _, text = gpubench(*run_args, "--out", str(out / "run-fit"))
    (out / "run-fit.log").write_text(text)
    plant = Plant(args.plant, medians_ns(out / "run-fit"), sm_clock_mhz()) \
        if args.plant == "spin" else Plant(args.plant)
    print(f"plant: {plant}")
    pcts = [float(p) for p in args.pcts.split(",") if p]
    news = {pct: write_family(out / "families" / f"plus{pct:g}", pct, plant) for pct in pcts}
    plus = {}
    if args.calibrate:  # ab --aa: the A/A and the calibration the plants' thresholds read
        aa, walls["ab A/A planted"] = ab("planted", None, base, out / "aa-planted",
                                         args.sizes, ["--aa", *args.extra],
                                         out / "aa-planted.log")
    else:
        aa, walls["ab A/A planted"] = ab("planted", base, copy, out / "aa-planted",
                                         args.sizes, args.extra, out / "aa-planted.log")
    plant_extra = [*args.extra, *(["--threshold-from-aa"] if args.calibrate else [])]
    for pct, new in news.items():
        plus[pct], walls[f"ab +{pct:g}%"] = ab("planted", base, new, out / f"ab-plus{pct:g}",
                                               args.sizes, plant_extra,
                                               out / f"ab-plus{pct:g}.log")
    for family in [f for f in args.aa_family or ["vector_add", "square"] if f != "none"]:
        shipped = REPO / "kernels" / family
        twin = out / "families" / "shipped" / family
        shutil.copytree(shipped, twin, ignore=shutil.ignore_patterns("__pycache__"))
        found, walls[f"ab A/A {family}"] = ab(family, shipped, twin, out / f"aa-{family}",
                                              None, args.extra, out / f"aa-{family}.log")
        aa += found
    code, walls["run (BASE's points)"], text = gpubench(*run_args, "--out", str(out / "run"))
    (out / "run.log").write_text(text)
    print("\n".join(power_table(plus)))
    for pct in pcts:
        planted = [v for v in plus[pct] if v["variant"] == "planted"]
        slower = sum(v["verdict"] == "SLOWER" for v in planted)
        controls = Counter(v["verdict"] for v in plus[pct] if v["control"])
        print(f"\n+{pct:g}%: SLOWER at {slower} of {len(planted)} points "
              f"({decided_share(planted, 5)}; {decided_share(planted, 50)}); controls: "
              f"{dict(controls)}")
    counts = Counter(v["verdict"] for v in aa)
    false = counts.get("FASTER", 0) + counts.get("SLOWER", 0)
    print(f"A/A: {len(aa)} points, {false} false verdicts (FASTER/SLOWER); {dict(counts)}")
    for v in aa:
        if v["verdict"] in ("FASTER", "SLOWER"):
            print(f"  false: {v['variant']} {v['shape']} {_change(v)}")
    print("\n| run | wall s |\n|---|---|")
    for name, wall in walls.items():
        print(f"| {name} | {wall:.1f} |")
    ratio = walls["ab A/A planted"] / walls["run (BASE's points)"]
    print(f"\nab / run of the same points, builds cached: {ratio:.2f}x (ab A/A planted; "
          f"run exit {code})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
