"""Where a call of the interference reference's points goes, phase by phase (issue 32).

    python3 scripts/reference_probe.py [--rounds 5] [--profile-top 30]

A several-GPU run times the reference (run/reference/interference) on all lanes at once,
then on each lane alone, in turn, with every other lane idle: on 4 GPUs the alone rounds
are 4 x ~0.33 s of wall time in a cold run. This process runs the same tasks as a worker
does (gpubench's Executor, the runner's short timing), round after round, and prints each
task's time split by the phases the worker reports (build, prepare, check, time) and what
comes after the last one. The last round is run again under cProfile.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import itertools
import pstats
import time
from dataclasses import replace


def run_round(executor, tasks, marks: list) -> list[tuple[str, float, dict]]:
    rows = []
    for task in tasks:
        marks.clear()
        began = time.perf_counter()
        result = executor.run(task)
        ended = time.perf_counter()
        stamps = [("start", began), *marks, ("end", ended)]
        phases = {a[0]: b[1] - a[1] for a, b in itertools.pairwise(stamps)}
        label = f"{task.label} {result.status}"
        rows.append((label, ended - began, phases))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--profile-top", type=int, default=30)
    parser.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    args = parser.parse_args()
    import torch

    from gpubench.families.spec import Machine
    from gpubench.run.interference.timing import REFERENCE_TIMING
    from gpubench.run.reference import reference_points
    from gpubench.run.worker.execute import Executor
    from gpubench.timing.settings import TimingSettings

    marks: list = []
    cuda = args.device == "cuda"
    executor = Executor(Machine(has_cuda=cuda, has_triton=cuda),
                        lambda phase: marks.append((phase, time.perf_counter())))
    torch.zeros(1, device=args.device)
    timing = replace(TimingSettings(), modes=("cold",), **REFERENCE_TIMING)
    tasks = [p.task(-1 - i, timing) for i, p in enumerate(reference_points(args.device, 0))]
    for number in range(1, args.rounds + 1):
        for label, total, phases in run_round(executor, tasks, marks):
            split = ", ".join(f"{name} {seconds * 1e3:.0f}" for name, seconds in phases.items())
            print(f"round {number}: {total * 1e3:6.0f} ms {label} ({split} ms)", flush=True)
    profile = cProfile.Profile()
    profile.enable()
    run_round(executor, tasks, marks)
    profile.disable()
    text = io.StringIO()
    pstats.Stats(profile, stream=text).sort_stats("cumulative").print_stats(args.profile_top)
    print(text.getvalue())


if __name__ == "__main__":
    main()
