"""What both leaderboard formats share: reading a Python file without running it, turning
a format's named arguments into gpubench axes, naming submissions as variants.

Pure (ast and strings): gpubench's own process plans a run from these without importing
the problem, whose code runs in the worker only."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

from gpubench.errors import SpecError, UsageError
from gpubench.families.spec import TorchVariant
from gpubench.records.result import RESERVED_COLUMNS
from gpubench.records.shape import Axis

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# torch's names of its floating dtypes -> gpubench's
TORCH_FLOATS = {"float16": "float16", "half": "float16", "bfloat16": "bfloat16",
                "float32": "float32", "float": "float32", "float64": "float64",
                "double": "float64"}


def parse_file(path: Path) -> ast.Module:
    try:
        return ast.parse(Path(path).read_text(), filename=str(path))
    except SyntaxError as exc:
        raise SpecError(f"{path}: line {exc.lineno}: SyntaxError: {exc.msg}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: cannot read it ({exc})") from None


def top_level_names(tree: ast.Module) -> set[str]:
    """Every name the module binds at its top level: defs, classes, assignments, imports."""
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(t.id for t in targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names


def require_names(path: Path, names: tuple[str, ...], what: str) -> None:
    """A SpecError naming what `path` lacks of `names` (read, never run)."""
    missing = [n for n in names if n not in top_level_names(parse_file(path))]
    if missing:
        raise SpecError(f"{path}: {what} defines no {', '.join(missing)}")


def float_dtypes_in(tree: ast.AST) -> tuple[str, ...]:
    """The floating dtypes `torch.<name>` that the code names, in order of appearance."""
    found = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id == "torch" and node.attr in TORCH_FLOATS):
            found.append(TORCH_FLOATS[node.attr])
    return tuple(dict.fromkeys(found))


def axis_name(key: str, taken: set[str]) -> str:
    """A format's argument name as an axis name: itself where gpubench allows it, else
    with '_' appended ('size' is a results column: the axis is 'size_')."""
    name = key if _IDENTIFIER.match(key) else re.sub(r"\W", "_", key) or "arg"
    if not _IDENTIFIER.match(name):
        name = f"arg_{name}"
    while name in RESERVED_COLUMNS or name in taken:
        name += "_"
    return name


@dataclass(frozen=True)
class ArgAxis:
    """One named argument of a format as an axis. A positive int is its own value; any
    other value (a bool, a float, a string, 0) is its position in `values` plus one, since
    an axis holds positive ints only."""

    key: str  # the format's name (what generate_input or the module calls it)
    axis: Axis
    values: tuple = ()  # non-empty: the argument is categorical

    def encode(self, value) -> int:
        if not self.values:
            return value
        return self.values.index(value) + 1

    def decode(self, number: int):
        if not self.values:
            return number
        if not 1 <= number <= len(self.values):
            raise UsageError(f"axis {self.axis.name}: {number} is none of the problem's "
                             f"values (1..{len(self.values)} stand for {list(self.values)})")
        return self.values[number - 1]


def arg_axes(entries: list[dict], default: dict) -> tuple[ArgAxis, ...]:
    """Axes for the keys of `entries` (in order of first appearance), each defaulting to
    its value in `default`."""
    keys = list(dict.fromkeys(k for entry in entries for k in entry))
    taken: set[str] = set()
    axes = []
    for key in keys:
        seen = [entry.get(key) for entry in entries]
        plain = all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in seen)
        values = () if plain else tuple(dict.fromkeys(seen))
        name = axis_name(key, taken)
        taken.add(name)
        spec = ArgAxis(key, Axis(name), values)
        first = spec.encode(default.get(key)) if key in default else None
        described = f"{key}" + (f" (1..{len(values)} = {list(values)})" if values else "")
        axes.append(ArgAxis(key, Axis(name, described, first), values))
    return tuple(axes)


def variant_names(paths: tuple[Path, ...], reserved: str) -> list[str]:
    """A variant name per submission: its file's stem, with its folder's name in front
    where two stems are the same (solutions/correct/ref.py, solutions/wrong/ref.py)."""
    def clean(text: str) -> str:
        return re.sub(r"[^A-Za-z0-9_-]", "_", text) or "submission"

    stems = [clean(p.stem) for p in paths]
    names = []
    for path, stem in zip(paths, stems, strict=True):
        name = stem if stems.count(stem) == 1 and stem != reserved else \
            f"{clean(path.parent.name)}-{stem}"
        while name in names or name == reserved:
            name += "_"
        names.append(name)
    return names


def one_line(text: str, limit: int = 300) -> str:
    """A message of the problem's own (its check's) as one line of at most `limit`."""
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[:limit - 3] + "..."


def problem_variants(submissions: tuple[Path, ...], call, returns: bool, reference: str,
                     submitted: str) -> list:
    """The problem's reference (the baseline, `call(None)`) and one variant per
    submission file (`call(file)`), named by variant_names; `reference` and `submitted`
    (with the file's path after it) describe them in `list` and the legend."""
    variants = [TorchVariant("reference", baseline=True, returns=returns, fn=call(None),
                             description=reference)]
    for label, file in zip(variant_names(submissions, "reference"), submissions, strict=True):
        variants.append(TorchVariant(label, returns=returns, fn=call(file),
                                     description=f"{submitted} {file}"))
    return variants
