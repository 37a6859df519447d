"""`gpubench profile [OPTIONS] -- python train.py ARGS`: any Python program's kernels.

The course's two steps: first find the kernels that matter (which cost the most, how busy
the GPU is), then ask ncu about those. Step one runs the program unchanged as a child,
`python -m gpubench.tools.profile.child OUT -- train.py ARGS` (torch.profiler around the whole
program, the trace exported however it ends), in a session of its own so that --timeout
and Ctrl-C reach everything it started; its stdout passes through, its stderr too while
its last lines are kept for the summary. profiling/kernels.py reads the trace. Step two
(`--ncu --top N`) runs the program again under ncu once per top kernel, that kernel's
first launch inside the region only, and shows ncu's view of it as `gpubench ncu` does.
Nothing here needs nsys, which does not work on the machines gpubench was tested on.
"""

from __future__ import annotations

import collections
import json
import os
import re
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from gpubench import errors
from gpubench.commands.command import JsonCommand
from gpubench.report.files import new_run_dir
from gpubench.run.lanes.processes import kill_session
from gpubench.tools.find import wait_or_stop
from gpubench.tools.profile.child import STATUS, TRACE
from gpubench.tools.profile.kernels import Profile, analyse

# After SIGTERM on --timeout, how long the program gets to stop its profiler and write
# the trace (a few seconds for a training step's trace of ~100k events).
EXPORT_GRACE_S = 60.0
STDERR_TAIL = 15  # lines of the program's stderr shown when it fails
# The profiler's own progress lines, which kineto prints to the program's stderr whatever
# KINETO_LOG_LEVEL says ('USDT:<date> <time> <pid>:<tid> SyncActivityProfilerHandler.cpp
# :52] profiler_start', 'STAGE:... Completed Stage: Warm Up'): they are
# gpubench's profiler talking, not the program. Its warnings and errors pass.
KINETO_CHATTER = re.compile(r"(USDT|STAGE):\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \d+:\d+ \S+\.cpp:\d+\] ")
KERNELS_CSV = "kernels.csv"


@dataclass
class ChildOutcome:
    exit_code: int | None  # None: killed
    timed_out: bool
    wall_s: float
    stderr_tail: list[str] = field(default_factory=list)


def split_program(program: tuple[str, ...]) -> tuple[str, list[str]]:
    """(python executable, [script.py ARGS] or [-m module ARGS]) of `-- python script.py`."""
    if not program:
        raise errors.UsageError("name the program after --: gpubench profile -- python "
                                "train.py ARGS")
    first = Path(program[0]).name
    if not first.startswith("python") or len(program) < 2:
        raise errors.UsageError(
            f"gpubench profile runs Python programs: `-- python script.py ARGS` or `-- python "
            f"-m module ARGS` (got `{' '.join(program[:3])}`)")
    rest = list(program[1:])
    if rest[0] == "-m":
        if len(rest) < 2:
            raise errors.UsageError("-m needs a module name")
    elif not Path(rest[0]).is_file():
        raise errors.UsageError(f"no such script: {rest[0]}")
    return program[0], rest


def child_env() -> dict:
    """The program's environment, with gpubench importable whatever Python runs it."""
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
    return env


def run_child(python: str, program: list[str], out: Path, timeout_s: float,
              stdout_to_stderr: bool = False) -> ChildOutcome:
    """Run the program under the profiler; SIGTERM its session on timeout (the child then
    writes its trace), SIGKILL whatever is left after the grace period. With
    `stdout_to_stderr` (--json) the program's prints go to stderr: stdout is the JSON's."""
    argv = [python, "-m", "gpubench.tools.profile.child", str(out), "--", *program]
    tail: collections.deque[str] = collections.deque(maxlen=STDERR_TAIL)
    start = time.monotonic()
    process = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True, errors="replace",
                               stdout=sys.stderr if stdout_to_stderr else None,
                               env=child_env(), start_new_session=True)
    reader = threading.Thread(target=_tee, args=(process.stderr, tail), daemon=True)
    reader.start()
    try:
        timed_out = wait_or_stop(process, timeout_s, EXPORT_GRACE_S)
    finally:
        kill_session(process.pid)  # anything the program left running
    reader.join(timeout=5)
    return ChildOutcome(None if timed_out else process.returncode, timed_out,
                        time.monotonic() - start, list(tail))


