"""GPU MODE reference-kernels problems (github.com/gpu-mode/reference-kernels) as families.

A problem folder holds reference.py (`ref_kernel(data)`, `generate_input(**args, seed)`,
`check_implementation(data, output)`), task.yml (the `tests` and `benchmarks` argument
lists, and the `files` its harness copies beside each other: utils.py often comes from the
folder above) and a submission defining `custom_kernel(data)`. The mapping:

  tests / benchmarks    shapes: each argument but `seed` is an axis (`size` becomes the
                        axis `size_`, a results column being called size); benchmarks are
                        the default shapes on a GPU, tests without one
  generate_input        make_inputs: called with the shape's arguments and the listed seed
                        moved by gpubench's draw (problem_seed), so every draw (check,
                        timing, re-check, fresh probe) is new data, as the leaderboard's
                        secret seed, and of the size the problem's generator expects
  data's output slot    the harness's `out`: the last tensor of `data` the size of what
                        ref_kernel returns and whose values it never reads (found once per
                        shape, outputs.py; a tuple's tensors share one flat `out`);
                        gpubench poisons it before every checked call
  custom_kernel         a variant called with `data` rebuilt around `out`; what it returns
                        is copied into `out` unless it is `out`'s memory (that copy is
                        then timed)
  check_implementation  the verdict on every checked output (families/check.OwnVerdict),
                        given the output in the form custom_kernel returned it, as the
                        leaderboard's eval.py gives it (a 0-dim sum of a (1,) slot: 0-dim)
  ref_kernel            the baseline variant `reference`

The problem's Python runs in the worker only; gpubench reads its files as text to plan.
reference.py is imported, and sealed (families/trusted.py), before any submission."""

from __future__ import annotations

import os
from pathlib import Path

from gpubench.errors import SpecError
from gpubench.families.check import CheckResult, OwnVerdict
from gpubench.families.leaderboard import common
from gpubench.families.leaderboard.family import LeaderboardFamily, Scoring
from gpubench.families.leaderboard.manifest import Manifest
from gpubench.families.leaderboard.modules import module_from_file
from gpubench.families.leaderboard.outputs import Layout, find
from gpubench.families.trusted import trust

NAME = "reference-kernels"
ENTRY = "custom_kernel"
REFERENCE_NAMES = ("ref_kernel", "generate_input", "check_implementation")
SCORE_LABEL = ("reference-kernels score: the geometric mean over the benchmark shapes of "
               "gpubench's medians (the leaderboard ranks by it; lower is better)")


# A draw moves the listed seed by less than this: task.yml files list seeds of 4-5 digits,
# and a generator may use its seed as a value (pmpp's sort_py: row i's mean is seed + i).
# Below 2^17 a float32 step is 2^-6 at most, so a randn around the mean keeps ~10^2 distinct
# values per unit of spread; a seed near 2^62 rounds every element to the mean (one value
# repeated, which a copy of the input "sorts"). 2^16 offsets keep draws apart: timing sets
# take consecutive seeds, and a fresh-probe seed meets a seen one once in ~16,000 draws.
SEED_SPAN = 1 << 16


def problem_seed(listed: int, draw: int) -> int:
    """The seed generate_input gets for one of gpubench's draws: the seed task.yml lists for
    the shape, moved by the draw within SEED_SPAN, never by more."""
    return listed + draw % SEED_SPAN


def recognises(path: Path) -> bool:
    return path.is_dir() and (path / "reference.py").is_file() and \
        (path / "task.yml").is_file()


def problem_name(path: Path) -> str:
    return path.resolve().name


def check_problem(path: Path, submissions: tuple[Path, ...]) -> None:
    """What can be told without running anything: the names each file must define."""
    common.require_names(path / "reference.py", REFERENCE_NAMES, "the problem's reference.py")
    for submission in submissions:
        common.require_names(submission, (ENTRY,), "the submission")


def read_task(path: Path) -> dict:
    import yaml

    try:
        task = yaml.safe_load((path / "task.yml").read_text()) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise SpecError(f"{path / 'task.yml'}: cannot read it: {common.one_line(exc, 200)}") \
            from None
    for key in ("tests", "benchmarks"):
        entries = task.get(key) or []
        if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
            raise SpecError(f"{path / 'task.yml'}: `{key}` must be a list of mappings")
    if not (task.get("tests") or task.get("benchmarks")):
        raise SpecError(f"{path / 'task.yml'}: lists no tests and no benchmarks")
    return task


