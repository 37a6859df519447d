"""Workers started before the parent imports torch: a run's fixed cost, halved.

A worker's start (Python, torch, CUDA, the device's facts: ~5 s on an H200 host) and the
parent's own (Python, torch, CUDA detection, the plan: ~4.4 s) used to run one after the
other: the first worker was started when the first point was handed out. `gpubench run`
now starts its workers first thing, from what it can know without torch -- the lanes the
options ask for, on the device NVML sees -- and the lanes adopt them once the plan is
made (Lane.adopt). Their logs start in a temporary file and move to the run folder then
(CappedLog.move_to).

A guess that turns out wrong (the plan runs on the CPU after all, a lane's slot differs,
the command set a variable its workers read -- the compiled variant's choice) costs
nothing but the unused workers: a lane adopts a worker only if the whole environment it
was started with is the one the lane would start its own with now, and `close()` kills
every worker no lane took, whatever happens (an error in the plan, Ctrl-C).
"""

from __future__ import annotations

import contextlib
import functools
import os
import tempfile
import threading
from pathlib import Path

from gpubench.build.nvml import each_gpu
from gpubench.run.lanes.lane import Slot, cpu_slots
from gpubench.run.lanes.worker_process import WorkerDied, WorkerProcess, WorkerTimeout, worker_env

FOLDER_PREFIX = "gpubench-prestart-"
OWNER_FILE = "owner.pid"


def sweep_stale_folders(temp: Path) -> list[Path]:
    """Remove the prestart folders of gpubench runs that are gone: a `kill -9` leaves its
    folder (its workers die with their watchdog; the folder has nobody left to remove it).
    A folder is stale when the pid in its owner file is no longer a process; one without
    an owner file (an older gpubench's, or a start killed in between) is left alone."""
    removed = []
    for folder in temp.glob(f"{FOLDER_PREFIX}*"):
        try:
            owner = int((folder / OWNER_FILE).read_text().strip())
        except (OSError, ValueError):
            continue
        if not _alive(owner) and _remove(folder):
            removed.append(folder)
    return removed


def _remove(folder: Path) -> bool:
    """Remove a prestart folder and the flat files in it (logs, the owner file)."""
    with contextlib.suppress(OSError):
        for log in folder.iterdir():
            log.unlink()
        folder.rmdir()
        return True
    return False


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's live process
        return True
    return True


class Prestart:
    """Workers started on `slots`, each on a thread of its own (a start waits for the
    worker's hello); `take(slot)` hands one over."""

    def __init__(self, slots: list[Slot], guessed_env: dict | None = None):
        sweep_stale_folders(Path(tempfile.gettempdir()))
        self.folder = Path(tempfile.mkdtemp(prefix=FOLDER_PREFIX))
        (self.folder / OWNER_FILE).write_text(str(os.getpid()))
        self.pending: dict[Slot, tuple[WorkerProcess, threading.Thread, dict]] = {}
        for index, slot in enumerate(slots):
            env = {**lane_environment(slot), **(guessed_env or {})}
            worker = WorkerProcess(slot.device, self.folder / f"worker-{index}.log", env=env)
            outcome: dict = {}
            thread = threading.Thread(target=_start, args=(worker, outcome), daemon=True,
                                      name=f"gpubench-prestart-{slot.label}")
            thread.start()
            self.pending[slot] = (worker, thread, outcome)

    def take(self, slot: Slot) -> tuple[WorkerProcess, dict] | None:
        """The worker started for `slot` and its hello (waiting for its start to end), or
        None: none was started for that slot, or its start failed (the lane starts one as
        before, and says why if that fails too)."""
        entry = self.pending.pop(slot, None)
        if entry is None:
            return None
        worker, thread, outcome = entry
        thread.join()
        if "env" not in outcome:
            worker.kill()
            return None
        return worker, outcome["env"]

    def hand_over(self, lanes: list, device: str) -> None:
        """Give each lane the worker started for its slot, if any and of the run's
        device; the rest are killed by close()."""
        for lane in lanes:
            slot = getattr(lane, "slot", None)
            if slot is None or slot.device != device or not hasattr(lane, "adopt"):
                continue
            waiting = self.pending.get(slot)
            if waiting is None or waiting[0].fixed_env != lane_environment(slot):
                continue  # started with another environment: close() kills it
            lane.adopt_when_used(functools.partial(self.take, slot))

    def close(self) -> None:
        """Kill every worker no lane took; remove the temporary log folder."""
        for slot in list(self.pending):
            entry = self.pending.pop(slot, None)  # a lane's thread may take it meanwhile
            if entry is None:
                continue
            worker, thread, _ = entry
            thread.join()
            worker.kill()
        _remove(self.folder)


