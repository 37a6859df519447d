"""A profile as a run document (results.json, loadable with gpubench.load_run) and as CSV.

A profiled program has no timed points, so its document holds no Results; what it found
goes in meta["profile"]: the kernel groups, the busy fraction, the gaps, the region, and
the program's exit. `meta["kind"] = "profile"` tells readers (report, compare) what it is.
"""

from __future__ import annotations

import csv
import io
import time
from dataclasses import asdict

from gpubench import safe_text
from gpubench.records.run import TIME_FORMAT, RunDocument
from gpubench.tools.profile.kernels import Profile

KIND = "profile"
CSV_FIELDS = ("name", "origin", "calls", "total_us", "mean_us", "share", "ranges")


def profile_to_dict(profile: Profile) -> dict:
    return {"groups": [{**asdict(g), "mean_us": g.mean_us} for g in profile.groups],
            "window_us": profile.window_us, "busy_us": profile.busy_us,
            "busy_fraction": profile.busy_fraction, "kernel_us": profile.kernel_us,
            "gaps": [asdict(g) for g in profile.gaps], "device": profile.device,
            "region": profile.region, "region_instances": profile.region_instances,
            "skipped_instances": profile.skipped_instances, "notes": list(profile.notes)}


def profile_document(profile: Profile, program, outcome, status: dict | None,
                     run_dir: str) -> RunDocument:
    from gpubench.timing.envinfo import host_env

    meta = {**host_env(), "kind": KIND, "run_id": run_dir.rstrip("/").split("/")[-1],
            "run_dir": run_dir, "program": list(program),
            "exit_code": outcome.exit_code, "timed_out": outcome.timed_out,
            "wall_s": outcome.wall_s, "finished": time.strftime(TIME_FORMAT),
            "profile": profile_to_dict(profile)}
    env = {"device": "cuda" if (status or {}).get("cuda") else "cpu",
           "gpu": (status or {}).get("device")}
    return RunDocument(meta, env, ())


def kernels_csv(profile: Profile) -> str:
    sink = io.StringIO()
    writer = csv.writer(sink)
    writer.writerow(CSV_FIELDS)
    for g in profile.groups:
        fields = [g.name, g.origin, g.calls, f"{g.total_us:.3f}", f"{g.mean_us:.3f}",
                  f"{g.share:.5f}", "; ".join(g.ranges)]
        writer.writerow([safe_text.csv_cell(f) for f in fields])  # names are the user's
    return sink.getvalue()
