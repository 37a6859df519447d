"""`gpubench sanitize`: each variant's call under NVIDIA compute-sanitizer, findings shown
at the user's own source lines.

For each variant and tool (memcheck, racecheck, initcheck, synccheck): the one-shot worker
(build, inputs, check, warm-up, one call) under `compute-sanitizer --tool T --xml --save`,
through the one tool driver (tool_driver.py), with PyTorch's caching allocator off:
otherwise a one-past-the-end write lands inside a larger cached block and memcheck sees
nothing (recorded on the H200: 0 errors with the cache, the bug found without it). The
XML is parsed and folded (profilers/sanitizer.py), each finding's file and line mapped to
the variant's sources by the names its build's `#line` directives gave them.

compute-sanitizer has no range filter: the kernels that build the inputs and check the
output run under it too. They are PyTorch's own; a finding in them is shown under their
kernel name, so it is told apart from the variant's.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

from rich.markup import escape
from rich.rule import Rule

from gpubench import errors, safe_text
from gpubench.commands.command import JsonCommand
from gpubench.commands.targets import TargetRequest
from gpubench.records.strict_json import strict_dumps
from gpubench.tools.driver import each_point
from gpubench.tools.find import find_gpu_tool
from gpubench.tools.sanitizer.log import TOOLS
from gpubench.tools.sanitizer.task import SANITIZE_TIMEOUT_S, Sanitized, sanitize_task, sources_of


def chosen_tools(names: tuple[str, ...]) -> tuple[str, ...]:
    """--tool memcheck,racecheck | all (default: memcheck), in compute-sanitizer's order."""
    wanted = {n.strip() for name in names for n in name.split(",") if n.strip()} or {"memcheck"}
    if "all" in wanted:
        return TOOLS
    unknown = wanted - set(TOOLS)
    if unknown:
        raise errors.unknown_name("compute-sanitizer tool", sorted(unknown)[0], TOOLS)
    return tuple(t for t in TOOLS if t in wanted)


# ---------------------------------------------------------------- the command


@dataclass(frozen=True)
class SanitizeRequest(TargetRequest):
    """Everything `gpubench sanitize` was asked for, built once by the CLI; --json puts the
    findings on stdout."""

    tools: tuple[str, ...] = ()  # --tool, as given (chosen_tools reads it; (): memcheck)
    sanitizer_path: str | None = None  # --sanitizer-path; None: PATH, then /usr/local/cuda/bin
    timeout_s: float = SANITIZE_TIMEOUT_S  # one tool run, build included


@dataclass(eq=False)
class SanitizeCommand(JsonCommand[SanitizeRequest]):
    outcomes: list[Sanitized] = field(default_factory=list)

    def execute(self) -> int:
        request = self.request
        checks = chosen_tools(request.tools)
        # before anything slow
        sanitizer = find_gpu_tool("compute-sanitizer", request.sanitizer_path)
        target = request.resolve("sanitize", largest=False)
        self._say(f"compute-sanitizer {sanitizer} ({', '.join(checks)}) on "
                  f"{target.describe()}; PyTorch's caching allocator off")
        self.outcomes = each_point(
            target.points,
            lambda task: sanitize_task(
                sanitizer, task, target.run_dir, checks, request.timeout_s,
                sources_of(target.family, target.family.variant(task.variant))),
            lambda variant, error: Sanitized(variant, error=error))
        return self._show()

    def _show(self) -> int:
        from gpubench.tools.sanitizer.view import findings_to_json, sanitize_view

        reports = [o.report for o in self.outcomes if o.report is not None]
        if self.request.as_json:
            document = findings_to_json(reports)
            document["errors"] = {o.variant: str(o.error) for o in self.outcomes if o.error}
            sys.stdout.write(strict_dumps(document) + "\n")
        else:
            for outcome in self.outcomes:
                self._show_one(outcome, sanitize_view)
        failed = [o for o in self.outcomes if o.error is not None]
        if failed:
            return failed[0].error.exit_code
        return errors.EXIT_SANITIZER_FOUND if any(o.found for o in self.outcomes) else (
            errors.EXIT_OK)

    def _show_one(self, outcome: Sanitized, sanitize_view) -> None:
        self.console.print(Rule(escape(safe_text.one_line(outcome.variant))))
        if outcome.error is not None:
            self.console.print(f"[bold red]error:[/] {escape(str(outcome.error))}")
            return
        self.console.print(sanitize_view([outcome.report]))
        if outcome.worker_error:
            self.console.print(f"[yellow]the call under the tool failed:[/] "
                               f"{escape(outcome.worker_error)}")
        elif outcome.check and not outcome.check.passed:
            self.console.print("[yellow]note:[/] this variant also FAILS its correctness check")


execute = SanitizeCommand.entry  # the module's one entry (command.py): cli/app.py calls it
