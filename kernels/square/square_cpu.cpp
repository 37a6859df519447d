// square_cpu.cpp — the same `square` for CPU tensors, built on machines without a GPU.
#include <ATen/Dispatch.h>
#include <ATen/core/Tensor.h>

void square(at::Tensor x, at::Tensor out) {
  TORCH_CHECK(x.is_cpu() && out.is_cpu(), "square (CPU build) takes CPU tensors");
  TORCH_CHECK(x.is_contiguous() && out.is_contiguous(), "tensors must be contiguous");
  TORCH_CHECK(out.numel() == x.numel() && out.scalar_type() == x.scalar_type(),
              "out must match x in size and dtype");
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, x.scalar_type(), "square", [&] {
    const scalar_t* src = x.data_ptr<scalar_t>();
    scalar_t* dst = out.data_ptr<scalar_t>();
    const int64_t n = x.numel();
    for (int64_t i = 0; i < n; ++i) {
      const float v = static_cast<float>(src[i]);
      dst[i] = static_cast<scalar_t>(v * v);
    }
  });
}
