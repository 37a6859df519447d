"""Issue 30's GPU acceptance: leaderboard problems run as gpubench families.

  python3 scripts/leaderboard_acceptance.py [--ext .ext] [--out DIR] [--small]
                                           [--unpicked N [--seed S]] [--sections abcd] [--only P,..]
                                           [-- TIMING OPTIONS]

The problems are not in this repository: --ext EXT (default .ext in the repository root) holds
copies of both repositories' files, as they are fetched, unchanged:
  EXT/reference-kernels/problems/   `git archive HEAD problems | tar -x -C EXT/reference-kernels`
                                    in a clone of github.com/gpu-mode/reference-kernels
  EXT/KernelBench/level1..3/        KernelBench/ of github.com/ScalingIntelligence/KernelBench
A section whose files are missing stops the script with the path it looked at.

(a) every problem of reference-kernels' problems/pmpp_v2/ (EXT/reference-kernels/problems/
    pmpp_v2/*/task.yml) with the solutions shipped beside it: solutions/correct/* must PASS
    at every shape, solutions/wrong/* at none, except where the problem's own check decides
    otherwise on the leaderboard too (UPSTREAM: expected as it does there, the reason
    printed); and gpubench's own submissions for a problem (tests/leaderboard/pmpp_v2/
    NAME/solutions/: vectorsum's 0-dim and (1,)-slot returns, issue 60) beside them;
(b) a few KernelBench level-1 and level-2 problems (.ext/KernelBench/levelN/*.py) with a
    correct and a wrong ModelNew each (tests/leaderboard/kernelbench/);
(c) `compare` between two submissions' runs (two attempts saved as submission.py, the way
    the leaderboard names them) and `ncu` on one submission;
(d) problems nobody picked: --unpicked N draws N problems of each repository at random (the
    seed is printed; --seed S repeats a draw) from those this script does not name:
    reference-kernels folders outside pmpp_v2 (not the vendor-specific nvidia/ and amd*/
    ones) run with the `submission.py` they ship, KernelBench level 1-3 files with their own
    Model as ModelNew. What they are checked for: the problem loads and its reference runs
    (a reference that does not PASS against itself is a surprise); the submission's status
    is reported as it came.
Prints one compact table (a line per problem and variant: expected, PASS count over the
shapes, first failure) and each problem's leaderboard score line; exit 1 on a surprise."""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SOLUTIONS = REPO / "tests" / "leaderboard" / "kernelbench"
# KernelBench problems with the shape they run at: their own, or one that keeps this step
# short (19_ReLU and 23_Softmax default to 4096 x 393216 floats, 6 GiB a tensor).
KERNELBENCH = {
    "level1/1_Square_matrix_multiplication_": None,
    "level1/19_ReLU": "batch_size=4096,dim=65536",
    "level1/23_Softmax": "batch_size=4096,dim=4096",
    "level2/12_Gemm_Multiply_LeakyReLU": None,
    "level2/76_Gemm_Add_ReLU": None,
}
# --small: shapes a CPU dry run of this script gets through in seconds
SMALL = {
    "level1/1_Square_matrix_multiplication_": "N=128",
    "level1/19_ReLU": "batch_size=64,dim=1024",
    "level1/23_Softmax": "batch_size=64,dim=512",
    "level2/12_Gemm_Multiply_LeakyReLU": "batch_size=32,in_features=256,out_features=128",
    "level2/76_Gemm_Add_ReLU": "batch_size=32,in_features=256,out_features=8192",
}
FAST = ["--warmup", "10", "--min-time", "10", "--max-time", "60"]
# Shipped solutions whose verdict is their problem's own doing, the same under the
# leaderboard's eval.py (docs/journal/perf-notes.md, "Leaderboard problems"): problem ->
# {variant: (expect, why)}; "either" is reported, never a surprise.
UPSTREAM = {
    "vectorsum_py": {"pytorch": ("never", "returns its (1,) output slot; ref_kernel's sum is "
                                 "0-dim and the check compares shapes first: SIZE MISMATCH")},
    "conv2d_py": {"ref": ("either", "F.conv2d outside the reference's DeterministicContext: "
                          "TF32 misses rtol 1e-3 (PASS with NVIDIA_TF32_OVERRIDE=0)")},
}
# gpubench's own submissions for pmpp_v2 problems: OWN/NAME/solutions/{correct,wrong}/*.py
OWN = REPO / "tests" / "leaderboard" / "pmpp_v2"


def gpubench(*args: str, log: Path) -> tuple[int, str]:
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "gpubench", *args], capture_output=True,
                          text=True)
    text = done.stdout + done.stderr
    log.write_text(text)
    print(f"  [{time.perf_counter() - start:5.1f} s, exit {done.returncode}] gpubench "
          f"{' '.join(args)[:150]}", flush=True)
    return done.returncode, text


