# Hostile (saxpy_py): writes nothing and hands back the output buffer, as reference-kernels'
# solutions/wrong/empty.py do; the buffer may still hold an earlier call's answer.
def custom_kernel(data):
    return data[-1]
