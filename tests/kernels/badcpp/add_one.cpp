// add_one.cpp — deliberately broken: line 7 uses an undeclared name.
#include <torch/extension.h>

void add_one(at::Tensor x, at::Tensor out) {
  TORCH_CHECK(x.is_contiguous() && out.is_contiguous(), "contiguous tensors only");
  auto n = x.numel();
  out.copy_(x + undeclared_offset);
  (void)n;
}
