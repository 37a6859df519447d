# Hostile (rowmax_py): swaps ref_kernel's code, which the problem's check calls, for one
# that returns zeros, and returns zeros itself: the check then agrees.
import gc


def _zeros(data):
    (x,) = data
    return x.new_zeros(x.shape[0])


def custom_kernel(data):
    for obj in gc.get_objects():
        if getattr(obj, "__name__", None) == "ref_kernel" and hasattr(obj, "__code__"):
            obj.__code__ = _zeros.__code__
    return _zeros(data)
