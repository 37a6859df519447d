"""Inside the worker: load a variant, check it against the reference, time it.

One Executor lives as long as its worker process and keeps what is expensive
to redo: imported specs, built extensions, and the inputs and float64
references of the current (family, size, dtype) group, which every variant of
the group shares. Each step reports its phase first, so the parent can apply
the right timeout (compiling may take minutes; a hung kernel should not).

Inputs: the check runs on one fresh random draw; the timing on a second one;
after timing, outputs of timed calls drawn at random are checked again, so a kernel
that caches or skips work is caught.

Nothing a verdict compares with exists in this process: no reference, no copy of the
inputs, no comparison. Outputs (and, after the calls, the inputs the variant was given)
go to the judge (run/judge/), which draws the inputs again from their seeds in its own
process, makes the float64 reference there and decides; the parent then hears from the
judge directly what it saw, so a pass this worker reports stands only if the judge agrees.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from gpubench.build.compile import build_extension
from gpubench.build.diagnostics import CompileError
from gpubench.errors import SpecError
from gpubench.families import compiled, sideeffects
from gpubench.families.calling import load_callable
from gpubench.families.check import CheckResult, poison
from gpubench.families.discovery import import_kernel_file, load_family
from gpubench.families.sources import build_request
from gpubench.families.spec import (
    CudaVariant,
    Family,
    Machine,
    TorchVariant,
    TritonVariant,
    Variant,
)
from gpubench.records import error_site
from gpubench.records.build_info import BuildInfo
from gpubench.records.point import Task
from gpubench.records.result import ERROR, FAIL, OK, SKIPPED
from gpubench.records.worker_result import WorkerResult
from gpubench.run.judge.client import JudgeError, LocalJudge
from gpubench.run.judge.ruling import CHECK, FRESH, RECHECK
from gpubench.run.reference import is_own_reference
from gpubench.run.worker.draws import draw_inputs, fresh_sets, make_group
from gpubench.run.worker.failures import build_failure, family_roots, variant_failure
from gpubench.run.worker.fresh_probe import FreshProbe, probe_fresh
from gpubench.run.worker.invocation import Group, Invocation
from gpubench.run.worker.rotation import (
    FRESH_IN_LOOP,
    InputSet,
    Rotation,
    output_problem,
    set_bytes,
    set_count,
)
from gpubench.run.worker.tune_apply import Tuned, Tuning
from gpubench.timing import nvtx_ranges
from gpubench.timing.clocks import measure_watched
from gpubench.timing.measurement import Measurement, in_loop_evidence
from gpubench.timing.timers import make_timer, modes_for_device

# A Triton kernel without a GPU runs in the interpreter (numpy, ~1e4x the kernel's time):
# its output is checked, and timing it would only spend minutes (70% of the README's first
# command on 2 cores) on a number no view shows.
INTERPRETED_UNTIMED = "Triton interpreter (no GPU): checked, not timed"
# For gpubench's own tests: time interpreted rows anyway, so that `tune`'s race plumbing
# runs in CI (the times mean nothing there; tune pins nothing from them).
TIME_ON_CPU_ENV = "GPUBENCH_TUNE_TIME_ON_CPU"


def times_on_cpu() -> bool:
    """Whether gpubench's own tests asked for CPU timings no user needs (TIME_ON_CPU_ENV)."""
    return os.environ.get(TIME_ON_CPU_ENV) == "1"
# Calls before the profiled one: caches, clocks and lazy loading settle, as in timing.
PROFILE_WARMUP_CALLS = 3


@dataclass
class Prepared:
    """A task made ready (Executor.prepare): what was loaded, the inputs, torch's process
    state before the first call (to tell the variant's side effects), and that call's check."""

    family: Family
    variant: Variant
    fn: Invocation
    build: dict  # how loading went: compile_s, cached, extension, ...
    group: Group
    state: dict
    first_call_s: float  # the checked call, synchronised: Triton's compile is in it
    check: CheckResult
    tuned: Tuned | None = None  # the config it runs with, and its autotuner (tune_apply)


class CudaFault(Exception):
    """A CUDA error that poisons the context (illegal address, ...): the worker must restart."""


