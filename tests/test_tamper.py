"""Tampering from variant code (issue 25): the seal, the thread check, the result exchange
with its one-time key, the persisting-L2 reset, and the hostile family through the CLI."""

import ctypes
import threading
import time
import types

import pytest

from conftest import FAST, TEST_KERNELS
from gpubench.records import result as R
from gpubench.records.point import Shape, Task
from gpubench.run.lanes.lane import Exchange, ForeignMessage
from gpubench.run.lanes.protocol import Envelope, ResultKey
from gpubench.run.worker.seal import Seal
from gpubench.run.worker.tamper import Watch, foreign_attributes, left_threads
from gpubench.timing.persisting_l2 import PERSISTING_L2_LIMIT, L2Calls, PersistingL2
from gpubench.timing.timers.host import HostTimer

# ---------------------------------------------------------------- the seal


def test_seal_names_replaced_bindings_and_restores_them():
    import torch

    import gpubench.families.check as check

    seal = Seal()
    compare, perf_counter = check.compare, time.perf_counter
    try:
        check.compare = lambda *args: None
        time.perf_counter = lambda: 0.0
        torch.Tensor.abs = lambda self: self  # a new name shadowing the C method
        assert seal.broken() == ["gpubench.families.check.compare", "time.perf_counter",
                                 "torch.Tensor.abs"]
    finally:
        seal.restore()
    assert check.compare is compare and time.perf_counter is perf_counter
    assert "abs" not in vars(torch.Tensor) and seal.broken() == []


def test_seal_sees_a_replaced_code_object_and_a_shadowing_global():
    import gpubench.families.check as check

    seal = Seal()
    code = check.poison.__code__
    try:
        check.poison.__code__ = (lambda out: None).__code__
        check.sorted = lambda *args: []  # would shadow the builtin inside the module
        assert seal.broken() == ["gpubench.families.check.poison.__code__",
                                 "gpubench.families.check.sorted"]
    finally:
        seal.restore()
    assert check.poison.__code__ is code and not hasattr(check, "sorted")


def test_seal_allows_a_submodule_imported_later():
    import gpubench.timing as timing

    seal = Seal()
    module = types.ModuleType("gpubench.timing.imported_later")
    timing.imported_later = module
    try:
        assert seal.broken() == []
    finally:
        del timing.imported_later


def test_seal_cost_after_a_task_is_a_few_milliseconds():
    """What the worker pays per task (measured on this CPU and printed for the record)."""
    seal = Seal()
    watch = Watch(seal)
    executor = types.SimpleNamespace(timers={}, shared={})
    watch.before_task()
    start = time.perf_counter()
    for _ in range(20):
        assert watch.verdict(executor) is None
        watch.after_clean_task()
    per_task_ms = (time.perf_counter() - start) / 20 * 1e3
    print(f"seal check per task: {per_task_ms:.2f} ms over "
          f"{sum(len(names) for _, names, _ in seal.spaces.values())} bindings")
    assert per_task_ms < 50


# ---------------------------------------------------------------- objects and threads


def test_a_timer_clock_swapped_through_gc_is_foreign():
    timer = HostTimer(settings=None)
    assert foreign_attributes([timer]) == []
    timer.clock = lambda: 0.0
    assert foreign_attributes([timer]) == ["HostTimer.clock"]


def test_threads_left_running_are_named_and_gpubench_s_own_are_not():
    before = set(threading.enumerate())
    stop = threading.Event()
    stray = threading.Thread(target=stop.wait, name="stray", daemon=True)
    own = threading.Thread(target=stop.wait, name="gpubench-clocks", daemon=True)
    own.gpubench_owned = True
    stray.start()
    own.start()
    try:
        assert [thread.name for thread in left_threads(before)] == ["stray"]
    finally:
        stop.set()
        stray.join()
        own.join()


# ---------------------------------------------------------------- the result exchange


class FakeWorker:
    """Plays the worker's messages; records what the parent sends back."""

    def __init__(self, messages):
        self.messages, self.sent = list(messages), []

    def next_message(self, deadline):
        message = self.messages.pop(0)
        return message(self) if callable(message) else message

    def send(self, line):
        self.sent.append(line)


def task(task_id: int = 7) -> Task:
    return Task(task_id, "fam", "/nowhere", "v", "float32", Shape({"n": 4}), 0)


def exchange(messages, previous=None):
    envelope = Envelope(task())
    worker = FakeWorker([m(envelope) if callable(m) else m for m in messages])
    return Exchange(worker, envelope, previous), worker


def vouched(kind, **fields):
    return lambda envelope: {"type": kind, "task": envelope.task.id, "auth": envelope.secret,
                             **fields}


def keyed_result(status="ok"):
    return lambda envelope: lambda worker: {"type": "result", "task": envelope.task.id,
                                            "key": worker.sent[-1].key,
                                            "result": {"status": status}}


