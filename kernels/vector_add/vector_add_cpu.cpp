// vector_add_cpu.cpp — the same `vector_add` and `vector_add_vectorized` for CPU tensors
// (machines without a GPU): one loop under both names.
#include <ATen/Dispatch.h>
#include <ATen/core/Tensor.h>

static void add_cpu(const at::Tensor& a, const at::Tensor& b, const at::Tensor& out) {
  TORCH_CHECK(a.is_cpu() && b.is_cpu() && out.is_cpu(), "vector_add (CPU build) takes CPU tensors");
  TORCH_CHECK(a.is_contiguous() && b.is_contiguous() && out.is_contiguous(),
              "tensors must be contiguous");
  TORCH_CHECK(a.numel() == b.numel() && a.numel() == out.numel(), "a, b and out differ in size");
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, a.scalar_type(), "vector_add", [&] {
    const scalar_t* pa = a.data_ptr<scalar_t>();
    const scalar_t* pb = b.data_ptr<scalar_t>();
    scalar_t* po = out.data_ptr<scalar_t>();
    for (int64_t i = 0; i < a.numel(); ++i) {
      po[i] = static_cast<scalar_t>(static_cast<float>(pa[i]) + static_cast<float>(pb[i]));
    }
  });
}

void vector_add(at::Tensor a, at::Tensor b, at::Tensor out) { add_cpu(a, b, out); }

void vector_add_vectorized(at::Tensor a, at::Tensor b, at::Tensor out) { add_cpu(a, b, out); }
