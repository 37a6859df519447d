"""`gpubench list [FAMILY ...]`: which kernel families exist, and one of them in full.

Without a name, one line per family (report/line_table.LineTable): dtypes, how many default
shapes, how many variants run here, and the variants' names, cut to the width; eight
families are eight lines at 80 columns, where a table of every variant took ~110. With
names, each family in full (listing_detail.py): its description, folder, axes and their
defaults, default shapes on this machine, and every variant with its kind, dtypes, whether
it runs here and, where not, why.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.text import Text

from gpubench import errors, safe_text
from gpubench.commands.listing_detail import (
    default_shapes_or_why,
    family_views,
    runs_here_count,
    short_dtype,
)
from gpubench.families.discovery import family_dirs, load_family
from gpubench.families.spec import Family, Machine
from gpubench.report.line_table import LineTable
from gpubench.run.machine import describe, detect_machine

HEADERS = ["family", "dtypes", "shapes", "runs here", "variants"]
# A narrow terminal loses the default shape count first (`list FAMILY` shows them), then
# the dtypes; family, what runs here and the names stay.
DROP_ORDER = ("shapes", "dtypes")
HINT = "gpubench list FAMILY: variants, axes, shapes, and why a variant cannot run here."


@dataclass(frozen=True)
class ListRequest:
    """What `gpubench list` was asked for, built once by the CLI."""

    families: tuple[str, ...] = ()  # shown in full; none: one line per family
    kernels_dirs: tuple[Path, ...] = ()  # --kernels-dir: the user's own family folders
    device: str = "auto"  # judge 'runs here' for this device


def execute(request: ListRequest, console: Console) -> int:
    machine = detect_machine(request.device)
    if request.families:
        views, broken = family_views(request.families, request.kernels_dirs, machine)
        for view in views:
            console.print(view)
    else:
        broken = print_summary(console, request.kernels_dirs, machine)
    return errors.EXIT_SPEC if broken else errors.EXIT_OK


def print_summary(console: Console, kernels_dirs: tuple[Path, ...], machine: Machine) -> list:
    """The machine line, one line per family, the spec errors met in full, the hint;
    returns the spec errors."""
    table, broken = families_summary(kernels_dirs, machine)
    console.print(Text(describe(machine), style="dim"))
    console.print(table)
    for name, message in broken:
        console.print(Text(f"{safe_text.one_line(name)}: {safe_text.terminal(message)}",
                           style="red"))
    dropped = table.dropped(console.width)
    console.print(Text((f"Not shown at {console.width} columns: {', '.join(dropped)}. "
                        if dropped else "") + HINT, style="dim"))
    return broken


def families_summary(kernels_dirs: tuple[Path, ...],
                     machine: Machine) -> tuple[LineTable, list[tuple[str, str]]]:
    """(one line per family; the (name, spec error) of each family that did not load)."""
    rows, broken = [], []
    for name, folder in family_dirs(kernels_dirs).items():
        try:
            family = load_family(name, folder)
            rows.append(_summary_row(family, machine))
        except errors.SpecError as exc:
            broken.append((name, str(exc)))
            rows.append({"family": Text(safe_text.one_line(name), style="bold"),
                         "runs here": Text("spec error", style="bold red"),
                         "variants": Text("(below)", style="red")})
    return LineTable(HEADERS, rows, flex="variants", justify={"shapes": "right"},
                     order=DROP_ORDER), broken


def _summary_row(family: Family, machine: Machine) -> dict:
    shapes = default_shapes_or_why(family, machine)
    return {"family": Text(safe_text.one_line(family.name), style="bold"),
            "dtypes": " ".join(short_dtype(d) for d in family.dtypes),
            "shapes": str(len(shapes)) if not isinstance(shapes, str) else "none",
            "runs here": runs_here_count(family, machine),
            "variants": lambda width: names_within([v.name for v in family.variants], width)}


def names_within(names: list[str], width: int) -> str:
    """As many names as fit in `width`, then '+N' for the rest: 'torch naive tiled +3'."""
    for shown in range(len(names), 0, -1):
        rest = len(names) - shown
        text = " ".join(names[:shown]) + (f" +{rest}" if rest else "")
        if len(text) <= width:
            return text
    return f"{len(names)} variants"