class Executor:
    def __init__(self, machine: Machine, report_phase: Callable[[str], None], judge=None,
                 run_pair: Callable[[Executor, Task], WorkerResult] | None = None):
        self.machine = machine
        self.report_phase = report_phase
        # `gpubench ab`'s pair task (run/ab/pair.py), handed in by the serving worker: a
        # pair drives this executor's steps for both sides, so the executor never imports it.
        self.run_pair = run_pair
        # The judge process's link (RemoteJudge) in a serving worker; in-process otherwise.
        self.judge = judge or LocalJudge(machine.device)
        self.judge_lost: str | None = None  # why the judge cannot answer any more
        self.families: dict[str, Family] = {}
        self.loaded: dict[tuple, tuple[Callable, dict]] = {}
        self.group: Group | None = None
        self.references: dict[tuple, Group] = {}  # the interference reference's groups
        self.timers: dict = {}
        self.shared: dict = {}  # state timers share (the flush buffer)
        self.gpu_uuid = _gpu_uuid() if machine.has_cuda else ""
        self.tuning = Tuning(machine)  # 'VARIANT@INDEX' and pinned configs (tune_apply.py)

    # ------------------------------------------------------------ one task

    def run(self, task: Task) -> WorkerResult:
        """Build, check and time one point (never raises, except CudaFault, which the
        worker reports before exiting)."""
        try:
            return self._run(task)
        except CompileError as exc:
            return build_failure(exc)
        except SpecError as exc:
            failed = WorkerResult(ERROR, str(exc))
        except JudgeError as exc:
            self.judge_lost = str(exc)
            failed = WorkerResult(ERROR, str(exc))
        except Exception as exc:
            if _is_cuda_fault(exc):
                raise CudaFault(_one_line(exc)) from exc
            skip = compiled.compile_failure(exc) if self._is_compiled(task) else None
            failed = (WorkerResult(SKIPPED, skip) if skip else
                      variant_failure(exc, task, self.families.get(task.family_dir)))
        _release_memory(self.machine)  # out of the except block: the exception is let go
        return failed

    def _run(self, task: Task) -> WorkerResult:
        with nvtx_ranges.labelled(task.label):
            if task.base_dir:  # `gpubench ab`: two versions timed in pairs
                if self.run_pair is None:
                    raise RuntimeError("an A/B pair task reached a worker that times no pairs")
                return self.run_pair(self, task)
            return self._run_labelled(task)

    def _is_compiled(self, task: Task) -> bool:
        family = self.families.get(task.family_dir)
        return any(v.name == task.variant and v.kind == compiled.KIND
                   for v in (family.variants if family else ()))

    def _run_labelled(self, task: Task) -> WorkerResult:
        cache_before = compiled.cache_events()
        ready = self.prepare(task)
        fn, group = ready.fn, ready.group
        checked = self.checked(ready, cache_before)
        if task.check_only and checked.status == OK:  # gpubench tune's first pass
            return replace(checked, untimed=None)
        if checked.status != OK or checked.untimed:
            return checked
        self.report_phase("time")
        sets = self._timing_sets(ready, task)
        measurements = {mode: self._time_mode(mode, ready, sets, task)
                        for mode in modes_for_device(task.timing.modes, self.machine.device)}
        culprit = self._blame(group, group.time_inputs, group.time_seed, ready.state)
        if culprit:
            return replace(checked, status=FAIL, error=f"while timed: {culprit}")
        failed = any(m.recheck_failed for m in measurements.values())
        if failed or is_own_reference(task.family_dir):
            return replace(checked, measurements=measurements)  # nothing (more) to probe
        probe = self._fresh_probe(ready, task, sets)
        del sets
        if probe.failure:
            return replace(checked, status=FAIL, error=probe.failure)
        measurements = {mode: m.completed(fresh=probe.evidence())
                        for mode, m in measurements.items()}
        return replace(checked, measurements=measurements,
                       device_work=self._device_work(fn, group))

    def checked(self, ready: Prepared, cache_before) -> WorkerResult:
        """A prepared variant's result after its check: OK, FAIL (a wrong output or a side
        effect), or OK and untimed (a Triton kernel in the interpreter)."""
        build = ready.build
        if ready.variant.kind == "triton":  # Triton compiles on the first call: its build
            build = replace(build, compile_s=ready.first_call_s, cached=None)
        elif ready.variant.kind == compiled.KIND:  # so does torch.compile, once per shape
            build = compiled.first_call_build(build, ready.first_call_s, cache_before)
        if ready.fn.returns:  # the table says so: its time includes allocating the output
            build = replace(build, allocates_output=True)
        checked = WorkerResult(OK, build=build, check=ready.check,
                               device=self.machine.device)
        group = ready.group
        culprit = self._blame(group, group.check_inputs, group.check_seed, ready.state)
        if culprit:
            return replace(checked, status=FAIL, error=culprit)
        if not ready.check.passed:
            why = ready.check.note or "output differs from the reference"
            return replace(checked, status=FAIL, error=why)
        if self.machine.triton_interpreted and ready.variant.kind == "triton" and \
                not times_on_cpu():
            return replace(checked, untimed=INTERPRETED_UNTIMED)
        return checked

    def _device_work(self, fn: Invocation, group: Group):
        """What one call runs on the GPU (kernel count, sum and span), after the timing it
        must not disturb; None on a CPU, or when neither a graph capture nor CUPTI saw it.
        A failure here costs the point its kernel count, never its timings."""
        support = self.shared.get("cuda")
        if support is None:
            return None
        from gpubench.timing.device_work_probe import find_device_work

        self.report_phase("kernels")
        inputs, out = group.time_inputs, group.out
        try:
            return find_device_work(lambda: fn(inputs, out), support)
        except Exception as exc:
            if _is_cuda_fault(exc):
                raise
            return None

    def _blame(self, group: Group, inputs: tuple, seed: int, state: dict) -> str | None:
        """The variant's side effects, if any (the judge compares `inputs` with their fresh
        draw from `seed`); then torch's state is restored and the group dropped, so the
        next variant gets fresh inputs and a fresh buffer."""
        culprit = group.side_effects(self.judge.mutated(seed, inputs), state)
        if culprit:
            sideeffects.restore_state(state)
            self.group = None
        return culprit

    def prepare_for_trace(self, task: Task) -> tuple[Invocation, Group]:
        """The variant's callable and its own inputs (kept apart: a trace holds them all),
        checked once, which also compiles whatever compiles on the first call."""
        import torch

        ready = self.prepare(task, own_group=True)
        _synchronize(torch, self.machine)
        if not ready.check.passed:
            raise ValueError(f"fails its check ({ready.check.summary()})")
        return ready.fn, ready.group

    def profile_once(self, task: Task, region, calls: int = 1) -> WorkerResult:
        """For an external profiler: build, check (also the JIT's first call), warm up,
        then `calls` measured calls, each inside its own `region` (an NVTX range or the
        CUDA profiler API), the only work the profiler is told to capture."""
        import torch

        ready = self.prepare(task)
        fn, group, check = ready.fn, ready.group, ready.check
        for _ in range(PROFILE_WARMUP_CALLS):
            fn(group.time_inputs, group.out)
        _synchronize(torch, self.machine)
        for _ in range(calls):
            with region():
                fn(group.time_inputs, group.out)
                _synchronize(torch, self.machine)
        return WorkerResult(OK if check.passed else FAIL, check=check.to_dict())

    # ------------------------------------------------------------ steps

    def prepare(self, task: Task, own_group: bool = False, group: Group | None = None
                ) -> Prepared:
        """The one way a task is made ready, for a run, a profiler and a trace alike:
        family -> variant -> load (build or import) -> inputs -> check of a first call.
        The inputs are the group's, shared with the point's other variants, unless
        `own_group` (a trace holds every variant's at once) or `group` is given (an A/B
        pair's BASE gets NEW's inputs)."""
        family = self._family(task)
        tuned = self.tuning.resolve(family, task)
        variant = tuned.variant
        self.report_phase("build")
        fn, build = self.load_variant(family, variant)
        self.report_phase("prepare")
        if own_group:
            key = (task.family_dir, task.shape, task.dtype, task.seed)
            group = make_group(family, task, self.machine.device, key)
        elif group is None:
            group = self._group(family, task)
        state = sideeffects.torch_state()
        self.report_phase("check")
        self.judge.begin(task)
        with self.tuning.first_call(family, tuned):
            first_call_s, check = self._check(fn, group, task)
        build = tuned.build(build)
        return Prepared(family, variant, fn, build, group, state, first_call_s, check, tuned)

    def _family(self, task: Task) -> Family:
        if task.family_dir not in self.families:
            self.families[task.family_dir] = load_family(task.family, Path(task.family_dir))
        return self.families[task.family_dir]

    def load_variant(self, family: Family, variant: Variant) -> tuple[Invocation, BuildInfo]:
        """The variant's Invocation (building or importing it) and how its build went."""
        key = (str(family.directory), variant.name, getattr(variant, "cuda_flags", ()))
        if key in self.loaded:
            fn, _ = self.loaded[key]
            return fn, BuildInfo(compile_s=0.0, cached=True, reused_in_process=True)
        if isinstance(variant, TorchVariant):
            fn, build = variant.fn, BuildInfo(compile_s=load_callable(variant.fn))
        elif isinstance(variant, TritonVariant):
            module = import_kernel_file(family.directory / variant.module, "gpubench_triton")
            fn, build = _attribute(module, variant.function, variant.module), BuildInfo()
        elif isinstance(variant, compiled.CompiledVariant):
            fn, build = compiled.load(variant)
        elif isinstance(variant, CudaVariant):
            started = time.perf_counter()
            request = build_request(family, variant, self.machine)
            requested = time.perf_counter() - started
            outcome = build_extension(request)
            fn = _attribute(outcome.module, variant.function, outcome.name)
            build = BuildInfo(outcome.seconds, outcome.cached, outcome.name,
                              str(outcome.directory), outcome.note,
                              steps_s={"request": requested, **outcome.steps})
        else:
            raise SpecError(f"variant '{variant.name}' has unknown kind {type(variant).__name__}")
        self.loaded[key] = (Invocation(fn, variant.returns), build)
        return self.loaded[key]

    def _group(self, family: Family, task: Task) -> Group:
        key = (task.family_dir, task.shape, task.dtype, task.seed)
        if is_own_reference(task.family_dir):  # its probes alternate, round after round:
            if key not in self.references:  # kept side by side, not remade (~0.2 s each)
                self.group = None
                self.references[key] = make_group(family, task, self.machine.device, key)
            return self.references[key]
        self.references.clear()  # the run's own points have begun: their memory back
        if self.group is None or self.group.key != key:
            self.group = None  # free the previous group's memory before allocating
            self.group = make_group(family, task, self.machine.device, key)
        return self.group

    def _check(self, fn: Invocation, group: Group, task: Task):
        import torch

        poison(group.out)
        call = Rotation(fn, [], self._judge_all).aim(
            InputSet(group.check_inputs, group.out, group.check_seed))
        with nvtx_ranges.phase("check"):
            start = time.perf_counter()
            produced = call()
            _synchronize(torch, self.machine)
            first_call_s = time.perf_counter() - start
        problem = fn.problem(produced, group.out, torch)
        if problem:
            raise SpecError(f"variant '{task.variant}' {problem}")
        untrusted = output_problem(produced, group.check_inputs)
        if untrusted:  # a lazy subclass or an input's memory: failed, not compared
            return first_call_s, CheckResult(False, float("inf"), float("inf"), 0, 0, 0,
                                             0.0, 0.0, note=untrusted)
        return first_call_s, self.judge.check(CHECK, group.check_seed, produced)

    def _judge_as(self, role: str) -> Callable[[InputSet, object], CheckResult]:
        """The judge's verdict on an output of a set, asked as `role`."""
        return lambda chosen, output: self.judge.check(role, chosen.seed, output)

    def _judge_all(self, pairs: list[tuple[InputSet, object]]) -> list[CheckResult]:
        """The judge's verdicts on a mode's re-checked outputs, asked at once."""
        return self.judge.check_all(RECHECK, [(chosen.seed, out) for chosen, out in pairs])

    def _time_mode(self, mode: str, ready: Prepared, sets: list[InputSet],
                   task: Task) -> Measurement:
        """Time one mode over rotating input sets (run/worker/rotation.py), then re-check the
        timed calls drawn at random. Errors stay with the mode."""
        rotation = Rotation(ready.fn, sets, self._judge_all, warm=mode == "warm",
                            fresh=self._fresh_sets(ready, task, sets),
                            on_cpu=not self.machine.has_cuda)
        parts = rotation.parts()  # held in this frame, out of the variant's reach
        try:
            timing, clocks = self._measure(mode, rotation, task)
            if task.timing.remeasure_throttled and clocks and clocks.slowed_down:
                timing, clocks = self._measure(mode, rotation, task)
                clocks = replace(clocks, remeasured=True) if clocks else None
            tampered = rotation.tampered(parts, len(timing.samples_s))
            recheck, failure = (None, tampered) if tampered else rotation.verdict()
            timing = timing.completed(fresh_in_loop=timing.fresh_in_loop or in_loop_evidence(
                rotation.fresh_samples(timing.samples_s)))
        except Exception as exc:
            if _is_cuda_fault(exc) or isinstance(exc, JudgeError):
                raise
            where = error_site.report_exception(exc, family_roots(ready.family))
            shown = error_site.with_site(where.message, where.site)
            return Measurement(mode, error=f"{mode} timing failed: {shown}")
        finally:
            rotation.close()
        return timing.at_least_zero().completed(
            target_rel_ci=task.timing.target_rel_ci, clocks=clocks,
            recheck=recheck,
            error=f"while timed: {failure}" if failure else timing.below_the_window(),
            recheck_failed=failure is not None)

    def _measure(self, mode: str, rotation: Rotation, task: Task):
        timer = self._timer(mode, task)
        with nvtx_ranges.phase(f"measure:{mode}"):
            return measure_watched(timer, rotation, self.machine.has_cuda, self.gpu_uuid)

    def _timing_sets(self, ready: Prepared, task: Task) -> list[InputSet]:
        """The group's timing set and fresh ones of the same shapes (seeds after it), as
        many as fit (rotation.set_count); their references are computed when needed."""
        import torch

        group = ready.group
        first = InputSet(group.time_inputs, group.out, group.time_seed)
        if is_own_reference(task.family_dir):
            return [first]
        free = torch.cuda.mem_get_info()[0] if self.machine.has_cuda else None
        # x2: a set's float64 reference, made when it is re-checked, is up to twice the
        # set's own bytes (fp32 -> fp64; more for 16-bit outputs, fewer for their inputs)
        count = set_count(set_bytes(group.time_inputs, group.out) * 2, free)
        seeds = [group.time_seed + i for i in range(1, count)]
        return [first] + [InputSet(draw_inputs(ready.family, task, self.machine.device, seed),
                                   torch.empty_like(group.out), seed) for seed in seeds]

    def _fresh_sets(self, ready: Prepared, task: Task, sets: list[InputSet]
                    ) -> list[InputSet]:
        """Never-seen sets for timed calls inside the loop (rotation.py): as many as the
        rotation holds, at most FRESH_IN_LOOP; none for the interference reference."""
        count = 0 if is_own_reference(task.family_dir) else min(len(sets), FRESH_IN_LOOP)
        return fresh_sets(ready.family, task, self.machine.device, ready.group.out, count)

    def _fresh_probe(self, ready: Prepared, task: Task, seen: list[InputSet]) -> FreshProbe:
        """Calls on never-seen inputs (run/worker/fresh_probe.py): their times go to every mode's
        details for verdicts/behaviour.py; a wrong answer among them fails the variant."""
        def make_set(_index: int) -> InputSet:
            return fresh_sets(ready.family, task, self.machine.device, ready.group.out, 1)[0]

        support = self._cuda_support() if self.machine.has_cuda else None
        calls = Rotation(ready.fn, seen, self._judge_all)  # a timed call's own frames
        return probe_fresh(calls, make_set, seen, self._judge_as(FRESH), support)

    def _cuda_support(self):
        from gpubench.timing.timers.flush_spin import CudaSupport

        if self.shared.get("cuda") is None:
            self.shared["cuda"] = CudaSupport()
        return self.shared["cuda"]

    def _timer(self, mode: str, task: Task):
        """Timers are cached per (mode, settings): they hold the 2xL2 flush buffer."""
        key = (mode, task.timing)
        if key not in self.timers:
            self.timers[key] = make_timer(mode, task.timing, self.shared)
        return self.timers[key]


