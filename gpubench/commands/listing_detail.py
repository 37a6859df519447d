"""`gpubench list FAMILY`: one family in full, as its author declared it and as it runs here.

What `gpubench run FAMILY` would do on this machine, before it does it: the default shapes
(axis defaults included), the dtypes, and every variant with whether it runs here and, for
each dtype it cannot run, why. The variants' table wraps like the results tables
(report/table.FittedTable); the facts above it are a two-column grid that wraps its values.

The facts of a family as it runs here (its default shapes or why it has none, how many
variants run, short dtype names) are read here, and by the one-line summary of every family
(listing.py), which shows a family in full through this module.
"""

from __future__ import annotations

from pathlib import Path

from rich.console import Group
from rich.table import Table
from rich.text import Text

from gpubench import errors, safe_text
from gpubench.families.discovery import family_dirs, load_family, resolve_families
from gpubench.families.spec import Family, Machine, Variant
from gpubench.parsing import DTYPE_ALIASES
from gpubench.records.shape import Axis
from gpubench.report.table import FittedTable

VARIANT_HEADERS = ["variant", "kind", "dtypes", "runs here", "about"]
# Wrapping columns and their narrowest widths: at 21 'runs here' keeps 'fp32, fp16 only'
# and 'no: needs a CUDA GPU' on one line; at 24 a description reads as sentences. Both fit
# at 80 columns beside name, kind and dtypes.
WRAP = {"runs here": 21, "about": 24}
DROP_ORDER = ("dtypes",)  # 'runs here' names the dtypes a variant cannot run
# fp32/fp16/bf16/fp64: what kernel engineers type, a third of 'float32, float16, bfloat16'.
SHORT_DTYPE = {canon: alias for alias, canon in DTYPE_ALIASES.items()
               if alias.startswith(("fp", "bf"))}


def family_views(names: tuple[str, ...], kernels_dirs: tuple[Path, ...],
                 machine: Machine) -> tuple[list, list[tuple[str, str]]]:
    """(a view per named family; the (name, spec error) of those that did not load)."""
    views, broken = [], []
    for name, folder in chosen_families(names, kernels_dirs).items():
        try:
            family = load_family(name, folder)
        except errors.SpecError as exc:
            broken.append((name, str(exc)))
            views.append(Text(f"{safe_text.one_line(name)}: {safe_text.terminal(exc)}",
                              style="red"))
            continue
        views.append(family_view(family, folder, machine))
    return views, broken


def family_view(family: Family, folder: Path, machine: Machine) -> Group:
    """The family's facts, then its variants' table."""
    title = Text(safe_text.one_line(family.name), style="bold")
    if family.description:
        title.append(f"  {safe_text.one_line(family.description)}")
    facts = Table.grid(padding=(0, 2))
    facts.add_column(style="dim", no_wrap=True)
    facts.add_column(overflow="fold")
    for label, value in _facts(family, folder, machine):
        facts.add_row(label, Text(safe_text.one_line(value)))
    return Group(title, facts, Text(""), variants_table(family, machine), Text(""))


def _facts(family: Family, folder: Path, machine: Machine) -> list[tuple[str, str]]:
    shapes = default_shapes_or_why(family, machine)
    shown = shapes if isinstance(shapes, str) else "; ".join(s.label() for s in shapes)
    where = "with a GPU" if machine.has_cuda else "without a GPU"
    facts = [("folder", _shown_path(folder)),
             ("dtypes", ", ".join(family.dtypes)),
             *(("axes" if i == 0 else "", _axis_text(axis)) for i, axis in enumerate(family.axes)),
             (f"shapes {where}", shown)]
    if family.fill is not None and len(family.axes) > 1:
        facts.append(("--sizes N", f"fills every axis: {family.shape_from_size(1024).label()} "
                                   "for N=1024"))
    return facts