def test_the_result_is_taken_only_with_the_key_sent_after_done():
    run, worker = exchange([vouched("phase", phase="check"), vouched("done"), keyed_result()])
    result = run.await_result(10, 10, lambda phase: None)
    assert result.status == R.OK and isinstance(worker.sent[0], ResultKey)


def test_a_result_with_the_secret_but_before_done_is_foreign():
    run, _ = exchange([vouched("result", result={"status": "ok"})])
    with pytest.raises(ForeignMessage, match="one-time key"):
        run.await_result(10, 10, lambda phase: None)


def test_a_result_with_a_guessed_key_is_foreign():
    wrong = lambda envelope: {"type": "result", "task": envelope.task.id, "key": "guess",  # noqa: E731
                              "result": {"status": "ok"}}
    run, _ = exchange([vouched("done"), wrong])
    with pytest.raises(ForeignMessage, match="one-time key"):
        run.await_result(10, 10, lambda phase: None)


def test_done_twice_is_foreign():
    run, _ = exchange([vouched("done"), vouched("done")])
    with pytest.raises(ForeignMessage, match="came twice"):
        run.await_result(10, 10, lambda phase: None)


def test_the_previous_task_s_late_done_says_its_result_was_forged():
    previous = task(6)
    late = {"type": "done", "task": 6, "auth": "whatever"}
    run, _ = exchange([late], previous=previous)
    with pytest.raises(ForeignMessage, match=r"previous task .*fam/v.* was forged"):
        run.await_result(10, 10, lambda phase: None)


def test_tampered_is_a_fail_that_retires_the_worker():
    run, worker = exchange([vouched("tampered", error="variant code replaced time.perf_counter")])
    result = run.await_result(10, 10, lambda phase: None)
    assert (result.status, result.error) == (R.FAIL, "variant code replaced time.perf_counter")
    assert run.retired and worker.sent == []


def test_the_worker_reads_only_its_own_key():
    key = ResultKey(7)
    assert ResultKey.read(key.to_json(), 7) == key.key
    assert ResultKey.read(key.to_json(), 8) is None
    assert ResultKey.read(Envelope(task(8)).to_json(), 7) is None  # the next task instead


# ---------------------------------------------------------------- persisting L2


class FakeCudart:
    """cudaDeviceGetLimit / cudaCtxResetPersistingL2Cache over a settable limit."""

    def __init__(self, limit: int):
        self.limit, self.resets, self.asked = limit, 0, []

    def get_limit(self, pointer, which):
        self.asked.append(which)
        ctypes.cast(pointer, ctypes.POINTER(ctypes.c_size_t)).contents.value = self.limit
        return 0

    def reset(self):
        self.resets += 1
        return 0


def test_persisting_l2_is_reset_only_when_a_variant_reserved_some():
    cudart = FakeCudart(limit=0)
    l2 = PersistingL2(L2Calls(cudart.get_limit, cudart.reset, "fake"))
    assert l2.reset_if_reserved() is False and cudart.resets == 0
    cudart.limit = 4 << 20  # cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, 4 MiB)
    assert l2.reset_if_reserved() is True and (cudart.resets, l2.resets) == (1, 1)
    assert set(cudart.asked) == {PERSISTING_L2_LIMIT}


def test_persisting_l2_without_a_cuda_library_does_nothing():
    l2 = PersistingL2(calls=None)
    l2.calls = None
    assert l2.limit_bytes() == 0 and l2.reset_if_reserved() is False


# ---------------------------------------------------------------- the hostile family


@pytest.mark.slow
def test_tampering_variants_fail_with_the_reason_and_later_ones_are_unharmed(gpubench):
    done = gpubench("run", "tamper", "--kernels-dir", str(TEST_KERNELS), *FAST, "--out", "run")
    assert done.code == 1, done.output
    rows = done.by_variant(done.cwd / "run")
    status = {variant: row["status"] for variant, row in rows.items()}
    assert status == {"torch": "ok", "patches_event": "fail", "after_event": "ok",
                      "patches_clock": "fail", "after_clock": "ok", "patches_checker": "fail",
                      "writes_nothing": "fail", "swaps_clock_by_gc": "fail", "after_gc": "ok",
                      "forges_by_frames": "error", "after_forgery": "ok",
                      "leaves_thread": "fail", "after_thread": "ok"}, done.output
    reasons = {variant: row["error"] or "" for variant, row in rows.items()}
    assert "replaced torch.cuda.Event.elapsed_time" in reasons["patches_event"]
    assert "replaced time.perf_counter" in reasons["patches_clock"]
    assert "replaced gpubench.families.check.compare" in reasons["patches_checker"]
    assert "output differs" in reasons["writes_nothing"]
    assert "replaced HostTimer.clock" in reasons["swaps_clock_by_gc"]
    assert "one-time key" in reasons["forges_by_frames"]
    assert "left 1 thread(s) running: variant-helper" in reasons["leaves_thread"]
    assert "Traceback" not in done.output
