# Hostile (saxpy_py): computes once per shape, then returns that first answer for any data.
_answers = {}


def custom_kernel(data):
    x, y, _ = data
    if x.shape not in _answers:
        _answers[x.shape] = 2.5 * x + y
    return _answers[x.shape]
