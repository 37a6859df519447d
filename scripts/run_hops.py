"""One `gpubench run`'s hops, counted: the calls in the parent process that cross from one
gpubench module to another, in the order first made (issue 53's measure of how many places
a run passes through; docs/design.md lists them).

    python scripts/run_hops.py [--tree DIR] [--list] [-- RUN ARGS]

RUN ARGS default to `square --sizes 2^10 --variants torch --device cpu` (a CPU run, one
point). --tree runs another checkout's gpubench (a `git worktree` of an earlier commit) for
the count before a change. Prints the distinct module-to-module edges, the modules they
touch and, with --list, the edges themselves. The worker's side (a process of its own) is
not traced: these are the parent's hops, from the command line to the saved record.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT = ["square", "--sizes", "2^10", "--variants", "torch", "--device", "cpu"]

TRACER = r'''
import sys, threading
edges, seen = [], set()

def module_of(frame):
    name = frame.f_globals.get("__name__", "")
    return name if name.startswith("gpubench") else None

def profile(frame, event, arg):
    if event != "call":
        return
    callee, back = module_of(frame), frame.f_back
    caller = module_of(back) if back is not None else None
    if callee and caller and callee != caller and (caller, callee) not in seen:
        seen.add((caller, callee))
        edges.append((caller, callee, frame.f_code.co_name))

sys.setprofile(profile)
from gpubench.cli import cli
try:
    cli.main(sys.argv[1:], prog_name="gpubench", standalone_mode=False)
except SystemExit:
    pass
finally:
    sys.setprofile(None)
    with open(__OUT__, "w") as out:
        for caller, callee, name in edges:
            out.write(f"{caller} -> {callee}.{name}\n")
'''


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tree", type=Path, default=REPO)
    parser.add_argument("--list", action="store_true")
    parser.add_argument("run", nargs="*")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "edges.txt"
        script = TRACER.replace("__OUT__", repr(str(out)))
        env = {**os.environ, "PYTHONPATH": str(args.tree.resolve()), "COLUMNS": "120"}
        subprocess.run([sys.executable, "-c", script, "run", *(args.run or DEFAULT),
                        "--out", str(Path(folder) / "run")], cwd=folder, env=env,
                       capture_output=True, text=True, check=False)
        edges = out.read_text().splitlines() if out.exists() else []
    modules = {part.split(" -> ")[0] for part in edges} | {
        e.split(" -> ")[1].rsplit(".", 1)[0] for e in edges}
    if args.list:
        print("\n".join(edges))
    print(f"{len(edges)} hops (distinct module-to-module calls) through {len(modules)} "
          f"modules ({args.tree})")
    return 0 if edges else 1


if __name__ == "__main__":
    sys.exit(main())
