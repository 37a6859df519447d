"""How a variant's code was made ready for a point: compiled or cached, where, how long,
and what the table should say of it. One record from the worker (or the build phase's
builder) to the row and results.json, read by attribute."""

from __future__ import annotations

from dataclasses import dataclass, fields, replace

from gpubench.codec import Record


@dataclass(frozen=True)
class BuildInfo(Record):
    compile_s: float | None = None  # None: nothing compiled for it (a failure before)
    cached: bool | None = None  # None: not a build of gpubench's (torch, Triton's JIT)
    extension: str | None = None  # the CUDA extension's module name (content-hashed)
    build_dir: str | None = None
    note: str | None = None  # said under the table (a slow build's hint, a tuned config)
    allocates_output: bool = False  # a returning variant: its time includes the allocation
    log: str | None = None  # a failed build's whole compiler log (a file)
    config: dict | None = None  # the config a tuned variant ran (run/worker/tune_apply.py)
    mode: str | None = None  # the compiled row's torch.compile mode
    reused_in_process: bool = False  # the worker had it loaded from an earlier point
    steps_s: dict | None = None  # a CUDA build's steps (request, hash, compile, import)
    build_phase: bool = False  # compiled by the build phase, before any worker needed it

    def overlaid(self, other: BuildInfo) -> BuildInfo:
        """This build with what `other` says beyond its defaults (a worker's notes stay
        where the build phase says nothing)."""
        said = {f.name: getattr(other, f.name) for f in fields(other)
                if getattr(other, f.name) != f.default}
        return replace(self, **said)
