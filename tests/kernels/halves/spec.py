"""halves: y = 2x, in Triton, with autotune spaces for `gpubench tune`'s CPU tests.

`split`'s two configs each write half of the output: run into one buffer by Triton's own
autotuner they pass together (intel-xpu-backend-for-triton #5773); checked one at a time,
each into its own poisoned buffer, both fail. `whole`'s two configs are both right.
"""

import torch

from gpubench import Family, TritonVariant

family = Family(
    reference=lambda x: x * 2,
    make_inputs=lambda n, dtype, device: (torch.randn(n, device=device).to(dtype),),
    flops=lambda n: n,
    bytes_moved=lambda n, itemsize: 2 * n * itemsize,
    dtypes=("float32",),
    sizes=(4096,),
    cpu_sizes=(4096,),
    variants=(
        TritonVariant("split", module="split_triton.py", function="doubled", baseline=True,
                      description="config HALF=0 writes the first half, HALF=1 the second"),
        TritonVariant("whole", module="whole_triton.py", function="doubled",
                      description="two block sizes, both right"),
    ),
)
