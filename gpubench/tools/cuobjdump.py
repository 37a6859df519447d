"""A CUDA build's kernel resources, from `cuobjdump --dump-resource-usage` on its .so: what
`gpubench tune` shows for a CUDA config (registers per thread, static shared memory).

Its lines (CUDA 12):
     Function _Z13square_kernelIfEvPKT_PS0_l:
      REG:8 STACK:0 SHARED:0 LOCAL:0 CONSTANT[0]:380 TEXTURE:0 SURFACE:0 SAMPLER:0
A build holds a kernel per dtype (and per template argument), and which of them a call
runs is not known here: the largest of each count stands for the build (an upper bound).
No cuobjdump, or nothing it can read: None, and the table says "-".
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

from gpubench.errors import ToolMissing
from gpubench.tools.find import find_tool, run_tool

FUNCTION = re.compile(r"^\s*Function\s+(\S+?):\s*$")
COUNTS = re.compile(r"\b(REG|SHARED|LOCAL):(\d+)")
# cuobjdump reads a small .so in well under a second; 30 s is a hung tool.
TIMEOUT_S = 30.0


def parse_resource_usage(text: str) -> dict[str, dict[str, int]]:
    """{mangled kernel name: {"REG": n, "SHARED": bytes, "LOCAL": bytes}}."""
    kernels, current = {}, None
    for line in text.splitlines():
        named = FUNCTION.match(line)
        if named:
            current = named.group(1)
            continue
        counts = dict((k, int(v)) for k, v in COUNTS.findall(line))
        if current and "REG" in counts:
            kernels[current] = counts
            current = None
    return kernels


def build_resources(build_dir: str | None) -> dict | None:
    """{"registers", "shared_bytes", "spill_bytes"} for a build folder, the largest over its
    kernels; None when unknown."""
    if not build_dir:
        return None
    libraries = sorted(Path(build_dir).glob("*.so"))
    try:
        tool = find_tool("cuobjdump")
    except ToolMissing:
        return None
    kernels = {}
    with tempfile.TemporaryDirectory() as folder:
        for library in libraries:
            done = run_tool([tool, "--dump-resource-usage", str(library)], TIMEOUT_S,
                            Path(folder) / "cuobjdump.log")
            if done.returncode == 0:
                kernels.update(parse_resource_usage(done.output))
    if not kernels:
        return None
    return {"registers": max(k["REG"] for k in kernels.values()),
            "shared_bytes": max(k.get("SHARED", 0) for k in kernels.values()),
            "spill_bytes": max(k.get("LOCAL", 0) for k in kernels.values())}
