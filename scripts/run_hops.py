"""One `gpubench run`'s hops, from the code: every call that crosses from one gpubench module
into another, in the order first made, in the parent and in its worker (issue 53's and
62's measure of how many places a run passes through; docs/design.md shows its output).

    python scripts/run_hops.py [--tree DIR] [--list | --path] [--markdown] [-- RUN ARGS]

RUN ARGS default to `square --sizes 2^10 --variants torch --device cpu` (a CPU run, one
point). --tree runs another checkout's gpubench (`git worktree add` of an earlier commit,
or `git archive REV gpubench kernels | tar -x`) for the count before a change.

How: a `sitecustomize.py` in a scratch folder on PYTHONPATH installs a profile hook in
every Python process the run starts (the CLI's and each worker's: a worker inherits
PYTHONPATH), on every thread; each process appends each new edge `caller -> callee.func`
to its own file as it is first made (a worker ends with os._exit, so nothing waits for
exit). The worker's own file is short: what it runs after its seal (run/worker/seal.py)
is mostly not seen, so its count is a floor. Prints the distinct edges and modules per
process; --list, the edges; --path, the
modules in the order first entered with the function each was entered by: the run's route,
the saver, the judge and the build phase included. --markdown writes --path as a fenced
block, for docs/design.md.
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

SITECUSTOMIZE = r'''
import os, sys, threading

_folder = os.environ.get("GPUBENCH_HOPS_DIR")
if _folder:
    _seen = set()
    _role = []

    def _role_name():
        """The module the process runs (`-m`), read once it runs: gpubench.__main__ is
        the CLI, the rest are the workers and the judge."""
        if not _role:
            spec = getattr(sys.modules.get("__main__"), "__spec__", None)
            name = getattr(spec, "name", "") or "?"
            _role.append("parent" if name == "gpubench.__main__" else name)
        return _role[0]

    def _module(frame):
        name = frame.f_globals.get("__name__", "") if frame is not None else ""
        return name if name.startswith("gpubench") else None

    def _hook(frame, event, arg):
        if event != "call":
            return
        callee, caller = _module(frame), _module(frame.f_back)
        if callee and caller and callee != caller and (caller, callee) not in _seen:
            _seen.add((caller, callee))
            # by pid at each write: a fork (the judge's server) writes a file of its own
            with open(os.path.join(_folder, f"edges-{os.getpid()}.txt"), "a") as out:
                out.write(f"{_role_name()} {caller} -> {callee}.{frame.f_code.co_name}\n")

    sys.setprofile(_hook)
    threading.setprofile(_hook)
'''


def traced_edges(tree: Path, run_args: list[str]) -> dict[str, list[str]]:
    """Each process role's edges ('caller -> callee.func'), in the order first made."""
    with tempfile.TemporaryDirectory(prefix="gpubench-hops-") as scratch:
        folder = Path(scratch)
        (folder / "site").mkdir()
        (folder / "site" / "sitecustomize.py").write_text(SITECUSTOMIZE)
        (folder / "edges").mkdir()
        env = {**os.environ, "COLUMNS": "120", "GPUBENCH_HOPS_DIR": str(folder / "edges"),
               "PYTHONPATH": os.pathsep.join((str(folder / "site"), str(tree.resolve())))}
        done = subprocess.run([sys.executable, "-m", "gpubench", "run", *run_args,
                               "--out", str(folder / "run")], cwd=folder, env=env,
                              capture_output=True, text=True, check=False)
        edges: dict[str, list[str]] = {}
        for path in sorted((folder / "edges").glob("edges-*.txt"),
                           key=lambda p: p.stat().st_mtime):
            for line in path.read_text().splitlines():
                role, edge = line.split(" ", 1)
                if edge not in edges.setdefault(role, []):
                    edges[role].append(edge)
        if not edges:
            print(done.stderr[-3000:], file=sys.stderr)
        return edges


def route(edges: list[str]) -> list[str]:
    """The modules in the order first entered: 'module.function (from caller)'."""
    entered: dict[str, str] = {}
    for edge in edges:
        caller, target = edge.split(" -> ")
        module, function = target.rsplit(".", 1)
        entered.setdefault(module, f"{function} (from {caller})")
    return [f"{i:3} {module.removeprefix('gpubench.'):40} {how.replace('gpubench.', '')}"
            for i, (module, how) in enumerate(entered.items(), 1)]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tree", type=Path, default=REPO)
    shown = parser.add_mutually_exclusive_group()
    shown.add_argument("--list", action="store_true", help="every edge")
    shown.add_argument("--path", action="store_true", help="the modules, first entry first")
    parser.add_argument("--markdown", action="store_true", help="--path in a fenced block")
    parser.add_argument("run", nargs="*")
    args = parser.parse_args()
    edges = traced_edges(args.tree, args.run or DEFAULT)
    for role, found in edges.items():
        modules = {e.split(" -> ")[0] for e in found} | {
            e.split(" -> ")[1].rsplit(".", 1)[0] for e in found}
        if args.list:
            print("\n".join(found))
        elif args.path or args.markdown:
            print(f"{'```' if args.markdown else ''}\n{role}:\n" + "\n".join(route(found))
                  + ("\n```" if args.markdown else ""))
        print(f"{role}: {len(found)} hops (distinct module-to-module calls) through "
              f"{len(modules)} modules ({args.tree})")
    return 0 if edges else 1


if __name__ == "__main__":
    sys.exit(main())
