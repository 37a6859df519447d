"""Variants that return their output instead of writing into `out`: a torch lambda, a
Triton launcher that allocates, and C++ given as load_inline-style strings (CPU), next to
a destination-passing variant. Used by tests/test_inline_and_returning.py."""

import torch

from gpubench import CudaVariant, Family, TorchVariant, TritonVariant

# load_inline style: strings, `torch/extension.h` is put in front of them by the build.
# Its extra_cflags is a macro the source needs, so the build proves the flag reached the
# compiler; a macro and not an -O level, which would need a precompiled header of its own
# (build/pch.py: ~60 s more of the test suite on 2 cores).
CPP_SOURCE = r'''
#ifndef CUBE_FROM_EXTRA_CFLAGS
#error "extra_cflags did not reach the compiler"
#endif
torch::Tensor cube_cpu(torch::Tensor x) {
    TORCH_CHECK(x.is_contiguous() && x.scalar_type() == torch::kFloat32, "float32 only");
    auto result = torch::empty_like(x);
    const float* in = x.data_ptr<float>();
    float* out = result.data_ptr<float>();
    for (int64_t i = 0; i < x.numel(); ++i) out[i] = in[i] * in[i] * in[i];
    return result;
}
'''

family = Family(
    reference=lambda x: x * x * x,
    make_inputs=lambda n, dtype, device: (torch.randn(n, device=device, dtype=dtype),),
    flops=lambda n: 2 * n,
    bytes_moved=lambda n, itemsize: 2 * n * itemsize,
    sizes=(1 << 16,),
    variants=(
        TorchVariant("torch", fn=lambda x: x * x * x, baseline=True),
        TorchVariant("into_out", fn=lambda x, out: torch.mul(x * x, x, out=out)),
        TritonVariant("triton", module="cube_triton.py", function="cube"),
        CudaVariant("inline_cpp", cpp_sources=CPP_SOURCE, functions=["cube_cpu"],
                    extra_cflags=["-DCUBE_FROM_EXTRA_CFLAGS=1"]),
        # Returns a tensor that requires grad (a weight in the autograd graph): checked and
        # timed as any output, no autograd error (issue 52).
        TorchVariant("requires_grad",
                     fn=lambda x: x * x * x * torch.ones_like(x, requires_grad=True)),
        # Returns a tensor of the wrong dtype: must fail with a clear message.
        TorchVariant("wrong_dtype", fn=lambda x: (x * x * x).double()),
    ),
)