def verdicts(run_dir: Path) -> dict[str, list[dict]]:
    rows: dict[str, list[dict]] = {}
    try:
        results = json.loads((run_dir / "results.json").read_text())["results"]
    except (OSError, ValueError, KeyError):
        return rows
    for row in results:
        rows.setdefault(row["variant"], []).append(row)
    return rows


def table_rows(problem: str, rows: dict, expect: dict[str, str]) -> list[tuple]:
    lines = []
    for variant, results in rows.items():
        passed = sum(r["status"] == "ok" for r in results)
        wanted = expect.get(variant, "PASS")
        good = wanted == "either" or (passed == len(results) if wanted == "PASS"
                                      else passed == 0)
        failed = next((r for r in results if r["status"] != "ok"), None)
        why = "" if failed is None else f"{failed['status']}: {(failed.get('error') or '')}"
        lines.append((problem, variant, wanted, f"{passed}/{len(results)}",
                      "ok" if good else "SURPRISE", " ".join(why.split())[:90]))
    return lines


def score_lines(text: str) -> list[str]:
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if " score (" in line), None)
    return [] if start is None else [line for line in lines[start:start + 8]
                                     if line.strip() and "wall time" not in line]


def pmpp(ext: Path, out: Path, timing: list[str], only: set[str]) -> tuple[list, list]:
    rows, scores = [], []
    root = required(ext / "reference-kernels" / "problems" / "pmpp_v2")
    for problem in sorted(p for p in root.iterdir() if (p / "task.yml").is_file()
                          and (not only or p.name in only)):
        expect, args = {}, []
        for folder in (problem, OWN / problem.name):
            for kind in ("correct", "wrong"):
                for file in sorted((folder / "solutions" / kind).glob("*.py")):
                    expect[file.stem] = "PASS" if kind == "correct" else "never"
                    args += ["--submission", str(file)]
        expect.update({variant: wanted for variant, (wanted, _why)
                       in UPSTREAM.get(problem.name, {}).items()})
        run_dir = out / problem.name
        _, text = gpubench("run", "--problem", str(problem), *args, *timing, "--out",
                           str(run_dir), "--force", log=out / f"{problem.name}.log")
        rows += table_rows(problem.name, verdicts(run_dir), expect)
        scores += score_lines(text)
    return rows, scores


def upstream_notes(only: set[str]) -> list[str]:
    """Why each UPSTREAM row is expected as it is (printed under the table)."""
    return [f"upstream {problem}/{variant} ({wanted}): {why}"
            for problem, variants in sorted(UPSTREAM.items()) if not only or problem in only
            for variant, (wanted, why) in variants.items()]


def required(path: Path) -> Path:
    """`path` if it is there; else the script stops, naming it and how it is made."""
    if not path.is_dir():
        sys.exit(f"{path}: not found; --ext must hold the repositories' files (see "
                 f"{Path(__file__).name}'s docstring)")
    return path


def kernelbench(ext: Path, out: Path, timing: list[str], small: bool) -> tuple[list, list]:
    rows, scores = [], []
    required(ext / "KernelBench")
    for problem, shape in (SMALL if small else KERNELBENCH).items():
        name = Path(problem).name
        correct, wrong = SOLUTIONS / f"{name}_correct.py", SOLUTIONS / f"{name}_wrong.py"
        run_dir = out / name
        extra = ["--shape", shape] if shape else []
        _, text = gpubench("run", "--problem", str(ext / "KernelBench" / f"{problem}.py"),
                           "--submission", str(correct), "--submission", str(wrong), *extra,
                           *timing, "--out", str(run_dir), "--force", log=out / f"{name}.log")
        rows += table_rows(name, verdicts(run_dir), {wrong.stem: "never"})
        scores += score_lines(text)
    return rows, scores


def compare_and_ncu(ext: Path, out: Path, timing: list[str]) -> list[str]:
    """Two attempts at vectoradd, each saved as submission.py (so both runs' variant is
    `submission` and compare joins them), then ncu and sanitize on one."""
    problem = ext / "reference-kernels" / "problems" / "pmpp_v2" / "vectoradd_py"
    lines = []
    for attempt, source in (("a", "submission_triton.py"), ("b", "submission_cuda_inline.py")):
        folder = out / "attempts" / attempt
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copy(problem / "solutions" / "correct" / source, folder / "submission.py")
        gpubench("run", "--problem", str(problem), "--submission", str(folder / "submission.py"),
                 *timing, "--out", str(out / f"attempt-{attempt}"), "--force",
                 log=out / f"attempt-{attempt}.log")
    code, text = gpubench("compare", str(out / "attempt-a"), str(out / "attempt-b"),
                          log=out / "compare.log")
    lines += [f"compare (exit {code}):", *[f"  {line}" for line in text.splitlines()[-12:]]]
    one = ["--problem", str(problem), "--submission", str(out / "attempts" / "a" /
                                                          "submission.py")]
    code, text = gpubench("ncu", *one, "--variant", "submission", "--out", str(out / "ncu"),
                          log=out / "ncu.log")
    lines += [f"ncu (exit {code}):", *[f"  {line}" for line in text.splitlines()[:14]]]
    code, text = gpubench("sanitize", *one, "--variant", "submission", "--out",
                          str(out / "sanitize"), log=out / "sanitize.log")
    lines += [f"sanitize (exit {code}): {' '.join(text.split()[-30:])}"]
    return lines