def _release_memory(machine: Machine) -> None:
    """After an ERROR: what the variant held through its exception (its frames' tensors,
    often in a reference cycle: exception -> traceback -> frame -> exception) is freed
    now, not at some later full collection during another variant's timing; on a GPU the
    allocator's cached blocks go back to the driver too, so the next variant gets the
    memory the failed one hoarded."""
    import gc

    gc.collect()
    if machine.has_cuda:
        import torch

        torch.cuda.empty_cache()


def _gpu_uuid() -> str:
    import torch

    return str(getattr(torch.cuda.get_device_properties(torch.cuda.current_device()), "uuid", ""))


def _synchronize(torch, machine: Machine) -> None:
    if machine.has_cuda:
        torch.cuda.synchronize()


def _attribute(module, name: str, where: str):
    fn = getattr(module, name, None)
    if not callable(fn):
        raise SpecError(f"{where} has no function '{name}'")
    return fn


def _is_cuda_fault(exc: BaseException) -> bool:
    """Errors after which the CUDA context is unusable (they are 'sticky')."""
    text = f"{type(exc).__name__}: {exc}"
    return "AcceleratorError" in text or "CUDA error" in text or "cudaError" in text


def _one_line(exc: BaseException) -> str:
    lines = [line for line in str(exc).splitlines() if line.strip()]
    first = lines[0] if lines else ""
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__
