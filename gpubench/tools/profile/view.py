"""How `gpubench profile` shows a program's kernels: the table by name, the busy line, the
gaps, and what the program's exit was. Pure: builds renderables and dicts, never prints."""

from __future__ import annotations

from rich.console import Group
from rich.text import Text

from gpubench import format as fmt
from gpubench.report.table import FittedTable
from gpubench.tools.profile.kernels import Profile, compact_name
from gpubench.tools.profile.records import profile_to_dict

# Rows shown; the CSV has them all.
TOP_ROWS = 15
DROP_ORDER = ("ranges", "mean")
# Kernel names wrap at spaces to at least this width: C++ names are long, the numbers matter.
NAME_FLOOR = 24
NO_KERNELS = ("No CUDA kernels: a GPU was there, but the program (or its region) launched no "
              "kernel, so the table shows CPU ops.")
NO_GPU = ("No CUDA kernels: this program ran on the CPU (torch.cuda.is_available() was "
          "False), so the table shows CPU ops. Kernels, the GPU's busy fraction and "
          "--ncu need a CUDA GPU.")


def profile_view(profile: Profile, outcome, status: dict | None) -> Group:
    parts = [_title(profile, outcome), _table(profile)]
    parts += [Text(line) for line in _summary(profile)]
    if not profile.device:
        parts.append(Text(NO_KERNELS if (status or {}).get("cuda") else NO_GPU,
                          style="yellow"))
    parts += [Text(note, style="yellow") for note in profile.notes]
    if outcome.timed_out:
        parts.append(Text("the program ran past --timeout and was stopped; the table is what "
                          "it recorded until then", style="bold red"))
    elif outcome.exit_code:
        parts.append(Text(f"the program exited with {outcome.exit_code}; the table is what it "
                          "recorded until then. Its last stderr lines:", style="bold red"))
        parts += [Text("  " + line, style="red") for line in outcome.stderr_tail[-8:]]
    return Group(*parts)


def _title(profile: Profile, outcome) -> Text:
    what = "kernels" if profile.device else "CPU ops"
    where = (f" in region {profile.region} ({profile.region_instances - profile.skipped_instances}"
             f" of {profile.region_instances} instances)" if profile.region else
             " over the whole program")
    return Text(f"{what} by time{where}; program wall time {outcome.wall_s:.1f} s",
                style="bold")


def _table(profile: Profile) -> FittedTable:
    kind = "kernel" if profile.device else "op"
    rows = [{kind: compact_name(g.name), "origin": g.origin, "calls": str(g.calls),
             "total": fmt.duration(g.total_us * 1e-6), "mean": fmt.duration(g.mean_us * 1e-6),
             "share": fmt.percent(g.share, 1), "ranges": ", ".join(g.ranges) or "-"}
            for g in profile.groups[:TOP_ROWS]]
    headers = [kind, "origin", "calls", "total", "mean", "share", "ranges"]
    caption = (f"{len(profile.groups)} {kind}s by name ({max(len(profile.groups) - TOP_ROWS, 0)}"
               " more in kernels.csv, with full names); share: of all "
               f"{'kernel' if profile.device else 'op'} time; ranges: the record_function/NVTX "
               "ranges their launches ran under")
    return FittedTable("", headers, rows,
                       justify={h: "right" for h in ("calls", "total", "mean", "share")},
                       order=DROP_ORDER, wrap={kind: NAME_FLOOR, "ranges": NAME_FLOOR},
                       caption=caption, elsewhere="kernels.csv")


def _summary(profile: Profile) -> list[str]:
    if not profile.device:
        return []
    busy = profile.busy_fraction
    lines = [f"GPU busy {fmt.percent(busy, 1)} of the {fmt.duration(profile.window_us * 1e-6)}"
             f" from the first device event to the last (kernels "
             f"{fmt.duration(profile.kernel_us * 1e-6)}); the rest is idle: launch-bound or "
             "host-bound time"]
    if profile.gaps:
        listed = "; ".join(f"{fmt.duration(g.duration_us * 1e-6)} between {g.after} and "
                           f"{g.before} (at {fmt.duration(g.start_us * 1e-6)} into "
                           f"{'its instance' if profile.region else 'the window'})"
                           for g in profile.gaps[:3])
        lines.append(f"largest idle gaps: {listed}")
    return lines


def profile_json(profile: Profile, outcome) -> dict:
    return {"profile": profile_to_dict(profile), "exit_code": outcome.exit_code,
            "timed_out": outcome.timed_out, "wall_s": outcome.wall_s,
            "stderr_tail": outcome.stderr_tail}
