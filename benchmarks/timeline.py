"""Print a run's timeline (GPUBENCH_TIMELINE, gpubench/run/timeline.py) as a table.

    python benchmarks/timeline.py FILE [FILE ...]

Each mark is shown in seconds from the parent's start, with the process it came from
(parent, worker 1, worker 2, ... in the order they started): where the fixed cost of a
run goes, process by process. benchmarks/scale_out.py records one per run
(<out>/<run>.timeline).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from gpubench import safe_text


def read_marks(path: Path) -> list[tuple[float, int, str]]:
    """(unix time, pid, label) of each well-formed line, in time order."""
    marks = []
    for line in path.read_text().splitlines():
        parts = line.split(" ", 2)
        if len(parts) == 3 and parts[1].isdigit():
            try:
                marks.append((float(parts[0]), int(parts[1]), parts[2]))
            except ValueError:
                continue
    return sorted(marks)


def process_names(marks: list[tuple[float, int, str]]) -> dict[int, str]:
    """'parent', or 'worker N' numbered by first appearance."""
    names: dict[int, str] = {}
    for _, pid, label in marks:
        if pid in names:
            continue
        role = label.split(":", 1)[0]
        count = sum(1 for name in names.values() if name.startswith(role))
        names[pid] = role if role == "parent" else f"{role} {count + 1}"
    return names


def table(marks: list[tuple[float, int, str]]) -> list[str]:
    names = process_names(marks)
    parent_starts = [t for t, _, label in marks if label == "parent: process started"]
    origin = parent_starts[0] if parent_starts else (marks[0][0] if marks else 0.0)
    rows = ["| s | process | mark |", "|---:|---|---|"]
    for at, pid, label in marks:
        # A label may carry a thread's name (the parent's exit): shown escaped, one line.
        shown = safe_text.markdown(label.split(": ", 1)[-1])
        rows.append(f"| {at - origin:.3f} | {names[pid]} | {shown} |")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", type=Path)
    args = parser.parse_args()
    for path in args.files:
        if not path.is_file():
            parser.error(f"{path}: no such timeline file")
    for path in args.files:
        print(f"\n{path}:\n")
        print("\n".join(table(read_marks(path))))


if __name__ == "__main__":
    main()
