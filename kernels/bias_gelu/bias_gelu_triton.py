"""bias + GELU in Triton, fused: one kernel reads x and writes y.

Each program takes a BLOCK_M x BLOCK_N tile: the bias slice [BLOCK_N] is loaded once
and broadcast over the tile's rows; GELU is the tanh form as z / (1 + exp(-2u)),
u = sqrt(2/pi) (z + 0.044715 z^3), the same formula as the CUDA kernels, in fp32.
"""

import triton
import triton.language as tl

# exp(-2u) = exp2(-z * (A + B z^2)): A = 2 sqrt(2/pi) log2(e), B = 0.044715 A. constexpr:
# compiled Triton reads no other globals (the interpreter does, so only a GPU would fail).
GELU_A = tl.constexpr(2.302208198144325)
GELU_B = tl.constexpr(0.1029432395800235)


@triton.jit
def bias_gelu_kernel(x_ptr, b_ptr, y_ptr, rows, cols, x_row_stride, y_row_stride,
                     BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
    # int64 rows: row * stride passes 2^31 once the matrix has 2^31 elements.
    r = tl.program_id(0).to(tl.int64) * BLOCK_M + tl.arange(0, BLOCK_M)
    c = tl.program_id(1) * BLOCK_N + tl.arange(0, BLOCK_N)
    mask = (r[:, None] < rows) & (c[None, :] < cols)
    b = tl.load(b_ptr + c, mask=c < cols, other=0.0).to(tl.float32)
    x = tl.load(x_ptr + r[:, None] * x_row_stride + c[None, :], mask=mask, other=0.0)
    z = x.to(tl.float32) + b[None, :]
    y = z / (1.0 + tl.exp2(-z * (GELU_A + GELU_B * z * z)))
    tl.store(y_ptr + r[:, None] * y_row_stride + c[None, :], y.to(y_ptr.dtype.element_ty),
             mask=mask)


def bias_gelu(x, bias, out):
    rows, cols = x.shape
    # 16 x 256 tiles (4096 elements, 16 a thread at 8 warps): wide along the row for
    # contiguous 16-byte accesses; narrower rows shrink the tile to the row.
    block_n = min(256, triton.next_power_of_2(cols))
    block_m = max(1, 4096 // block_n)
    grid = (triton.cdiv(rows, block_m), triton.cdiv(cols, block_n))
    bias_gelu_kernel[grid](x, bias, out, rows, cols, x.stride(0), out.stride(0),
                           BLOCK_M=block_m, BLOCK_N=block_n, num_warps=8)
