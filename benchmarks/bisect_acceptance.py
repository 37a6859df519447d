"""Issue 64's GPU acceptance: `bisect`, `history --check --confirm` and `ab --explain` on
families written here, in git repositories made here.

    python benchmarks/bisect_acceptance.py bisect  [--out DIR]   # three bisects, 16 commits
    python benchmarks/bisect_acceptance.py confirm [--out DIR]   # a real step, a false alarm
    python benchmarks/bisect_acceptance.py explain [--out DIR]   # registers up, occupancy down

`kstep` (bisect, confirm): C = A[:, :K] @ B[:K, :] in bf16, 4096 x 4096, with K = 4800 +
EXTRA and A's columns past 4800 zero, so that every version computes the same C and a
commit that raises EXTRA adds work in proportion: 4800 -> 4896 is +2% of the FLOPs (commit
5), 4896 -> 5136 +4.9% (commit 12). Sixteen commits, each changing the folder.

`chase` (explain): a latency-bound pointer chase (256 dependent loads a thread through a
4 MB table in L2); NEW keeps 96 loaded values in registers across the loop (128 registers
a thread against ~22: a quarter of the warps an SM holds), BASE does not.

Prints every command's output; the bars are checked and said at the end of each part.
"""

from __future__ import annotations

import argparse
import math
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

KSTEP_SPEC = '''"""kstep: C = A[:, :K] @ B[:K, :], bf16; A's columns past K0 are zero."""

import torch

from gpubench import Family, TorchVariant

K0, KMAX = 4800, 5376
EXTRA = {extra}  # columns of zeros multiplied too: the work a commit adds


def make_inputs(n, dtype, device):
    a = torch.randn(n, KMAX, device=device, dtype=torch.float32) * K0 ** -0.5
    a[:, K0:] = 0
    b = torch.randn(KMAX, n, device=device, dtype=torch.float32)
    return a.to(dtype), b.to(dtype)


def work(a, b, out):
    k = K0 + EXTRA
    torch.matmul(a[:, :k], b[:k, :], out=out)


family = Family(
    reference=lambda a, b: (a.float() @ b.float()).to(a.dtype),
    make_inputs=make_inputs,
    flops=lambda n: 2 * n * n * (K0 + EXTRA),
    bytes_moved=lambda n, itemsize: 3 * n * n * itemsize,
    dtypes=("bfloat16",),
    sizes=(4096,),
    cpu_sizes=(64,),
    variants=(TorchVariant("mm", fn=work, baseline=True),),
)
'''

CHASE_SPEC = '''"""chase: 256 dependent loads a thread through a permutation (latency-bound)."""

import torch

from gpubench import CudaVariant, Family

STEPS = 256


def make_inputs(n, dtype, device):
    nxt = torch.randperm(n, device=device).to(torch.int32)
    return nxt, torch.randn(n, device=device, dtype=torch.float32)


def reference(nxt, w):
    n = nxt.numel()
    idx = (torch.arange(n, device=nxt.device) * 7919) & (n - 1)
    for _ in range(STEPS):
        idx = nxt[idx].long()
    return idx.float()


family = Family(
    reference=reference,
    make_inputs=make_inputs,
    flops=lambda n: n,
    bytes_moved=lambda n, itemsize: n * STEPS * 4,
    dtypes=("float32",),
    sizes=(2**20,),
    variants=(CudaVariant("chase", function="chase", cuda=("chase.cu",),
                          cpp=("chase.cpp",)),),
)
'''

