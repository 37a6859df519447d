"""Runs inside the profiled program: `python -m gpubench.tools.profile.child OUT -- script.py ARGS`
(or `-- -m module ARGS`). Starts torch.profiler, runs the program as `__main__` with its own
argv, and exports the Chrome trace however the program ends — a return, sys.exit(n), an
exception (its traceback printed as Python would), or the SIGTERM the parent sends on
--timeout — so what was recorded is kept. Writes OUT/trace.json and OUT/child.json (exit
code, whether CUDA was there, wall time)."""

from __future__ import annotations

import json
import runpy
import signal
import sys
import time
import traceback
import warnings
from pathlib import Path

TRACE = "trace.json"
STATUS = "child.json"


def main(argv: list[str]) -> int:
    out, program = Path(argv[0]), argv[argv.index("--") + 1:]
    out.mkdir(parents=True, exist_ok=True)
    import torch
    from torch.profiler import ProfilerActivity, profile

    # torch.profiler warns that a profile without a schedule keeps one cycle: that is the
    # whole program here, which is what is wanted; the warning would only confuse.
    warnings.filterwarnings("ignore", message=".*Profiler clears events at the end of each")
    cuda = torch.cuda.is_available()
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if cuda else [])
    signal.signal(signal.SIGTERM, _stop)
    start, code = time.perf_counter(), 0
    prof = profile(activities=activities)
    prof.start()
    try:
        _run(program)
    except SystemExit as exc:
        code = _exit_code(exc.code)
    except BaseException as exc:  # the program's own failure: shown as Python shows it
        traceback.print_exception(type(exc), exc, _user_frames(exc.__traceback__, program))
        code = 1
    finally:
        if cuda:
            torch.cuda.synchronize()
        prof.stop()
        prof.export_chrome_trace(str(out / TRACE))
        (out / STATUS).write_text(json.dumps({
            "exit_code": code, "cuda": cuda, "wall_s": time.perf_counter() - start,
            "device": torch.cuda.get_device_name() if cuda else None}))
    return code


def _run(program: list[str]) -> None:
    """The program as `python PROGRAM...` would run it."""
    if program[:1] == ["-m"]:
        sys.argv = [program[1], *program[2:]]
        runpy.run_module(program[1], run_name="__main__", alter_sys=True)
        return
    sys.argv = list(program)
    sys.path.insert(0, str(Path(program[0]).resolve().parent))
    runpy.run_path(program[0], run_name="__main__")


def _user_frames(tb, program: list[str]):
    """The traceback from the program's own first frame: this module's and runpy's frames
    are not the user's business (all of it if the program's file is never reached)."""
    script = None if program[:1] == ["-m"] else str(Path(program[0]).resolve())
    first = tb
    while first is not None and script is not None and \
            str(Path(first.tb_frame.f_code.co_filename).resolve()) != script:
        first = first.tb_next
    return first or tb


def _stop(signum, frame) -> None:
    """SIGTERM (the parent's --timeout): unwind like sys.exit, so the trace is written."""
    raise SystemExit(128 + signum)


def _exit_code(code) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)  # sys.exit("message") prints it and exits 1
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
