"""compute-sanitizer command lines for `gpubench sanitize`. Pure: builds argv, runs nothing.

Checked on the H200 with compute-sanitizer 2025.3.1 (../shared/fixtures/README.md):
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

TOOLS = ("memcheck", "racecheck", "initcheck", "synccheck")
# Exit status asked of the tool when it found something; gpubench reads the XML anyway.
ERROR_EXITCODE = 86
# Records printed (and saved) per run: initcheck reports every thread of a bad launch
# (65,536 for a 64 Ki-element read); a few hundred show every line while keeping the
# XML small and the tool fast. `summarize` counts what it saw, and the view says when
# the limit was reached.
PRINT_LIMIT = 1000
ALLOCATOR_OFF = {"PYTORCH_NO_CUDA_MEMORY_CACHING": "1"}


def sanitizer_argv(executable: str, tool: str, xml_path: str, target: list[str]) -> list[str]:
    """compute-sanitizer running `target` under one tool, records saved as XML."""
    if tool not in TOOLS:
        raise ValueError(f"unknown compute-sanitizer tool {tool!r}")
    return [executable, "--tool", tool, "--xml", "--save", xml_path,
            "--print-limit", str(PRINT_LIMIT), "--error-exitcode", str(ERROR_EXITCODE),
            *target]