def _tee(stream, tail) -> None:
    for line in stream:
        if KINETO_CHATTER.match(line):
            continue
        sys.stderr.write(line)
        tail.append(line.rstrip("\n"))


# ---------------------------------------------------------------- the command


@dataclass(frozen=True)
class ProfileRequest:
    """Everything `gpubench profile` was asked for, built once by the CLI."""

    program: tuple[str, ...]  # what follows --: [python] script.py ARGS, or -m module ARGS
    region: str | None = None  # --range: only kernels inside it; None: regions, else all
    skip_first: int = 0  # --skip-first: the range's first N instances left out
    timeout_s: float = 1800.0  # --timeout: then the program's process tree is stopped
    ncu: bool = False  # --ncu: then Nsight Compute on each of the top kernels
    top: int = 3  # --top: how many kernels --ncu profiles
    out: Path | None = None  # --out; None: profiles/<run-id>
    as_json: bool = False  # --json: the analysis on stdout


class ProfileCommand(JsonCommand[ProfileRequest]):
    def execute(self) -> int:
        request = self.request
        python, program = split_program(request.program)
        label = Path(program[1] if program[0] == "-m" else program[0]).stem
        run_dir = request.out or new_run_dir(Path("profiles"), ["profile", label])
        run_dir.mkdir(parents=True, exist_ok=True)
        self._say(f"gpubench profile: {' '.join(request.program)} (torch.profiler; output in "
                  f"{run_dir})")
        outcome = run_child(python, program, run_dir, request.timeout_s, request.as_json)
        status = _read_json(run_dir / STATUS)
        trace = _read_json(run_dir / TRACE)
        if trace is None:
            raise errors.ProfilerError(_nothing_recorded(outcome, run_dir))
        profile = analyse(trace, request.region, request.skip_first)
        self._save(run_dir, profile, outcome, status)
        self._show(profile, outcome, status, run_dir)
        ncu_code = errors.EXIT_OK
        if request.ncu and profile.device:
            ncu_code = self._ncu(python, program, profile, trace, run_dir)
        elif request.ncu:
            self._say("--ncu: skipped — the program ran no CUDA kernel")
        if outcome.timed_out:
            return errors.EXIT_PROFILER_TIMEOUT
        return outcome.exit_code or ncu_code

    def _save(self, run_dir: Path, profile: Profile, outcome: ChildOutcome,
              status: dict | None) -> None:
        from gpubench.files import atomic_write
        from gpubench.store.folder import save_run
        from gpubench.tools.profile.records import kernels_csv, profile_document

        save_run(profile_document(profile, self.request.program, outcome, status,
                                  str(run_dir)), run_dir)
        atomic_write(run_dir / KERNELS_CSV, kernels_csv(profile))

    def _show(self, profile: Profile, outcome: ChildOutcome, status: dict | None,
              run_dir: Path) -> None:
        from gpubench.tools.profile.view import profile_json, profile_view

        if self.request.as_json:
            sys.stdout.write(json.dumps(profile_json(profile, outcome), indent=1) + "\n")
        else:
            self.console.print(profile_view(profile, outcome, status))
        self._say(f"trace: {run_dir / TRACE} (ui.perfetto.dev or chrome://tracing); table: "
                  f"{run_dir / KERNELS_CSV}")

    def _ncu(self, python: str, program: list[str], profile: Profile, trace: dict,
             run_dir: Path) -> int:
        from gpubench.tools.profile.ncu_top import profile_top_kernels

        return profile_top_kernels(python, program, profile, trace, run_dir, self.request.top,
                                   self.console, child_env())


def _read_json(path: Path):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _nothing_recorded(outcome: ChildOutcome, run_dir: Path) -> str:
    how = ("was killed on --timeout before it could write its trace" if outcome.timed_out
           else f"exited with {outcome.exit_code} before the profiler could write its trace")
    tail = " | ".join(outcome.stderr_tail[-3:])
    return f"the program {how} ({run_dir}){': ' + tail if tail else ''}"


execute = ProfileCommand.entry  # the module's one entry (command.py): cli/app.py calls it
