"""Issue 24's size limits: no module of gpubench/ over 500 lines, no function over 60.

    python scripts/check_sizes.py [ROOT]

Prints each module and function over its limit (a function counts from its `def` line to
its last line, decorators left out; a method as Class.method, a nested function as
outer.inner) and exits 1 if there is any, else 0."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 60


def oversized_functions(tree: ast.AST, prefix: str = ""):
    """(qualified name, first line, length) of each function over MAX_FUNCTION_LINES."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            length = node.end_lineno - node.lineno + 1
            if length > MAX_FUNCTION_LINES:
                yield f"{prefix}{node.name}", node.lineno, length
            yield from oversized_functions(node, f"{prefix}{node.name}.")
        elif isinstance(node, ast.ClassDef):
            yield from oversized_functions(node, f"{prefix}{node.name}.")


def main(root: Path) -> int:
    problems = []
    for path in sorted(root.rglob("*.py")):
        text = path.read_text()
        lines = len(text.splitlines())
        if lines > MAX_MODULE_LINES:
            problems.append(f"{path}: module of {lines} lines (limit {MAX_MODULE_LINES})")
        for name, first, length in oversized_functions(ast.parse(text)):
            problems.append(f"{path}:{first}: {name} has {length} lines "
                            f"(limit {MAX_FUNCTION_LINES})")
    print("\n".join(problems) or "sizes ok")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("gpubench")))