def guessed_environment(slots: list[Slot], asked: bool | None, variants: tuple[str, ...],
                        mode: str | None) -> dict[str, str]:
    """What `run` will set for its workers once the machine is known (the compiled
    variant's choice and mode, families/compiled.py), guessed from the slots' device: a
    wrong guess only costs the prestarted workers."""
    from gpubench.families import compiled
    from gpubench.families.spec import Machine

    guess = Machine(has_cuda=bool(slots) and slots[0].device == "cuda", has_triton=False)
    return compiled.settings_environment(compiled.settle_for(guess, asked, variants), mode)


def lane_environment(slot: Slot) -> dict:
    """The environment a lane on `slot` starts its worker with now (lane.py)."""
    return {**worker_env(slot.device), **slot.env()}


def _start(worker: WorkerProcess, outcome: dict) -> None:
    try:
        outcome["env"] = worker.start()
    except (WorkerDied, WorkerTimeout, OSError) as exc:
        outcome["error"] = str(exc)


def guessed_slots(device: str | None, devices: str | None, workers: int | None) -> list[Slot]:
    """The slots `run` will make lanes for (commands/run.py lanes_for), from the options
    and NVML alone, or [] where that cannot be told without torch (then nothing starts
    early). `device`: --device (None: auto)."""
    if workers:
        return cpu_slots(workers) if device == "cpu" or not _nvml_gpus() else []
    if devices:
        chosen = guessed_gpus(device, devices) or []
        return [Slot("cuda", f"cuda:{gpu}", visible=gpu) for gpu in chosen]
    kind = "cuda" if device != "cpu" and _nvml_gpus() else "cpu"
    return [Slot(kind, f"{kind}:0")]


def guessed_gpus(device: str | None, devices: str | None) -> list[str] | None:
    """The GPUs `--devices` (all when not given) picks, from NVML alone: [] when the run
    has none (--device cpu, or no GPU), None when the choice is wrong (the real check,
    with torch, says what is wrong)."""
    gpus = _nvml_gpus() if device != "cpu" else []
    if not gpus:
        return []
    from gpubench.run.lanes.lane import choose_gpus

    try:
        return choose_gpus(devices or "all", _visible(gpus))
    except Exception:
        return None


def _visible(gpus: list[str]) -> list[str]:
    listed = os.environ.get("CUDA_VISIBLE_DEVICES")
    if listed is not None:
        return [item.strip() for item in listed.split(",") if item.strip()]
    return gpus


def _nvml_gpus() -> list[str]:
    """The GPUs NVML sees, as indices ('0', '1'), or [] without NVML or a driver; and []
    when the installed torch has no CUDA (read from torch/version.py, not by importing
    torch, which is what this module saves)."""
    if not _torch_has_cuda():
        return []
    handles = each_gpu(lambda nvml, gpu: gpu) or []
    return [str(index) for index in range(len(handles))]


def _torch_has_cuda() -> bool:
    import importlib.util

    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return False
    version = Path(next(iter(spec.submodule_search_locations))) / "version.py"
    try:
        text = version.read_text()
    except OSError:
        return False
    return any(line.startswith("cuda") and "None" not in line for line in text.splitlines())
