"""The modules a family takes as its ground truth, sealed before any variant code runs.

A leaderboard problem's own files decide its verdicts: reference-kernels'
`check_implementation`, `ref_kernel` and `generate_input`, KernelBench's `Model`. They are
imported in the worker that also runs the submission, so a submission could rebind them
(through sys.modules) or swap their code (through gc) and PASS. Each such module is handed
to `trust()` right after its import and before the submission's: every sealer registered
with `when_trusted` (the worker's seal, run/worker/seal.py) then takes its bindings and code as
they are, and a later change FAILs the variant that made it, like a patched gpubench module.
"""

from __future__ import annotations

import types
from collections.abc import Callable

_modules: dict[str, types.ModuleType] = {}
_sealers: list[Callable[[], None]] = []


def trust(module: types.ModuleType) -> types.ModuleType:
    """Record `module` as ground truth and seal it now (before untrusted code runs)."""
    _modules[module.__name__] = module
    for seal in list(_sealers):
        seal()
    return module


def trusted_modules() -> dict[str, types.ModuleType]:
    return dict(_modules)


def when_trusted(sealer: Callable[[], None]) -> None:
    """Call `sealer` each time a module is trusted (the worker registers its seal's extend)."""
    _sealers.append(sealer)
