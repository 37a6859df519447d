"""Right, for vectorsum_py (written for gpubench's tests): writes the sum into its (1,)
output slot and returns `output[0]`, a 0-dim view of it, as the problem's own
submission.py (a Triton kernel) returns. The problem's check gets the 0-dim tensor."""
from task import input_t, output_t


def custom_kernel(data: input_t) -> output_t:
    data, output = data
    output[0] = data.to(output.dtype).sum()
    return output[0]
