"""The two hashes that name a build. `content_key`: everything that changes the binary (the
published folder's name: equal keys mean a reusable build). `stable_key`: everything that
decides the compiler's command lines but not the sources' contents (the work folder's name,
and the module name compiled into the .so, which must survive an edit)."""

from __future__ import annotations

import functools
import hashlib
import os
import re
import sys

from gpubench.build.declarations import blank_comments
from gpubench.build.nvml import each_gpu
from gpubench.build.sources import BuildRequest, Sources, read_sources

# Bump when the way builds are made changes, to invalidate every cached build.
# 2: the marker records the .so's size and sha256, checked before every import.
# 3: incremental work folders; the marker names the module; headers found recursively.
# 4: the split layout (build/layout.py), nvcc's host code at -O1, sources keyed without
#    their comments.
BUILD_SCHEMA = 4


class _Digest:
    """sha256 over labelled fields; the lengths keep ("ab", "c") apart from ("a", "bc")."""

    def __init__(self, schema: int):
        self.digest = hashlib.sha256()
        self.add("schema", str(schema))

    def add(self, label: str, data: bytes | str) -> None:
        data = data.encode() if isinstance(data, str) else data
        self.digest.update(f"{label}:{len(data)}:".encode())
        self.digest.update(data)

    def add_request_shape(self, request: BuildRequest, toolchain: dict[str, str]) -> None:
        """Everything but the contents: toolchain, names, labels, functions, flags."""
        for key in sorted(toolchain):
            self.add(f"tool.{key}", toolchain[key])
        for attr in ("cuda_sources", "cpp_sources", "functions", "cuda_flags", "cflags"):
            self.add(attr, "\0".join(getattr(request, attr)))
        for attr in ("cuda_texts", "cpp_texts"):
            self.add(f"{attr}.labels", "\0".join(label for label, _ in getattr(request, attr)))
        self.add("implicit_headers", str(request.implicit_headers))

    def hexdigest(self) -> str:
        return self.digest.hexdigest()


def content_key(request: BuildRequest, toolchain: dict[str, str],
                sources: Sources | None = None) -> str:
    """A hash of everything that changes the binary; equal keys mean reusable builds.
    Not the folder's path: two copies of a family share their builds."""
    sources = read_sources(request) if sources is None else sources
    digest = _Digest(BUILD_SCHEMA)
    digest.add_request_shape(request, toolchain)
    for kind, entries in (("cuda", sources.cuda), ("cpp", sources.cpp)):
        for index, (name, _, text) in enumerate(entries):
            # Comments do not reach the compiler: an edit of comments alone that adds no
            # line rebuilds nothing (declarations.blank_comments says why that is exact).
            # Trailing blank lines, too: nothing after the last token reaches the compiler.
            digest.add(f"{kind}.{index}.{name}", (blank_comments(text) or text).rstrip())
    for name, _, sha in sources.headers:
        digest.add(f"header.{name}", sha)
    return digest.hexdigest()


def stable_key(request: BuildRequest, toolchain: dict[str, str]) -> str:
    """A hash of everything that decides the compiler's command lines, and nothing of the
    sources' contents: the name of the work folder where ninja keeps objects between
    edits. The folder's path counts (it is an -I flag)."""
    digest = _Digest(BUILD_SCHEMA)
    digest.add("family", request.family)
    digest.add("folder", os.path.abspath(request.folder))
    digest.add_request_shape(request, toolchain)
    return digest.hexdigest()


def _readable(request: BuildRequest, key: str) -> str:
    family = re.sub(r"\W", "_", request.family)
    return f"gb_{family}_{'cuda' if request.with_cuda else 'cpu'}_{key[:12]}"


def extension_name(request: BuildRequest, key: str) -> str:
    """The published build's name, from the content key: gb_matmul_cuda_1a2b3c4d5e6f."""
    return _readable(request, key)


def module_name(request: BuildRequest, stable: str) -> str:
    """The Python module name compiled into the .so, from the stable key: it must not
    change with the sources, or main.cpp (-DTORCH_EXTENSION_NAME) recompiles each time."""
    return _readable(request, stable)


def toolchain_facts(with_cuda: bool) -> dict[str, str]:
    """What besides the sources decides the binary: versions and the target GPU."""
    import torch
    from torch.utils import cpp_extension

    facts = {
        "torch": torch.__version__,
        "python": f"{sys.version_info.major}.{sys.version_info.minor}",
        "platform": sys.platform,
    }
    if with_cuda:
        major, minor = nvml_capability() or torch.cuda.get_device_capability()
        facts.update(
            cuda=str(torch.version.cuda),
            arch=f"sm_{major}{minor}",
            arch_list=os.environ.get("TORCH_CUDA_ARCH_LIST", ""),
            cuda_home=str(cpp_extension.CUDA_HOME),
        )
    return facts


@functools.cache
def nvml_capability() -> tuple[int, int] | None:
    """The GPUs' compute capability from NVML when every GPU it sees has the same one
    (None otherwise, or without NVML): a key is computed in the parent and in each
    builder, where torch's own answer would start CUDA (cuInit, ~1 s with 4 GPUs, beside
    the workers' starts on the same driver). Where GPUs differ, torch's device 0 decides,
    as before."""
    found = set(each_gpu(lambda nvml, gpu: tuple(nvml.nvmlDeviceGetCudaComputeCapability(gpu)))
                or ())
    return found.pop() if len(found) == 1 else None
