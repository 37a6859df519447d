"""What a CUDA variant compiles: its build request, and its sources by the names its line
info uses.

Both the worker (which builds the variant) and the parent (which shows a profiler's or
compute-sanitizer's findings beside the lines they name) need them, so they live with
the families rather than in either process's code.
"""

from __future__ import annotations

from pathlib import Path

from gpubench.build.sources import BuildRequest, read_sources
from gpubench.families.spec import CudaVariant, Family, Machine


def build_request(family: Family, variant: CudaVariant, machine: Machine) -> BuildRequest:
    """One build per source set: every variant naming the same sources shares it."""
    sources = variant.sources_for(machine)
    siblings = [v for v in family.variants if isinstance(v, CudaVariant)
                and v.sources_for(machine) == sources and v.inline == variant.inline
                and (v.cuda_flags, v.cflags) == (variant.cuda_flags, variant.cflags)]
    # The variant itself too: one built with a tune config's -D flags has no sibling.
    functions = tuple(sorted({f for v in (*siblings, variant)
                              for f in (v.functions or (v.function,))}))
    if not variant.inline:
        cuda, cpp = sources
        return BuildRequest(family.name, family.directory, cuda, cpp, functions,
                            variant.cuda_flags, variant.cflags)
    cuda_files, cuda_texts = _files_and_texts(family.directory, sources[0], "cuda_sources")
    cpp_files, cpp_texts = _files_and_texts(family.directory, sources[1], "cpp_sources")
    return BuildRequest(family.name, family.directory, cuda_files, cpp_files, functions,
                        variant.cuda_flags, variant.cflags, cpp_texts=cpp_texts,
                        cuda_texts=cuda_texts, implicit_headers=True)


def source_texts(family: Family, variant: CudaVariant, machine: Machine) -> dict[str, str]:
    """{name in the build's #line directives: text} of a CUDA variant's sources: the names
    a compiler, ncu or compute-sanitizer reports lines under (a file's path, or the label
    of a source given as text), with the text those line numbers count in."""
    sources = read_sources(build_request(family, variant, machine))
    return {name: text for _, name, text in (*sources.cuda, *sources.cpp)}


def _files_and_texts(folder: Path, entries: tuple[str, ...], kind: str):
    """load_inline-style entries split into file names of the family folder and code: an
    entry is a file when it is one line naming a file that exists there. Code is labelled
    for compiler messages: 'spec.py: cuda_sources[0]'."""
    files, texts = [], []
    for index, entry in enumerate(entries):
        if "\n" not in entry and (folder / entry).is_file():
            files.append(entry)
        else:
            texts.append((f"{folder.name}/spec.py: {kind}[{index}]", entry))
    return tuple(files), tuple(texts)