def bare_modules(path: Path, task: dict) -> dict[str, Path]:
    """{module name: file} of task.yml's `files` (utils.py from ../utils.py, ...), the
    submission and the harness's own main left out; without `files`, the folder's."""
    files = {}
    for entry in task.get("files") or []:
        name, source = entry.get("name", ""), entry.get("source", "")
        if name.endswith(".py") and not source.startswith("@") and name != "eval.py":
            files[name[:-3]] = (path / source).resolve()
    for name in ("task", "utils", "reference"):
        for folder in (path, path.parent):
            if name not in files and (folder / f"{name}.py").is_file():
                files[name] = (folder / f"{name}.py").resolve()
    return files


def load(name: str, manifest: Manifest) -> LeaderboardFamily:
    path = manifest.problem
    task = read_task(path)
    tests, benchmarks = task.get("tests") or [], task.get("benchmarks") or []
    strip = [{k: v for k, v in e.items() if k != "seed"} for e in (*benchmarks, *tests)]
    axes = common.arg_axes(strip, strip[0])
    dtypes = common.float_dtypes_in(_generate_input(path)) or ("float32",)
    runtime = Runtime(path, bare_modules(path, task), axes, dtypes)
    variants = common.problem_variants(manifest.submissions, lambda file: Call(runtime, file),
                                       False, "the problem's ref_kernel", "custom_kernel of")
    shape_of = runtime.shape_args_to_shape
    family = LeaderboardFamily(
        reference=runtime.reference, make_inputs=runtime.make_inputs,
        make_output=runtime.make_output, flops=lambda shape: 0.0,
        bytes_moved=lambda shape, itemsize: 0.0, variants=tuple(variants), dtypes=dtypes,
        axes=tuple(a.axis for a in axes),
        shapes=tuple(shape_of(e) for e in benchmarks or tests),
        cpu_shapes=tuple(shape_of(e) for e in tests or benchmarks),
        description=f"{NAME} problem {path}", scoring=None, problem_format=NAME)
    object.__setattr__(family, "name", name)
    for entry in (*tests, *benchmarks):
        runtime.seeds.setdefault(_key(family.shape_of(shape_of(entry))), entry.get("seed", 0))
    scored = tuple(family.shape_of(shape_of(e)) for e in benchmarks)
    object.__setattr__(family, "scoring", Scoring("geomean", scored, SCORE_LABEL))
    return family


def _generate_input(path: Path):
    tree = common.parse_file(path / "reference.py")
    found = [n for n in tree.body if getattr(n, "name", "") == "generate_input"]
    return found[0] if found else tree


class Runtime:
    """The problem as it runs in the worker (and in the judge, which draws its own): its
    modules (imported on first use), and per shape the layout of the output in `data` and
    in `out` (outputs.py). make_inputs records the point it draws for (`current`): the
    reference and the calls that follow are of that point, which is the order in which
    the worker uses a family."""

    def __init__(self, path: Path, bare: dict[str, Path], axes, dtypes: tuple[str, ...]):
        self.path, self.bare, self.axes, self.dtypes = path, bare, axes, dtypes
        self.seeds: dict = {}  # shape (its items) -> the seed task.yml lists for it
        self.layouts: dict[tuple, Layout] = {}  # shape (its items) -> the output's layout
        self.one_tensor: dict = {}  # shape -> generate_input returned one bare tensor
        self.current = None  # (shape, torch dtype) of the latest make_inputs
        self._reference = None
        self._kernels: dict = {}

    def shape_args_to_shape(self, entry: dict) -> dict:
        return {a.axis.name: a.encode(entry[a.key]) for a in self.axes if a.key in entry}

    def module(self):
        if self._reference is None:
            # ref_kernels run under torch.use_deterministic_algorithms(True), which refuses
            # cuBLAS without this workspace setting (the leaderboard's runners set it too)
            os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
            self._reference = trust(module_from_file(self.path / "reference.py", self.bare,
                                                     "gpubench_problem"))
        return self._reference

    def kernel(self, file: Path | None):
        reference = self.module()  # trusted and sealed before the submission's code runs
        if file is None:
            return reference.ref_kernel
        if file not in self._kernels:
            module = module_from_file(file, {**self.bare, "reference": self.bare.get(
                "reference", self.path / "reference.py")}, "gpubench_submission")
            entry = getattr(module, ENTRY, None)
            if not callable(entry):
                raise SpecError(f"{file}: defines no callable {ENTRY}(data)")
            self._kernels[file] = entry
        return self._kernels[file]

    def make_inputs(self, shape, dtype, device: str) -> tuple:
        import torch

        args = {a.key: a.decode(shape[a.axis.name]) for a in self.axes}
        listed = self.seeds.get(_key(shape), 0)  # a shape of the user's: no listed seed
        seed = problem_seed(int(listed), torch.initial_seed())
        data = self.module().generate_input(**args, seed=seed)
        key = _key(shape)
        # An older problem's generate_input returns its one tensor bare (pmpp's vectorsum),
        # and its ref_kernel takes it so: every call gets the data in the shape it was made.
        self.one_tensor[key] = not isinstance(data, tuple | list)
        data = (data,) if self.one_tensor[key] else tuple(data)
        if key not in self.layouts:
            self.layouts[key] = find(data, lambda items: self.module().ref_kernel(
                self.packed(items, key)), str(self.path / "reference.py"))
        self.current = (key, dtype)
        return self.layouts[key].inputs_of(data)

    def packed(self, items, key=None):
        """`items` as the problem's kernels take their data: the one tensor itself where
        generate_input returned it bare, else the sequence."""
        key = self.current[0] if key is None else key
        return items[0] if self.one_tensor.get(key) else items

    def make_output(self, shape, dtype, device: str):
        import torch

        layout = self.layouts[_key(shape)]
        return torch.empty(layout.out_shape, dtype=layout.dtype, device=device)

    def layout(self, key=None) -> Layout:
        return self.layouts[self.current[0] if key is None else key]

    def data_around(self, inputs: tuple, out, key=None) -> tuple:
        """`data` as the problem's kernels take it: the inputs with `out` (its pieces) in
        the slots, or the inputs alone, packed (bare where generate_input made it so)."""
        return self.packed(self.layout(key).around(tuple(inputs), out), key)

    def reference(self, *inputs):
        """The problem's verdict on an output for these inputs (gpubench hands float64
        copies of floating inputs: they go back to the point's dtype, exactly)."""
        import torch

        dtype = self.current[1]
        native = tuple(x.to(dtype) if isinstance(x, torch.Tensor) and x.is_floating_point()
                       else x.clone() if isinstance(x, torch.Tensor) else x for x in inputs)
        return ProblemCheck(self, native, self.current[0])


