"""KernelBench problems (github.com/ScalingIntelligence/KernelBench) as families.

A problem is one file: `class Model(nn.Module)`, `get_inputs()`, `get_init_inputs()` and
module-level constants (batch_size = 16, dim = 16384) that both functions read; a
solution is a file defining `ModelNew` with Model's constructor and forward. The mapping:

  module-level int constants   axes (the positive ones), their values the one default shape;
                               a --shape sets the constants before get_inputs/get_init_inputs
                               run (a name gpubench keeps for its columns gets '_' appended:
                               size -> size_)
  get_inputs()                 make_inputs: drawn from torch's generator, which gpubench seeds
                               per draw, on the point's device, floating ones in its dtype
  get_init_inputs(), seed 42   both models are built as KernelBench's eval builds them: the
                               seed set before the init inputs and before each constructor, so
                               Model and ModelNew start from the same weights
  Model                        the baseline variant `reference`, and the check's reference
                               (at the point's dtype, not float64: what KernelBench compares to)
  ModelNew                     a variant per solution file, forward under torch.no_grad()
  tolerance                    KernelBench's: atol = rtol = 1e-4 in float32, 1e-2 in float16
                               and bfloat16 (eval.get_tolerance_for_precision; its v0/v0.1
                               used 1e-2 in float32)

The problem's Python runs in the worker only; gpubench reads the file as text to plan."""

from __future__ import annotations

import ast
import operator
from pathlib import Path

from gpubench.errors import SpecError
from gpubench.families.leaderboard import common
from gpubench.families.leaderboard.family import LeaderboardFamily, Scoring
from gpubench.families.leaderboard.manifest import Manifest
from gpubench.families.leaderboard.modules import module_from_file
from gpubench.families.trusted import trust

NAME = "kernelbench"
ENTRY = "ModelNew"
PROBLEM_NAMES = ("Model", "get_inputs", "get_init_inputs")
SEED = 42  # KernelBench's eval: set_seed(seed_num=42) before init inputs and each model
TOLERANCES = {"float32": (1e-4, 1e-4), "float16": (1e-2, 1e-2), "bfloat16": (1e-2, 1e-2)}
SCORE_LABEL = ("KernelBench score: the speedup of ModelNew over Model (eager PyTorch), from "
               "gpubench's medians (fast_p counts the correct ones above p)")
_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
        ast.FloorDiv: operator.floordiv, ast.Pow: operator.pow}


def recognises(path: Path) -> bool:
    if not (path.is_file() and path.suffix == ".py"):
        return False
    try:
        names = common.top_level_names(common.parse_file(path))
    except Exception:
        return False
    return set(PROBLEM_NAMES) <= names


def problem_name(path: Path) -> str:
    return path.stem


def check_problem(path: Path, submissions: tuple[Path, ...]) -> None:
    common.require_names(path, PROBLEM_NAMES, "the KernelBench problem")
    for submission in submissions:
        common.require_names(submission, (ENTRY,), "the solution")


def constants(tree: ast.Module) -> dict[str, int]:
    """The module's top-level `name = <int arithmetic>` assignments, evaluated (no call,
    no name: what cannot be evaluated this way is no axis)."""
    found = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and \
                isinstance(node.targets[0], ast.Name):
            value = _int_value(node.value)
            if value is not None:
                found[node.targets[0].id] = value
    return found


def _int_value(node):
    if isinstance(node, ast.Constant):
        value = node.value
        return value if isinstance(value, int) and not isinstance(value, bool) else None
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        left, right = _int_value(node.left), _int_value(node.right)
        if left is None or right is None or (isinstance(node.op, ast.Pow) and right > 64):
            return None
        return _OPS[type(node.op)](left, right)
    return None


def load(name: str, manifest: Manifest) -> LeaderboardFamily:
    path = manifest.problem
    # positive ints only: a 0 (padding = 0) stays the file's value, as tuples do
    values = {k: v for k, v in constants(common.parse_file(path)).items() if v > 0}
    axes = common.arg_axes([values], values) if values else ()
    if not axes:  # nothing to vary: one nominal axis, so the family has a shape
        axes = common.arg_axes([{"n": 1}], {"n": 1})
    runtime = Runtime(path, axes)
    variants = common.problem_variants(manifest.submissions,
                                       lambda file: ModelCall(runtime, file), True,
                                       "the problem's Model", "ModelNew of")
    family = LeaderboardFamily(
        reference=runtime.reference, make_inputs=runtime.make_inputs,
        make_output=runtime.make_output, flops=lambda shape: 0.0,
        bytes_moved=lambda shape, itemsize: 0.0, variants=tuple(variants),
        dtypes=tuple(TOLERANCES), tolerances=TOLERANCES, axes=tuple(a.axis for a in axes),
        description=f"{NAME} problem {path}", problem_format=NAME)
    object.__setattr__(family, "name", name)
    object.__setattr__(family, "scoring", Scoring("speedup", (), SCORE_LABEL))
    return family