def _axis_text(axis: Axis) -> str:
    """'M  rows of A and C; default 4096, 128 without a GPU'."""
    text = axis.name + (f"  {axis.description}" if axis.description else "")
    if axis.default is not None:
        text += f"; default {axis.default}"
        if axis.cpu_default is not None and axis.cpu_default != axis.default:
            text += f", {axis.cpu_default} without a GPU"
    elif axis.cpu_default is not None:
        text += f"; default {axis.cpu_default} without a GPU, none with one"
    return text


def variants_table(family: Family, machine: Machine) -> FittedTable:
    rows = [_variant_row(family, v, machine) for v in family.variants]
    title = f"variants: {runs_here_count(family, machine).plain} run here"
    return FittedTable(title, VARIANT_HEADERS, rows, order=DROP_ORDER, wrap=WRAP)


def _variant_row(family: Family, variant: Variant, machine: Machine) -> dict:
    return {"variant": variant.name + (" (base)" if variant.baseline else ""),
            "kind": variant.kind,
            "dtypes": ", ".join(short_dtype(d) for d in variant.dtypes or family.dtypes),
            "runs here": runs_here(family, variant, machine), "about": variant.description}


def runs_here(family: Family, variant: Variant, machine: Machine) -> Text:
    """'yes'; 'fp16, bf16 only' (what it declares); 'fp32, fp16 only; bf16: <why>'; 'no:
    <why>', each distinct reason once and the dtypes it holds for when they differ."""
    declared = variant.dtypes or family.dtypes
    runnable = [short_dtype(d) for d in declared if variant.unavailable_reason(d, machine) is None]
    why: dict[str, list[str]] = {}
    for dtype in declared:
        reason = variant.unavailable_reason(dtype, machine)
        if reason is not None:
            why.setdefault(reason, []).append(short_dtype(dtype))
    reasons = "; ".join(f"{', '.join(dtypes)}: {reason}" for reason, dtypes in why.items())
    if not why:
        return (Text("yes", style="green") if len(declared) == len(family.dtypes)
                else Text(f"{', '.join(runnable)} only", style="yellow"))
    if runnable:
        return Text(f"{', '.join(runnable)} only; {reasons}", style="yellow")
    if len(why) == 1 and len(declared) == len(family.dtypes):
        reasons = next(iter(why))
    return Text(f"no: {reasons}", style="red")


def _shown_path(folder: Path) -> str:
    """The folder relative to the current one when it lies inside it: the absolute prefix
    says nothing there and would be the widest word of the line."""
    try:
        return str(folder.relative_to(Path.cwd()))
    except ValueError:
        return str(folder)


def default_shapes_or_why(family: Family, machine: Machine) -> tuple | str:
    """The family's default shapes here, or why it has none (what `run` would say)."""
    try:
        shapes = family.default_shapes(machine)
    except errors.GpubenchError as exc:  # a check_shape that refuses its own default
        return str(exc)
    if not shapes:
        lacking = ", ".join(family.axes_without_default(machine))
        return f"none: give shapes, sizes, or a default to axis {lacking}"
    return shapes


def runs_here_count(family: Family, machine: Machine) -> Text:
    """'6 of 6', '4 of 6': the variants that run here at some dtype at least (which dtypes:
    `list FAMILY`)."""
    running = sum(bool(runnable_dtypes(family, v, machine)) for v in family.variants)
    total = len(family.variants)
    style = "red" if not running else "green" if running == total else "yellow"
    return Text(f"{running} of {total}", style=style)


def runnable_dtypes(family: Family, variant: Variant, machine: Machine) -> list[str]:
    return [d for d in family.dtypes if variant.unavailable_reason(d, machine) is None]


def short_dtype(dtype: str) -> str:
    return SHORT_DTYPE.get(dtype, dtype)


def chosen_families(names: tuple[str, ...], kernels_dirs: tuple[Path, ...]) -> dict[str, Path]:
    """The named families' folders; an unknown name is a usage error with a suggestion."""
    return resolve_families(names, family_dirs(kernels_dirs))
