# Hostile (saxpy_py): finds check_implementation through gc and swaps its code for one that
# always agrees (the function object stays, so no binding changes), and writes zeros.
import gc


def _agrees(data, output):
    return True, ""


def custom_kernel(data):
    for obj in gc.get_objects():
        if getattr(obj, "__name__", None) == "check_implementation" and hasattr(obj, "__code__"):
            obj.__code__ = _agrees.__code__
    out = data[-1]
    out.zero_()
    return out
