"""`gpubench ncu`: Nsight Compute on one variant (or several) of a family, its advice ranked.

For each variant: a task file, then `ncu ... python -m gpubench.run.worker --once TASK` (see
profilers/ncu_command.py), then the console text checked for ncu's failures (they show in
its text, not its exit code), then the .ncu-rep read with NVIDIA's ncu_report module and
shown: header, speed of light, hints ranked by estimated speedup. Several variants add a
side-by-side comparison. `--import` shows an existing report, on any machine.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field, replace
from pathlib import Path

from rich.markup import escape
from rich.rule import Rule

from gpubench import errors, safe_text
from gpubench.commands.command import JsonCommand
from gpubench.commands.targets import TargetRequest, show_heading
from gpubench.records.strict_json import strict_dumps
from gpubench.tools.find import find_gpu_tool
from gpubench.tools.ncu.points import NcuOptions, Profiled, profile_points


@dataclass(frozen=True)
class NcuRequest(TargetRequest):
    """Everything `gpubench ncu` was asked for, built once by the CLI. The target's family is
    None with --import; --json puts metrics and hints on stdout."""

    options: NcuOptions = field(default_factory=NcuOptions)
    import_path: Path | None = None  # --import: show this .ncu-rep instead of profiling
    csv_path: Path | None = None  # --csv: also write them as CSV rows here


class NcuCommand(JsonCommand[NcuRequest]):
    def execute(self) -> int:
        request = self.request
        if request.import_path is not None:
            return self._show_imported()
        if not request.target.family:
            raise errors.UsageError("name a kernel family (gpubench ncu square), or --import a "
                                    "report")
        ncu = find_gpu_tool("ncu", request.options.ncu_path)  # before anything slow
        target = request.resolve("ncu")
        options = replace(request.options, ncu_path=ncu)
        self._say(f"ncu {ncu} on {target.describe()}; --clock-control "
                  f"{options.clock_control} "
                  "(clocks as found, not locked to base)")
        outcomes = profile_points(target.points, target.run_dir, options)
        return self._show(outcomes)

    def _show_imported(self) -> int:
        from gpubench.tools.ncu.report import load_profiles
        from gpubench.tools.ncu.report_module import import_ncu_report

        path = self.request.import_path
        module = import_ncu_report(self.request.options.ncu_path)
        profiles = load_profiles(path, module)
        return self._show([Profiled(path.stem, path, profiles)])

    def _show(self, outcomes: list[Profiled]) -> int:
        from gpubench.tools.ncu import view as ncu_view

        profiled = {o.variant: o.profiles for o in outcomes if o.profiles}
        if self.request.as_json:
            document = ncu_view.profiles_to_json(profiled)
            document["errors"] = {o.variant: str(o.error) for o in outcomes if o.error}
            sys.stdout.write(strict_dumps(document) + "\n")
        else:
            for outcome in outcomes:
                self._show_one(outcome, ncu_view)
            mains = {o.variant: o.main for o in outcomes if o.main is not None}
            if len(mains) > 1:
                self.console.print(Rule("variants side by side"))
                self.console.print(ncu_view.comparison_table(mains))
        if self.request.csv_path is not None:
            self._write_csv(ncu_view.profiles_to_rows(profiled))
            self._say(f"CSV: {self.request.csv_path}")
        failed = [o for o in outcomes if o.error is not None]
        return failed[0].error.exit_code if failed else errors.EXIT_OK

    def _write_csv(self, rows: list[dict]) -> None:
        """--csv: a missing folder is made; one that cannot be written to (read-only, a file in
        the way) is an OutputError naming the path, not a traceback after the views."""
        import pandas as pd

        path = self.request.csv_path
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            safe = [{safe_text.csv_cell(k): safe_text.csv_cell(v) for k, v in row.items()}
                    for row in rows]  # variant and kernel names are the user's
            pd.DataFrame(safe).to_csv(path, index=False)
        except (FileExistsError, NotADirectoryError) as exc:
            raise errors.OutputError(f"--csv {path}: cannot write it, a file stands "
                                     f"where a folder must be ({exc.filename})") from exc
        except OSError as exc:
            raise errors.OutputError(f"--csv {path}: cannot write it "
                                     f"({exc.strerror or exc})") from exc

    def _show_one(self, outcome: Profiled, ncu_view) -> None:
        if not show_heading(self.console, outcome):
            return
        for profile in outcome.profiles:
            self.console.print(ncu_view.profile_view(profile, self.request.options.include_info))
        report = escape(safe_text.terminal(outcome.report))
        self.console.print(f"[dim]report: {report} (open in Nsight Compute, or "
                           f"gpubench ncu --import {report})[/]")


execute = NcuCommand.entry  # the module's one entry (command.py): cli/app.py calls it
