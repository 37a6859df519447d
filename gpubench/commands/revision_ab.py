"""An `ab` of a family's folder at one git revision against another, quietly, into its own
run folder: the probe of `bisect` and the A/B behind `history --check --confirm`."""

from __future__ import annotations

import io
from dataclasses import replace
from pathlib import Path

from rich.console import Console

from gpubench.commands import ab
from gpubench.records.ab import PairVerdict
from gpubench.run.ab.export import export_revision
from gpubench.run.config import RunConfig
from gpubench.store.folder import load_run


def ab_of_revisions(family: str, folder: Path, old: str, new: str, out: Path,
                    config: RunConfig, threshold: float = ab.AB_THRESHOLD,
                    device: str = "auto", explain: bool = False) -> tuple[PairVerdict, ...]:
    """The paired verdicts of `folder` at `new` against it at `old` (both exported from
    git as `ab --base-rev` does), the record in `out`; its table is not printed. Raises
    GpubenchError where the A/B cannot run."""
    request = ab.ABRequest(family, replace(config, kernels_dirs=()),  # both sides named
                           base=export_revision(folder, old).folder,
                           new=export_revision(folder, new).folder, threshold=threshold,
                           device=device, out=out, explain=explain)
    ab.execute(request, Console(file=io.StringIO(), width=200))
    return tuple(load_run(out).pairs)

