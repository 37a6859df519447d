"""`gpubench list`: families, variants, dtypes, and whether each variant can run here.

One row per family (bold), its variants indented under it; the table fits the terminal
(report/table.FittedTable): 'runs here' and 'about' wrap at spaces, and a narrow terminal
loses the dtypes column first, with a caption that says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.text import Text

from gpubench import errors, safe_text
from gpubench.families.discovery import family_dirs, load_family
from gpubench.families.spec import Family, Machine, Variant
from gpubench.report.table import FittedTable
from gpubench.run.machine import describe, detect_machine

NAME = "family/variant"
HEADERS = [NAME, "kind", "dtypes", "runs here", "about"]
# A narrow terminal loses the dtypes first: 'runs here' names the dtypes a variant cannot
# run, and `gpubench run` says which it ran. Name, kind, runs here and about always stay.
DROP_ORDER = ("dtypes",)
# Wrapping columns and their narrowest widths: 21 keeps the usual verdicts ('float32,
# float16 only', 'no: needs a CUDA GPU') on one line; at 24 a description still reads as
# sentences, four or five words a line. Both fit at 80 columns beside name and kind.
WRAP = {"runs here": 21, "about": 24}
# Variants sit under their family, indented: one column instead of two for the names.
INDENT = "  "


@dataclass(frozen=True)
class ListRequest:
    """What `gpubench list` was asked for, built once by the CLI."""

    kernels_dirs: tuple[Path, ...] = ()  # --kernels-dir: the user's own family folders
    device: str = "auto"  # judge 'runs here' for this device


def list_families(request: ListRequest, console: Console) -> int:
    machine = detect_machine(request.device)
    table, broken = families_table(request.kernels_dirs, machine)
    console.print(table)
    return errors.EXIT_SPEC if broken else errors.EXIT_OK


def families_table(kernels_dirs: tuple[Path, ...],
                   machine: Machine) -> tuple[FittedTable, list[str]]:
    """(the table, fitted to the console it is printed on; the spec errors met)."""
    rows, broken = [], []
    for name, folder in family_dirs(kernels_dirs).items():
        try:
            family = load_family(name, folder)
        except errors.SpecError as exc:
            broken.append(str(exc))
            rows.append(_row(Text(safe_text.one_line(name), style="bold"),
                             runs=Text("spec error", style="bold red"),
                             about=str(exc)))
            continue
        rows.append(_family_row(family, folder, machine))
        rows += [_variant_row(family, variant, machine) for variant in family.variants]
    return FittedTable(f"Kernel families ({describe(machine)})", HEADERS, rows,
                       order=DROP_ORDER, wrap=WRAP), broken


def _family_row(family: Family, folder: Path, machine: Machine) -> dict:
    """The family's name, dtypes, and what it computes, its axes, default shapes, folder."""
    shapes = "; ".join(s.label() for s in family.default_shapes(machine))
    about = (f"{family.description} (axes {', '.join(family.axis_names)}; default shapes "
             f"{shapes}; folder {safe_text.one_line(_shown_path(folder))})")
    return _row(Text(safe_text.one_line(family.name), style="bold"),
                dtypes=", ".join(family.dtypes), about=about)


def _variant_row(family: Family, variant: Variant, machine: Machine) -> dict:
    label = variant.name + (" (base)" if variant.baseline else "")
    return _row(INDENT + label, kind=variant.kind,
                dtypes=", ".join(variant.dtypes or family.dtypes),
                runs=_runs_here(family, variant, machine), about=variant.description)


def _runs_here(family: Family, variant: Variant, machine: Machine) -> Text:
    """'yes', 'float32, float16 only', or 'no: <why>' (the reason of its first dtype)."""
    reasons = {d: variant.unavailable_reason(d, machine) for d in family.dtypes}
    runnable = [d for d, why in reasons.items() if why is None]
    if len(runnable) == len(reasons):
        return Text("yes", style="green")
    if runnable:
        return Text(f"{', '.join(runnable)} only", style="yellow")
    return Text(f"no: {next(iter(reasons.values()))}", style="red")


def _row(name, kind: str = "", dtypes: str = "", runs: Text | str = "",
         about: str = "") -> dict:
    return {NAME: name, "kind": kind, "dtypes": dtypes, "runs here": runs, "about": about}


def _shown_path(folder: Path) -> str:
    """The folder relative to the current one when it lies inside it: the absolute prefix
    says nothing there and would be the widest word of the 'about' column."""
    try:
        return str(folder.relative_to(Path.cwd()))
    except ValueError:
        return str(folder)
