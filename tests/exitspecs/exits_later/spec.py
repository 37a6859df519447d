"""Imports cleanly, then tries to end the process that imported it from a thread, while the run is
going (GPUBENCH_TEST_EXIT_HOW: os._exit, or a SIGKILL to itself): after
GPUBENCH_TEST_EXIT_AFTER_S seconds (4 by default), or as soon as the file
GPUBENCH_TEST_EXIT_WHEN names records a point with a status (a test points it at the run's
results.json: the exit then comes right after the first point is saved). The run folder must say
the run is incomplete. Apart from tests/badspecs: listing that folder must not start this
thread."""

import os
import re
import signal
import sys
import threading
import time
from pathlib import Path

import torch

from gpubench import Family, TorchVariant

AFTER_S = float(os.environ.get("GPUBENCH_TEST_EXIT_AFTER_S", "4"))
# "exit": os._exit(0), which a run refuses (the thread ends, the run goes on); "kill": a
# SIGKILL to its own process, which nothing refuses (the run folder says incomplete).
HOW = os.environ.get("GPUBENCH_TEST_EXIT_HOW", "exit")
WHEN = os.environ.get("GPUBENCH_TEST_EXIT_WHEN")


def _a_point_saved() -> bool:
    try:
        text = Path(WHEN).read_text() if WHEN else ""
    except OSError:
        return False
    return re.search(r'"status": "(?!not_run")', text) is not None


def _exit_later() -> None:
    deadline = time.monotonic() + AFTER_S
    while time.monotonic() < deadline and not _a_point_saved():
        time.sleep(0.02)
    if HOW == "kill":
        os.kill(os.getpid(), signal.SIGKILL)
    os._exit(0)


# In gpubench's process only: the worker imports this spec too, and its copy would end the
# worker instead (and be blamed on the variant it runs as a thread left running).
if Path(sys.argv[0]).parent.name != "worker":  # python -m gpubench.run.worker
    threading.Thread(target=_exit_later, daemon=True).start()

family = Family(
    reference=lambda x: 2 * x,
    make_inputs=lambda n, dtype, device: (torch.randn(n, device=device, dtype=dtype),),
    flops=lambda n: n,
    bytes_moved=lambda n, itemsize: 2 * n * itemsize,
    sizes=(64, 128, 256),
    variants=(
        TorchVariant("torch", fn=lambda x, out: torch.mul(x, 2, out=out), baseline=True),
        TorchVariant("add", fn=lambda x, out: torch.add(x, x, out=out)),
    ),
)
