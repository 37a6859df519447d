"""Where the README's test command spends its time: the two pytest parts of command 2, as
CI runs them (`-n 2 --dist loadfile -m "not serial"`, then `-m serial`), each with a JUnit
report, summed per test file and printed slowest first, with each part's wall time.

The README promises command 2 near 10 minutes on 2 idle cores; this is how that figure is
re-measured and where to cut when it grows. With `--dist loadfile` a file is the unit a
worker takes, so a single file longer than half the parallel part sets its floor.

    python benchmarks/test_suite_time.py             # both parts, the top 25 files
    python benchmarks/test_suite_time.py --top 60 --part parallel
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PARTS = {"parallel": ["-n", "2", "--dist", "loadfile", "-m", "not serial"],
         "serial": ["-m", "serial"]}


def run_part(name: str, folder: Path) -> tuple[float, dict[str, float], dict[str, int]]:
    """(wall seconds, seconds per test file, tests per file) of one part."""
    report = folder / f"{name}.xml"
    started = time.monotonic()
    subprocess.run([sys.executable, "-m", "pytest", "-q", *PARTS[name],
                    f"--junitxml={report}"], cwd=REPO, check=False)
    wall = time.monotonic() - started
    seconds: dict[str, float] = defaultdict(float)
    counts: dict[str, int] = defaultdict(int)
    for case in ET.parse(report).getroot().iter("testcase"):
        module = case.get("classname", "").split(".")
        path = "/".join(part for part in module if not part[:1].isupper()) + ".py"
        seconds[path] += float(case.get("time") or 0.0)
        counts[path] += 1
    return wall, dict(seconds), dict(counts)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--part", choices=[*PARTS, "both"], default="both")
    options = parser.parse_args()
    parts = list(PARTS) if options.part == "both" else [options.part]
    load = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="gpubench-test-times-") as scratch:
        for name in parts:
            wall, seconds, counts = run_part(name, Path(scratch))
            print(f"\n{name}: {wall:.0f} s wall, {sum(seconds.values()):.0f} s of tests "
                  f"in {len(seconds)} files (load average {load:.1f} before)")
            print(f"{'file':60s} {'tests':>6s} {'seconds':>8s}")
            for path, spent in sorted(seconds.items(), key=lambda kv: -kv[1])[:options.top]:
                print(f"{path:60s} {counts[path]:6d} {spent:8.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
