"""compute-sanitizer command lines for `gpubench sanitize`. Pure: builds argv, runs nothing.

Checked on the H200 with compute-sanitizer 2025.3.1 (tests/fixtures/sanitizer/README.md):
- `--xml --save FILE` writes structured records; `--xml` takes no value (`--xml yes` is
  refused, exit 255, "extra yes detected").
- racecheck exits 0 even when it reports hazards, so findings come from the XML, never
  from the exit status; `--error-exitcode` makes the others say so too.
- PyTorch's caching allocator hands out slices of larger blocks: a one-past-the-end
  write lands inside a valid allocation and memcheck reports 0 errors. With
  PYTORCH_NO_CUDA_MEMORY_CACHING=1 every tensor is its own cudaMalloc and the same write
  is "1 bytes after the nearest allocation".
"""

from __future__ import annotations

from gpubench.tools.sanitizer.log import TOOLS

# Exit status asked of the tool when it found something; gpubench reads the XML anyway.
ERROR_EXITCODE = 86
# Records printed (and saved) per run: initcheck reports every thread of a bad launch
# (65,536 for a 64 Ki-element read, each record ~6 KB of XML); 1000 show every distinct
# line a kernel of a few hundred lines can have, in a ~6 MB file. The count column is then
# a lower bound (the view's caption says the tool stops at its print limit).
PRINT_LIMIT = 1000
ALLOCATOR_OFF = {"PYTORCH_NO_CUDA_MEMORY_CACHING": "1"}
# memcheck only sees accesses outside every allocation. gpubench's worker allocates inputs,
# references and the output one after another, and cudaMalloc packs them back to back, so
# a write just past `out` lands in the next tensor: on the H200 memcheck found nothing in
# a kernel writing y[n] (a lone tensor, as in the recorded fixture, has free space after
# it). --padding leaves this many unallocated bytes after each allocation: 64 KiB covers
# an overrun by a whole 256-thread block of 8-byte elements 32 times over.
MEMCHECK_PADDING = 64 << 10


def sanitizer_argv(executable: str, tool: str, xml_path: str, target: list[str]) -> list[str]:
    """compute-sanitizer running `target` under one tool, records saved as XML."""
    if tool not in TOOLS:
        raise ValueError(f"unknown compute-sanitizer tool {tool!r}")
    padding = ["--padding", str(MEMCHECK_PADDING)] if tool == "memcheck" else []
    return [executable, "--tool", tool, *padding, "--xml", "--save", xml_path,
            "--print-limit", str(PRINT_LIMIT), "--error-exitcode", str(ERROR_EXITCODE),
            *target]