class Runtime:
    """The problem as it runs in the worker: its module (imported once; its constants set
    per shape), the models per (shape, dtype, device), and per shape what the reference
    returned (`out` is made like it). make_inputs records the point it draws for."""

    def __init__(self, path: Path, axes):
        self.path, self.axes = path, axes
        self._module = None
        self._classes: dict = {}
        self._models: dict = {}
        self.outputs: dict = {}  # point -> (shape, dtype) of the reference's output
        self.current = None  # (shape items, torch dtype, device) of the latest make_inputs

    def module(self):
        if self._module is None:
            self._module = trust(module_from_file(self.path, {}, "gpubench_kernelbench"))
        return self._module

    def _set_constants(self, key) -> None:
        module = self.module()
        for spec, (_, value) in zip(self.axes, key, strict=True):
            if spec.key in vars(module):
                setattr(module, spec.key, spec.decode(value))

    def make_inputs(self, shape, dtype, device: str) -> tuple:
        import torch

        key = tuple(shape.items())
        self._set_constants(key)
        with torch.device(device):  # drawn where they are used: no host copy of GBs
            inputs = self.module().get_inputs()
        self.current = (key, dtype, device)
        return tuple(_placed(x, dtype, device) for x in inputs)

    def model(self, file: Path | None):
        """Model (file None) or the solution's ModelNew for the current point, built once."""
        import torch

        key, dtype, device = self.current
        cache = (file, key, dtype, device)
        if cache not in self._models:
            cls = self.model_class(file)
            self._set_constants(key)
            torch.manual_seed(SEED)
            init = [_placed(x, dtype, device) for x in self.module().get_init_inputs()]
            torch.manual_seed(SEED)
            with torch.device(device):
                built = cls(*init)
            self._models[cache] = built.to(device=device, dtype=dtype)
        return self._models[cache]

    def model_class(self, file: Path | None):
        problem = self.module()  # trusted and sealed before the solution's code runs
        if file is None:
            return problem.Model
        if file not in self._classes:
            module = module_from_file(file, {}, "gpubench_kernelbench_solution")
            cls = getattr(module, ENTRY, None)
            if not callable(cls):
                raise SpecError(f"{file}: defines no class {ENTRY}")
            self._classes[file] = cls
        return self._classes[file]

    def reference(self, *inputs):
        """Model's output at the point's dtype: gpubench hands float64 copies of floating
        inputs, which go back to that dtype exactly."""
        import torch

        dtype = self.current[1]
        native = [x.to(dtype) if isinstance(x, torch.Tensor) and x.is_floating_point() else x
                  for x in inputs]
        with torch.no_grad():
            result = self.model(None)(*native)
        if not isinstance(result, torch.Tensor):
            raise SpecError(f"{self.path}: Model returned a {type(result).__name__}; "
                            "gpubench checks one tensor output")
        self.outputs[self.current[0]] = (tuple(result.shape), result.dtype)
        return result

    def make_output(self, shape, dtype, device: str):
        import torch

        out_shape, out_dtype = self.outputs[tuple(shape.items())]
        return torch.empty(out_shape, dtype=out_dtype, device=device)


class ModelCall:
    """A variant as gpubench calls it, fn(*inputs) -> output: the model's forward."""

    def __init__(self, runtime: Runtime, file: Path | None):
        self.runtime, self.file = runtime, file

    def load(self) -> None:
        """Import the problem and the solution (the worker's build phase calls this)."""
        self.runtime.model_class(self.file)

    def __call__(self, *inputs):
        import torch

        model = self.runtime.model(self.file)
        with torch.no_grad():
            return model(*inputs)


def _placed(item, dtype, device: str):
    """A tensor on `device`, floating ones in `dtype` (as KernelBench's eval casts them)."""
    import torch

    if not isinstance(item, torch.Tensor):
        return item
    item = item.to(device)
    return item.to(dtype) if item.is_floating_point() else item
