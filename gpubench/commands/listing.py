"""`gpubench list`: families, variants, dtypes, and whether each variant can run here."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.table import Table
from rich.text import Text

from gpubench import errors
from gpubench.discovery import family_dirs, load_family
from gpubench.machine import describe, detect_machine


def list_families(kernels_dirs: tuple[Path, ...], device: str, console: Console) -> int:
    machine = detect_machine(device)
    table = Table(title=f"Kernel families ({describe(machine)})", title_justify="left")
    for header in ("family", "variant", "kind", "dtypes", "runs here", "about"):
        table.add_column(header, overflow="fold")
    broken = []
    for name, folder in family_dirs(kernels_dirs).items():
        try:
            family = load_family(name, folder)
        except errors.SpecError as exc:
            broken.append(str(exc))
            table.add_row(name, "", "", "", Text("spec error", style="bold red"), str(exc))
            continue
        axes = ", ".join(family.axis_names)
        sizes = "; ".join(s.label() for s in family.default_shapes(machine))
        table.add_row(Text(name, style="bold"), "", "", ", ".join(family.dtypes), "",
                      f"{family.description} [axes {axes}; shapes {sizes}; {folder}]")
        for variant in family.variants:
            reasons = {d: variant.unavailable_reason(d, machine) for d in family.dtypes}
            runnable = [d for d, why in reasons.items() if why is None]
            if len(runnable) == len(reasons):
                verdict = Text("yes", style="green")
            elif runnable:
                verdict = Text(f"{', '.join(runnable)} only", style="yellow")
            else:
                verdict = Text(f"no: {next(iter(reasons.values()))}", style="red")
            label = variant.name + (" (base)" if variant.baseline else "")
            table.add_row("", label, variant.kind, ", ".join(variant.dtypes or family.dtypes),
                          verdict, variant.description)
    console.print(table)
    return errors.EXIT_SPEC if broken else errors.EXIT_OK
