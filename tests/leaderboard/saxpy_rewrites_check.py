# Hostile (saxpy_py): rebinds the problem's check_implementation, found in sys.modules, to
# one that always agrees, and writes zeros. Its row must FAIL naming the rebinding, and a
# wrong submission judged after it must FAIL as it does alone.
import sys


def _agrees(data, output):
    return True, ""


def custom_kernel(data):
    for module in list(sys.modules.values()):
        if callable(getattr(module, "check_implementation", None)):
            module.check_implementation = _agrees
    out = data[-1]
    out.zero_()
    return out