CHASE_CU = '''#include <cuda_runtime.h>
#include <cstdint>
#define KEEP {keep}
#define STEPS 256

__global__ void chase_kernel(const int* __restrict__ next, const float* __restrict__ w,
                             float* __restrict__ out, int n, float scale) {{
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  int idx = (int)(((long long)i * 7919) & (n - 1));
#if KEEP > 0
  float keep[KEEP];  // loaded before the loop, used after it: live across it
#pragma unroll
  for (int j = 0; j < KEEP; j++) keep[j] = w[(idx + j * 97) & (n - 1)];
#endif
  for (int s = 0; s < STEPS; s++) idx = next[idx];
  float acc = (float)idx;
#if KEEP > 0
#pragma unroll
  for (int j = 0; j < KEEP; j++) acc += keep[j] * (float)(j + 1) * scale;
#endif
  out[i] = acc;
}}

cudaError_t chase_launch(const int* next, const float* w, float* out, int n, float scale,
                         cudaStream_t stream) {{
  chase_kernel<<<(n + 255) / 256, 256, 0, stream>>>(next, w, out, n, scale);
  return cudaGetLastError();
}}
'''

CHASE_CPP = '''#include <gpubench/binding.h>

// scale is 0 (from this file, which nvcc never sees: the kept values stay live and
// add nothing to the answer)
cudaError_t chase_launch(const int* next, const float* w, float* out, int n, float scale,
                         cudaStream_t stream);

void chase(at::Tensor next, at::Tensor w, at::Tensor out) {
  TORCH_CHECK(next.is_cuda() && next.scalar_type() == at::kInt, "next: CUDA int32");
  gb_check_launch(chase_launch(next.data_ptr<int>(), w.data_ptr<float>(),
                               out.data_ptr<float>(), (int)next.numel(), 0.0f,
                               gb_current_stream()), "chase_kernel");
}
'''

# kstep's EXTRA at each of the 16 commits: +2% of the FLOPs at commit 5, +4.9% at 12.
EXTRA = [0] * 4 + [96] * 7 + [336] * 5
TIMING = ["--warmup", "50", "--max-time", "1000"]


def sh(args: list[str], cwd: Path | None = None, env: dict | None = None) -> tuple[int, str]:
    """Run, echo the command and its output, return (exit code, output)."""
    print(f"$ {' '.join(args)}", flush=True)
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True)
    text = done.stdout + done.stderr
    print(text, flush=True)
    return done.returncode, text


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-c", "user.name=bench", "-c", "user.email=b@b", *args],
                          cwd=repo, check=True, capture_output=True, text=True)
    return done.stdout.strip()


def kstep_repo(root: Path) -> tuple[Path, list[str]]:
    """The 16-commit repository of kstep; (its kernels folder, the commits oldest first)."""
    repo = root / "repo"
    family = repo / "kernels" / "kstep"
    family.mkdir(parents=True)
    git(repo, "init", "-q")
    commits = []
    for n, extra in enumerate(EXTRA, start=1):
        (family / "spec.py").write_text(KSTEP_SPEC.format(extra=extra))
        (family / "NOTES").write_text(f"commit {n}\n")
        git(repo, "add", ".")
        git(repo, "commit", "-qm", f"commit {n}: EXTRA={extra}")
        commits.append(git(repo, "rev-parse", "HEAD"))
    return repo / "kernels", commits


def gpubench(*args: str, env: dict | None = None) -> tuple[int, str]:
    return sh([sys.executable, "-m", "gpubench", *args], env=env)


def probes_of(text: str) -> int:
    return sum(1 for line in text.splitlines() if re.match(r"(probe-\d+|confirm) ", line))


def part_bisect(root: Path) -> list[str]:
    kernels, c = kstep_repo(root)
    bars = []
    cases = (("+2% at commit 5", 0, 15, 4), ("+4.9% at commit 12", 10, 15, 11),
             ("no step", 4, 10, None))
    for name, good, bad, culprit in cases:
        start = time.perf_counter()
        code, text = gpubench("bisect", "kstep", "--good", c[good], "--bad", c[bad],
                              "--kernels-dir", str(kernels), "--out",
                              str(root / f"bisect-{good + 1}-{bad + 1}"), *TIMING)
        wall = time.perf_counter() - start
        commits = bad - good
        limit = math.ceil(math.log2(commits)) + 2
        probes = probes_of(text)
        if culprit is None:
            ok = "no culprit" in text and "culprit:" not in text.replace("no culprit", "")
        else:
            ok = f"culprit: {c[culprit][:12]}" in text and probes <= limit and code == 13
        bars.append(f"{name}: {'MET' if ok else 'NOT MET'} ({probes} probes, bar {limit}, "
                    f"{commits} commits, exit {code}, {wall:.0f} s)")
    return bars


