# Hostile (saxpy_py): the right answer, computed in the memory of its input x.
def custom_kernel(data):
    x, y, _ = data
    return x.mul_(2.5).add_(y)
