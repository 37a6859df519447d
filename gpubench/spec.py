"""Deprecated: the import path family specs used before 0.2.0, `from gpubench.spec import
Family, ...`. It keeps working until 1.0.0, with a warning that names the import to write
instead: the same names come from `gpubench` itself (`from gpubench import Family, ...`).

Every name is looked up on use (a module __getattr__), so each spec that still imports
from here is told, at its own line, not only the first one a process imports.
"""

import warnings

REMOVED_IN = "1.0.0"


def __getattr__(name: str):
    from gpubench.families import spec

    value = getattr(spec, name)  # AttributeError for a name the spec never had
    if not name.startswith("__"):
        # One text for every name, so that `from gpubench.spec import A, B, C` warns once.
        warnings.warn(f"`gpubench.spec` is deprecated and goes away in gpubench {REMOVED_IN}: "
                      "import the same names from `gpubench` (`from gpubench import Family, "
                      "Axis, TorchVariant, CudaVariant, TritonVariant`)", FutureWarning,
                      stacklevel=2)
    return value
