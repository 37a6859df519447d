"""Does -lineinfo change the machine code gpubench times? Compile-only check, no GPU needed.

    python scripts/lineinfo_sass_check.py [SOURCE.cu ...] [--arch sm_90]

gpubench builds every CUDA source with -lineinfo (build/flags.py), so that ncu can pin its hints
to source lines. Line info is meant to be metadata only (a line table beside the code, unlike
-G, which turns optimization off). This compiles each source (default: the shipped
kernels/*/*.cu) as gpubench does, with its `#line` directive, -O3 and torch's nvcc flags, once
with and once without -lineinfo, to a cubin, and compares the SASS `cuobjdump -sass` prints
of every function (each instruction with its address and encoding), less any line-info
comments. What -lineinfo adds lives in sections the GPU never loads (.debug_line,
.nv_debug_line_sass), so the cubin grows and the code does not. Prints one verdict a
function; exits 0 when all are identical, 1 when any differs, 2 when nvcc or cuobjdump is
missing (cuobjdump: on PATH, else the copy the triton wheel ships).
"""

from __future__ import annotations

import argparse
import importlib.util
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from torch.utils.cpp_extension import COMMON_NVCC_FLAGS

from gpubench.build.diagnostics import line_directive
from gpubench.build.sources import INCLUDE_DIR

REPO = Path(__file__).resolve().parent.parent
# The architecture of the project's H100 and H200 machines (gpubench/build: sm_90a there).
DEFAULT_ARCH = "sm_90"
# What gpubench adds to every CUDA build (build/flags.py, cuda_cflags, less -lineinfo);
# load_inline adds COMMON_NVCC_FLAGS (no implicit half conversions, relaxed constexpr).
# -lineinfo is the one flag that varies here.
GPUBENCH_FLAGS = ("-O3",)
# cuobjdump interleaves source locations with the code when a cubin has line info
# ('//## File "...", line 12'); those are the difference -lineinfo is expected to make.
LINE_COMMENT = re.compile(r"^\s*//## File ")
FUNCTION = re.compile(r"^\s*Function : (\S+)")
# A compile of one shipped kernel file takes a few seconds; this bounds a stuck one.
COMPILE_TIMEOUT_S = 300


def find_cuobjdump() -> str | None:
    """cuobjdump on PATH, else the copy the triton wheel ships (a CUDA toolkit trimmed to
    nvcc, like this project's CPU machines, has none of its own)."""
    found = shutil.which("cuobjdump")
    spec = importlib.util.find_spec("triton")
    if found or spec is None or not spec.submodule_search_locations:
        return found
    bundled = Path(spec.submodule_search_locations[0]) / "backends" / "nvidia" / "bin"
    return shutil.which("cuobjdump", path=str(bundled))


def compile_cubin(nvcc: str, source: Path, arch: str, lineinfo: bool, out: Path) -> Path:
    """`source` as gpubench compiles it (its text after a `#line 1 "<path>"`), to a cubin."""
    prefixed = out / f"{source.stem}.cu"
    prefixed.write_text(line_directive(str(source), source.read_text()))
    cubin = out / f"{source.stem}{'_lineinfo' if lineinfo else ''}.cubin"
    argv = [nvcc, "-cubin", f"-arch={arch}", *GPUBENCH_FLAGS, *COMMON_NVCC_FLAGS,
            f"-I{INCLUDE_DIR}", f"-I{source.parent}", *(["-lineinfo"] if lineinfo else []),
            "-o", str(cubin), str(prefixed)]
    subprocess.run(argv, check=True, capture_output=True, text=True, timeout=COMPILE_TIMEOUT_S)
    return cubin


def sass_by_function(cuobjdump: str, cubin: Path) -> tuple[dict[str, list[str]], int]:
    """Function name -> its SASS lines without line-info comments, and how many such
    comments there were."""
    text = subprocess.run([cuobjdump, "-sass", str(cubin)], check=True, capture_output=True,
                          text=True, timeout=COMPILE_TIMEOUT_S).stdout
    functions: dict[str, list[str]] = {}
    current: list[str] | None = None
    comments = 0
    for line in text.splitlines():
        if LINE_COMMENT.match(line):
            comments += 1
            continue
        found = FUNCTION.match(line)
        if found:
            current = functions.setdefault(found[1], [])
        elif current is not None and line.strip():
            current.append(line.strip())
    return functions, comments


def compare(source: Path, arch: str, nvcc: str, cuobjdump: str) -> bool:
    """Print one line a function of `source`; True when every function's SASS is the same."""
    with tempfile.TemporaryDirectory() as folder:
        plain = compile_cubin(nvcc, source, arch, False, Path(folder))
        with_info = compile_cubin(nvcc, source, arch, True, Path(folder))
        before, _ = sass_by_function(cuobjdump, plain)
        after, comments = sass_by_function(cuobjdump, with_info)
        sizes = plain.stat().st_size, with_info.stat().st_size
    same = before == after
    name = source.relative_to(REPO) if source.is_relative_to(REPO) else source
    print(f"{name} ({arch}): {len(before)} functions; cubin {sizes[0]} -> {sizes[1]} bytes "
          f"with -lineinfo; {comments} line-info comments in its SASS listing")
    for function in sorted(set(before) | set(after)):
        a, b = before.get(function, []), after.get(function, [])
        verdict = "identical" if a == b else "DIFFERENT"
        print(f"  {verdict}: {function} ({len(a)} vs {len(b)} SASS lines)")
    return same


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sources", nargs="*", type=Path,
                        default=sorted((REPO / "kernels").glob("*/*.cu")))
    parser.add_argument("--arch", default=DEFAULT_ARCH)
    args = parser.parse_args(argv)
    nvcc, cuobjdump = shutil.which("nvcc"), find_cuobjdump()
    if not nvcc or not cuobjdump:
        print("needs nvcc on PATH and cuobjdump (on PATH, or the copy Triton ships)",
              file=sys.stderr)
        return 2
    results = [compare(source.resolve(), args.arch, nvcc, cuobjdump) for source in args.sources]
    print("SASS identical with and without -lineinfo" if all(results)
          else "SASS DIFFERS with -lineinfo")
    return 0 if all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