def timed_runs(kernels: Path, repo: Path, commits: list[str], root: Path,
               hog_from: int | None = None) -> dict:
    """One `gpubench run kstep` per commit (checked out first), with its own run index and
    history store; from `hog_from` on, with another process's matmuls on the GPU."""
    env = {**os.environ, "GPUBENCH_RUN_INDEX": str(root / "runs.json"), "COLUMNS": "160"}
    root.mkdir(parents=True, exist_ok=True)
    for n, sha in enumerate(commits):
        git(repo, "checkout", "-q", sha)
        hog = None
        if hog_from is not None and n >= hog_from:
            hog = subprocess.Popen([sys.executable, "-c", HOG])
            time.sleep(3)
        try:
            gpubench("run", "kstep", "--kernels-dir", str(kernels), "--out",
                     str(root / f"run{n + 1}"), *TIMING, env=env)
        finally:
            if hog is not None:
                hog.kill()
                hog.wait()
    return env


HOG = ("import torch\na = torch.randn(8192, 8192, device='cuda')\n"
       "while True:\n    a @ a\n    torch.cuda.synchronize()\n")


def part_confirm(root: Path) -> list[str]:
    kernels, c = kstep_repo(root)
    repo = kernels.parent
    bars = []
    real = root / "real"  # commits 7..16: the +4.9% step at commit 12
    env = timed_runs(kernels, repo, c[6:], real)
    code, text = sh([sys.executable, "-m", "gpubench", "history", "kstep", "--check",
                     "--confirm"], env=env)
    met = code == 13 and "confirmed: +" in text
    bars.append(f"real step confirmed: {'MET' if met else 'NOT MET'} (exit {code})")
    # commits 5..11 hold one code; eight runs (11 twice): five alone, then three beside the
    # hog, whose step (commit 9 -> 10) is other work on the GPU, not the code
    false = root / "false"
    env = timed_runs(kernels, repo, [*c[4:11], c[10]], false, hog_from=5)
    code, text = sh([sys.executable, "-m", "gpubench", "history", "kstep", "--check",
                     "--confirm"], env=env)
    flagged = "not confirmed" in text
    bars.append(f"planted false alarm refused: {'MET' if code == 0 and flagged else 'NOT MET'} "
                f"(exit {code}; {'flagged, then not confirmed' if flagged else 'not flagged'})")
    git(repo, "checkout", "-q", c[-1])
    return bars


def part_explain(root: Path) -> list[str]:
    sides = {}
    for side, keep in (("base", 0), ("new", 96)):
        folder = root / side / "chase"
        folder.mkdir(parents=True)
        (folder / "spec.py").write_text(CHASE_SPEC)
        (folder / "chase.cu").write_text(CHASE_CU.format(keep=keep))
        (folder / "chase.cpp").write_text(CHASE_CPP)
        sides[side] = folder
    code, text = gpubench("ab", "chase", "--base", str(sides["base"]), "--new",
                          str(sides["new"]), "--explain", "--out", str(root / "ab-explain"),
                          *TIMING)
    table = text.split("why chase", 1)[-1].splitlines()
    first = [line.strip() for line in table if line.strip()][2:6]  # title, header, rule
    ok = any("registers per thread" in line for line in first) and \
        any("occupancy" in line for line in first)
    return [f"explain: registers and occupancy in the first rows: {'MET' if ok else 'NOT MET'}"
            f" (ab exit {code})"]


PARTS = {"bisect": part_bisect, "confirm": part_confirm, "explain": part_explain}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("parts", nargs="+", choices=sorted(PARTS))
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="gpubench-bisect-"))
    bars = []
    for part in args.parts:
        bars += PARTS[part](out / part)
    print("\n".join(["", "== bars", *bars]))
    return 0 if all("NOT MET" not in b for b in bars) else 1


if __name__ == "__main__":
    sys.exit(main())
