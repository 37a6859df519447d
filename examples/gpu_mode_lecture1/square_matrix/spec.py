"""GPU MODE lecture 1's `square_matrix`, pasted as is, run by gpubench.

The CUDA and C++ strings below are the lecture's `load_inline` example, unchanged:
the kernel, and a host function that allocates its result with `torch::empty_like`
and returns it. The variant is declared with load_inline's own parameters; gpubench
builds it the way load_inline does (torch headers before both sources) and, since the
function returns its output, times the allocation with it (the table says `(alloc)`).

Napkin math for an H x W fp32 matrix: H*W multiplies, one 4-byte read and one write
per element: 8*H*W bytes, 0.125 FLOP/byte — memory-bound like every elementwise op.

    gpubench run square_matrix --kernels-dir examples/gpu_mode_lecture1
"""

import torch

from gpubench import Axis, CudaVariant, Family, TorchVariant

# ---- from the lecture, unchanged --------------------------------------------------
cuda_source = '''
__global__ void square_matrix_kernel(const float* matrix, float* result, int width, int height) {
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;

    if (row < height && col < width) {
        int idx = row * width + col;
        result[idx] = matrix[idx] * matrix[idx];
    }
}

torch::Tensor square_matrix(torch::Tensor matrix) {
    const auto height = matrix.size(0);
    const auto width = matrix.size(1);

    auto result = torch::empty_like(matrix);

    dim3 threads_per_block(16, 16);
    dim3 number_of_blocks((width + threads_per_block.x - 1) / threads_per_block.x,
                          (height + threads_per_block.y - 1) / threads_per_block.y);

    square_matrix_kernel<<<number_of_blocks, threads_per_block>>>(
        matrix.data_ptr<float>(), result.data_ptr<float>(), width, height);

    return result;
    }
'''

cpp_source = "torch::Tensor square_matrix(torch::Tensor matrix);"
# ------------------------------------------------------------------------------------


def make_inputs(shape, dtype, device):
    return (torch.randn(shape["rows"], shape["cols"], device=device, dtype=dtype),)


family = Family(
    reference=lambda m: m * m,
    make_inputs=make_inputs,
    flops=lambda shape: shape["rows"] * shape["cols"],
    bytes_moved=lambda shape, itemsize: 2 * shape["rows"] * shape["cols"] * itemsize,
    axes=(Axis("rows"), Axis("cols")),
    fill=lambda n: {"rows": n, "cols": n},
    shapes=({"rows": 1024, "cols": 1024}, {"rows": 4096, "cols": 4096}),
    cpu_shapes=({"rows": 256, "cols": 256},),
    dtypes=("float32",),  # the lecture's kernel reads float*
    variants=(
        TorchVariant("torch", fn=torch.square, baseline=True, description="torch.square"),
        CudaVariant("lecture1", cpp_sources=cpp_source, cuda_sources=cuda_source,
                    functions=["square_matrix"], extra_cuda_cflags=["-O2"],
                    description="GPU MODE lecture 1, 16x16 blocks, returns its result"),
    ),
)
