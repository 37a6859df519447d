"""Paths that gpubench derives from its own files' places: moving a module into another
package changes `Path(__file__).parents[...]`, and only a GPU build or an uninstalled
worker would notice otherwise (the C++ headers went missing that way once)."""

import os
from pathlib import Path

import gpubench
from gpubench.build.sources import INCLUDE_DIR
from gpubench.families.discovery import shipped_kernels_dir
from gpubench.run.lanes.worker_process import worker_env

PACKAGE = Path(gpubench.__file__).resolve().parent


def test_the_cuda_headers_are_on_the_include_path():
    assert (INCLUDE_DIR / "gpubench" / "binding.h").is_file()
    assert (INCLUDE_DIR / "gpubench" / "dispatch.cuh").is_file()


def test_the_shipped_kernels_are_the_checkouts():
    assert shipped_kernels_dir() == PACKAGE.parent / "kernels"


def test_a_worker_imports_the_parents_gpubench():
    root = worker_env("cpu")["PYTHONPATH"].split(":")[0]
    assert Path(root) == PACKAGE.parent


def test_the_tamper_check_knows_gpubench_s_own_files():
    from gpubench.run.worker import tamper

    assert str(PACKAGE) + os.sep == tamper.PACKAGE


def test_no_module_over_500_lines_and_no_function_over_60():
    """Issue 24's size limits, checked on every run of the suite (scripts/check_sizes.py
    prints the offenders)."""
    import runpy

    checker = runpy.run_path(str(PACKAGE.parent / "scripts" / "check_sizes.py"))
    assert checker["main"](PACKAGE) == 0


def import_graph():
    grimp = __import__("pytest").importorskip("grimp")  # import-linter's graph builder
    return grimp.build_graph("gpubench")


def import_circles(graph) -> list[list[str]]:
    """Groups of gpubench modules that import each other, directly or round a loop
    (strongly connected components of the import graph, every import counted: a lazy
    one inside a function is still a dependency a reader has to follow)."""
    order, low, stack, on_stack, circles = {}, {}, [], set(), []

    def visit(module: str) -> None:  # Tarjan's algorithm
        order[module] = low[module] = len(order)
        stack.append(module)
        on_stack.add(module)
        for other in graph.find_modules_directly_imported_by(module):
            if other not in order:
                visit(other)
                low[module] = min(low[module], low[other])
            elif other in on_stack:
                low[module] = min(low[module], order[other])
        if low[module] == order[module]:
            group = []
            while not group or group[-1] != module:
                group.append(stack.pop())
                on_stack.discard(group[-1])
            if len(group) > 1:
                circles.append(sorted(group))

    for module in sorted(graph.modules):
        if module not in order:
            visit(module)
    return circles


def test_no_gpubench_modules_import_each_other_in_a_circle():
    assert import_circles(import_graph()) == []


def test_a_circle_is_found_where_there_is_one():
    from types import SimpleNamespace

    imports = {"a": {"b"}, "b": {"a"}, "c": {"a"}}
    graph = SimpleNamespace(modules=set(imports),
                            find_modules_directly_imported_by=imports.__getitem__)
    assert import_circles(graph) == [["a", "b"]]


def test_gpubench_top_holds_at_most_twelve_modules():
    """The package's top level is its layers' folders and a few leaf modules (the layout
    contract in .importlinter lists them)."""
    top = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert len(top) <= 12, top
