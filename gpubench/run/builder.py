"""A build phase's builder process: compiles C++/CUDA extensions for the parent, one at a
time, and runs nothing it builds.

Started as `python -m gpubench.run.builder --fd N` (worker_process.WorkerProcess with this
module). Jobs arrive as JSON lines on stdin ({"family", "family_dir", "variant",
"has_cuda", "has_triton"}); for each it loads the family's spec, makes the variant's build
request exactly as a worker would (families/sources.build_request, so the content key and
the cached build are the ones the worker then finds), builds through the cache
(build/compile.build_extension) and answers {"type": "built", "result": WorkerResult}:
OK with the build's seconds, or BUILD ERROR with the compiler's first errors, as a worker
would report them. The extension is imported here too (that is how build_extension
checks a build), but never called.

Why a process of its own: the parent must not import user extensions or hold compilers
(Ctrl-C kills this session, ninja and the compilers with it), and several of them build
side by side on the host's cores while the GPU workers measure. It runs at a lower CPU
priority (nice +10), so a worker launching kernels gets its core first, and a watchdog
kills its session when gpubench goes away, as a worker's does.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
from pathlib import Path

from gpubench.run.lanes.protocol import private_channel, send

# How much lower a builder's CPU priority is than a worker's (nice(2)'s scale, 0..19): a
# compile yields a core to a worker whose kernel launches would otherwise wait for it.
BUILDER_NICENESS = 10


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="gpubench.run.builder")
    parser.add_argument("--fd", type=int, required=True, help="descriptor for messages")
    args = parser.parse_args(argv)
    with contextlib.suppress(OSError):
        os.nice(BUILDER_NICENESS)
    from gpubench.run.lanes.processes import become_subreaper, start_watchdog

    become_subreaper()
    start_watchdog(os.getppid())
    fd = private_channel(args.fd)
    import torch  # noqa: F401  paid once per builder, before its first job

    send(fd, {"type": "hello", "pid": os.getpid(), "env": {}})
    families: dict[str, object] = {}
    while line := sys.stdin.readline():
        if line.strip():
            send(fd, {"type": "built", "result": build_one(json.loads(line), families)})
    return 0


def build_one(job: dict, families: dict) -> dict:
    """One job's WorkerResult, as a dict; never raises."""
    from gpubench.build.compile import build_extension
    from gpubench.build.diagnostics import CompileError
    from gpubench.families.discovery import load_family
    from gpubench.families.sources import build_request
    from gpubench.families.spec import Machine
    from gpubench.records import error_site
    from gpubench.records.build_info import BuildInfo
    from gpubench.records.result import ERROR, OK
    from gpubench.records.worker_result import WorkerResult
    from gpubench.run.worker.failures import build_failure

    start = time.perf_counter()
    try:
        family = families.get(job["family_dir"])
        if family is None:
            family = families[job["family_dir"]] = load_family(job["family"],
                                                               Path(job["family_dir"]))
        machine = Machine(has_cuda=job["has_cuda"], has_triton=job["has_triton"])
        variant = family.variant(job["variant"])
        outcome = build_extension(build_request(family, variant, machine))
    except CompileError as exc:
        return build_failure(exc).to_dict()
    except Exception as exc:  # a spec that fails here fails in the worker too: it says why
        report = error_site.report_exception(exc, [Path(job["family_dir"])])
        return WorkerResult(ERROR, error_site.with_site(report.message, report.site),
                            build=BuildInfo(compile_s=time.perf_counter() - start),
                            error_site=report.evidence()).to_dict()
    build = BuildInfo(outcome.seconds, outcome.cached, outcome.name, str(outcome.directory),
                      outcome.note)
    return WorkerResult(OK, build=build).to_dict()


if __name__ == "__main__":
    sys.exit(main())
