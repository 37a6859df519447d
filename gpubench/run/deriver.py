"""Finished groups derived on a thread of their own (run/runner.py uses it on a GPU).

A group's derivation (verdicts/derive.py: speedups with their bootstrap CIs, roofline,
warnings) takes ~1 s for launch-bound rows of ~50k samples on the lent H100 hosts (4 s on
the 2-core CPU machine), and on the parent's main thread a lane whose point has finished
would wait that long for its save (docs/journal/perf-notes.md). numpy leaves the
GIL to the main thread meanwhile (1 ms sleeps there overslept by at most 5 ms, CPU machine).
"""

from __future__ import annotations

import queue
import threading
from dataclasses import dataclass

from gpubench.records import result as R
from gpubench.verdicts.derive import finish_group


@dataclass(frozen=True)
class GroupDerived:
    """The deriver's rows for a group (`failure`: what it raised instead), on the runner's
    queue: the deriver's answer, which only the runner reads."""

    group: list
    finished: list | None
    failure: BaseException | None = None


class Deriver:
    """A thread that derives finished groups (verdicts/derive.py: speedups and their
    bootstrap CIs, roofline, warnings) in the order they come, and puts each group's
    rows on the runner's queue as a GroupDerived."""

    def __init__(self, events: queue.Queue):
        self.events = events
        self.jobs: queue.Queue = queue.Queue()
        threading.Thread(target=self._serve, daemon=True, name="gpubench-derive").start()

    def submit(self, group: list[R.Result], ceilings: dict | None) -> None:
        self.jobs.put((group, ceilings))

    def _serve(self) -> None:
        while True:
            group, ceilings = self.jobs.get()
            try:
                self.events.put(GroupDerived(group, finish_group(group, ceilings)))
            except Exception as failure:  # raised on the main thread, as before
                self.events.put(GroupDerived(group, None, failure))