# reference-kernels' folders for one vendor's hardware (nvfp4 on Blackwell, MI300 problems):
# not runnable on the lent H200, so never drawn.
VENDOR_ONLY = ("nvidia", "amd")


def unpicked_problems(ext: Path, count: int, seed: int) -> tuple[list[Path], list[Path]]:
    """`count` reference-kernels folders and `count` KernelBench files, drawn with `seed`
    from those the sections above do not name."""
    draw = random.Random(seed)
    root = ext / "reference-kernels" / "problems"
    folders = sorted(p.parent for p in root.glob("*/*/task.yml")
                     if p.parent.parent.name != "pmpp_v2"
                     and not p.parent.parent.name.startswith(VENDOR_ONLY))
    named = {f"{problem}.py" for problem in KERNELBENCH}
    files = sorted(p for p in (ext / "KernelBench").glob("level[123]/*.py")
                   if f"{p.parent.name}/{p.name}" not in named)
    return (draw.sample(folders, min(count, len(folders))),
            draw.sample(files, min(count, len(files))))


def unpicked(ext: Path, out: Path, timing: list[str], count: int, seed: int) -> list:
    print(f"(d) problems nobody picked: {count} of each repository, seed {seed}", flush=True)
    folders, files = unpicked_problems(ext, count, seed)
    rows = []
    for problem in folders + files:
        name = f"{problem.parent.name}/{problem.name}"
        run_dir = out / "unpicked" / name.replace("/", "-")
        if problem.is_dir():
            args = ["--submission", str(problem / "submission.py")]
        else:  # the problem's own Model as the solution: gpubench's loader, not a kernel
            solution = out / "unpicked" / f"{problem.stem}_model_as_new.py"
            solution.parent.mkdir(parents=True, exist_ok=True)
            solution.write_text(problem.read_text() + "\n\nModelNew = Model\n")
            args = ["--submission", str(solution)]
        code, text = gpubench("run", "--problem", str(problem), *args, *timing, "--out",
                              str(run_dir), "--force", log=out / f"unpicked-{problem.stem}.log")
        found = verdicts(run_dir)
        if not found:  # not loaded or not run: the first lines of gpubench's message
            why = " ".join(" ".join(text.split()).split(" ")[:24])
            rows.append((name, "-", "loads", "-", f"exit {code}", why[:90]))
            continue
        for line in table_rows(name, found, {}):
            reference = line[1] == "reference"
            rows.append((*line[:2], "PASS" if reference else "as is", line[3],
                         line[4] if reference else "-", line[5]))
    return rows


def option(argv: list[str], name: str, default: str) -> str:
    """The value after `name` in argv, or `default` when `name` is absent."""
    if name not in argv:
        return default
    at = argv.index(name) + 1
    if at >= len(argv):
        sys.exit(f"{name} needs a value")
    return argv[at]


def main() -> int:
    argv = sys.argv[1:]
    timing = argv[argv.index("--") + 1:] if "--" in argv else FAST
    argv = argv[:argv.index("--")] if "--" in argv else argv
    ext = Path(option(argv, "--ext", str(REPO / ".ext")))
    out = Path(option(argv, "--out", "leaderboard-out"))
    out.mkdir(parents=True, exist_ok=True)
    # --sections: a subset of a,b,c,d (one device call may not hold all four)
    sections = option(argv, "--sections", "abcd")
    # --only: some of pmpp_v2's problems (a rerun of those a change touched)
    only = set(filter(None, option(argv, "--only", "").split(",")))
    rows, scores = pmpp(ext, out, timing, only) if "a" in sections else ([], [])
    more, more_scores = (kernelbench(ext, out, timing, "--small" in argv)
                         if "b" in sections else ([], []))
    extra = compare_and_ncu(ext, out, timing) if "c" in sections else []
    count = int(option(argv, "--unpicked", "0"))
    seed = int(option(argv, "--seed", str(time.time_ns() % 10**6)))
    more += unpicked(ext, out, timing, count, seed) if count and "d" in sections else []
    header = ("problem", "variant", "expect", "PASS", "verdict", "first failure")
    widths = [max(len(str(r[i])) for r in [header, *rows, *more]) for i in range(6)]
    for row in [header, *rows, *more]:
        print("  ".join(str(cell).ljust(width) for cell, width in zip(row, widths, strict=True)))
    notes = upstream_notes(only) if "a" in sections else []
    print("\n".join(["", *notes, "", *scores, *more_scores, "", *extra]))
    surprises = [r for r in rows + more if r[4] != "ok"]
    print(f"\n{len(surprises)} surprise(s) in {len(rows + more)} rows")
    return 1 if surprises else 0


if __name__ == "__main__":
    sys.exit(main())