class ProblemCheck(OwnVerdict):
    """check_implementation(data, output) on `data` rebuilt with scratch output slots
    (ref_kernel writes into them), never the variant's buffer. `out` comes in the form the
    variant returned it (its shape: Call gives back `out` or a view of it, and the judge's
    copy keeps that shape); a tuple result is handed over as the reference's pieces."""

    def __init__(self, runtime: Runtime, inputs: tuple, key):
        self.runtime, self.inputs, self.key = runtime, inputs, key

    def judge(self, out, atol: float, rtol: float) -> CheckResult:
        import torch

        layout = self.runtime.layout(self.key)
        scratch = torch.empty(layout.out_shape, dtype=layout.dtype, device=out.device) \
            if layout.has_slots else None
        data = self.runtime.data_around(self.inputs, scratch, self.key)
        total = out.numel()
        try:
            verdict = self.runtime.module().check_implementation(data, layout.checked(out))
        except Exception as exc:
            return CheckResult(False, float("inf"), float("inf"), total, 0, total, atol, rtol,
                               note=common.one_line(f"check_implementation raised "
                                                    f"{type(exc).__name__}: {exc}"))
        passed, message = _verdict(verdict)
        if passed:
            return CheckResult(True, 0.0, 0.0, 0, 0, total, atol, rtol,
                               note="passed the problem's check_implementation")
        return CheckResult(False, float("inf"), float("inf"), total, 0, total, atol, rtol,
                           note=common.one_line(f"check_implementation: {message or 'failed'}"))


def _verdict(value) -> tuple[bool, str]:
    """(passed, message) from what check_implementation returned: (bool, str) as its
    utils.match_reference does, a bare bool, or a message (empty: passed)."""
    if isinstance(value, tuple | list) and value:
        return bool(value[0]), str(value[1]) if len(value) > 1 else ""
    if isinstance(value, str):
        return not value, value
    return bool(value), ""


class Call:
    """A variant as gpubench calls it, fn(*inputs, out): ref_kernel or custom_kernel on
    `data` rebuilt around `out`; a result that is not `out` itself is copied into it.
    It gives back `out` in the form the kernel returned (outputs.Layout.store), which the
    worker's Invocation passes on as the call's output (`returns_checked_view`): re-checks
    copy it and the judge receives it in that shape."""

    returns_checked_view = True

    def __init__(self, runtime: Runtime, file: Path | None):
        self.runtime, self.file = runtime, file

    def load(self) -> None:
        """Import the problem and the submission (the worker's build phase calls this)."""
        self.runtime.kernel(self.file)

    def __call__(self, *inputs_and_out):
        *inputs, out = inputs_and_out
        result = self.runtime.kernel(self.file)(self.runtime.data_around(tuple(inputs), out))
        return self.runtime.layout().store(out, result)


def _key(shape) -> tuple:
    return tuple(shape.items())
