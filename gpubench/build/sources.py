"""What one build compiles: the request (a family folder's sources and the functions they
export), and the sources and headers read once, so that the key hashes exactly the text that
is compiled and a header changed during a build can be told."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

# gpubench's own headers (gpubench/include), on every build's include path.
INCLUDE_DIR = Path(__file__).resolve().parent.parent / "include"
HEADER_SUFFIXES = (".h", ".hpp", ".cuh", ".inl")


@dataclass(frozen=True)
class BuildRequest:
    """One extension: the sources of a family folder and the functions it exports.

    Sources may also be given as texts, like load_inline's cpp_sources/cuda_sources:
    (label, text) pairs, compiled after the files of the same kind; the label names the
    text in compiler errors (`#line 1 "<label>"`), e.g. "spec.py: cuda_sources[0]".
    `implicit_headers` builds exactly as load_inline does by default: torch/types.h,
    cuda.h and cuda_runtime.h are prepended to the CUDA sources (code that uses
    torch::Tensor inside cuda_sources needs them; they cost ~tens of seconds of nvcc)."""

    family: str
    folder: Path
    cuda_sources: tuple[str, ...]
    cpp_sources: tuple[str, ...]
    functions: tuple[str, ...]
    cuda_flags: tuple[str, ...] = ()
    cflags: tuple[str, ...] = ()
    cpp_texts: tuple[tuple[str, str], ...] = ()
    cuda_texts: tuple[tuple[str, str], ...] = ()
    implicit_headers: bool = False

    @property
    def with_cuda(self) -> bool:
        return bool(self.cuda_sources or self.cuda_texts)


@dataclass(frozen=True)
class Sources:
    """What one build compiles, read once: the key hashes exactly the text that is compiled.
    Each source is (name in the key, name in #line, text); each header (name in the key,
    path, sha256)."""

    cpp: tuple[tuple[str, str, str], ...]
    cuda: tuple[tuple[str, str, str], ...]
    headers: tuple[tuple[str, Path, str], ...]


def read_sources(request: BuildRequest) -> Sources:
    """Source files and texts in load_inline order (files first), and every header a source
    could include from the family folder (recursively) or gpubench/include."""
    folder = request.folder

    def files(names: tuple[str, ...]) -> list[tuple[str, str, str]]:
        return [(f"file:{n}", str(folder / n), (folder / n).read_text()) for n in names]

    def texts(pairs: tuple[tuple[str, str], ...]) -> list[tuple[str, str, str]]:
        return [(f"text:{label}", label, text) for label, text in pairs]

    return Sources(cpp=tuple(files(request.cpp_sources) + texts(request.cpp_texts)),
                   cuda=tuple(files(request.cuda_sources) + texts(request.cuda_texts)),
                   headers=tuple(_headers(folder, "family")
                                 + _headers(INCLUDE_DIR, "include")))


def _headers(root: Path, label: str) -> list[tuple[str, Path, str]]:
    """(label/relative path, path, sha256) of the headers below `root`, hidden folders and
    __pycache__ skipped. A family folder holds a few files: a few ms to read them all."""
    if not root.is_dir():
        return []
    found = []
    for path in sorted(root.rglob("*")):
        parts = path.relative_to(root).parts
        if path.suffix not in HEADER_SUFFIXES or not path.is_file() or any(
                part.startswith(".") or part == "__pycache__" for part in parts[:-1]):
            continue
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        found.append((f"{label}/{'/'.join(parts)}", path, digest))
    return found


def header_hashes(headers: tuple[tuple[str, Path, str], ...]) -> dict[str, str]:
    """{realpath: sha256}: the form ninja's deps log can be compared with."""
    return {os.path.realpath(path): sha for _, path, sha in headers}


def headers_now(request: BuildRequest) -> dict[str, str]:
    return header_hashes(tuple(_headers(request.folder, "family")
                                + _headers(INCLUDE_DIR, "include")))
