// softmax_cpu.cpp — the CUDA variants' functions for CPU tensors, each the same algorithm
// as its kernel in softmax.cu, row by row, in fp32 whatever the storage type:
//   softmax_naive         three passes: max, sum of exp(x - max), write exp(x - max) / sum;
//   softmax_online        one pass keeping the running max and the sum rescaled to it
//                         (Milakov & Gimelshein), then the write pass;
//   softmax_block_reduce  the row converted to fp32 once (the kernel's registers), then
//                         max, exp and sum, and the write, all from that copy.
#include <ATen/Dispatch.h>
#include <ATen/core/Tensor.h>

#include <cfloat>
#include <cmath>
#include <limits>
#include <vector>

static void check(const at::Tensor& x, const at::Tensor& out, const char* name) {
  TORCH_CHECK(x.is_cpu() && out.is_cpu(), name, " (CPU build) takes CPU tensors");
  TORCH_CHECK(x.dim() == 2, "x must be 2-D (rows x cols), got ", x.sizes());
  TORCH_CHECK(out.sizes() == x.sizes() && out.scalar_type() == x.scalar_type(),
              "out must match x in shape and dtype");
  TORCH_CHECK(x.is_contiguous() && out.is_contiguous(), "tensors must be contiguous");
}

// fn(const scalar_t* row_in, scalar_t* row_out, int64_t cols) for every row.
template <typename Fn>
static void for_each_row(const at::Tensor& x, at::Tensor& out, const char* name, Fn fn) {
  check(x, out, name);
  const int64_t rows = x.size(0), cols = x.size(1);
  AT_DISPATCH_FLOATING_TYPES_AND2(at::kHalf, at::kBFloat16, x.scalar_type(), "softmax_cpu", [&] {
    const scalar_t* src = x.data_ptr<scalar_t>();
    scalar_t* dst = out.data_ptr<scalar_t>();
    for (int64_t r = 0; r < rows; ++r) fn(src + r * cols, dst + r * cols, cols);
  });
}

void softmax_naive(at::Tensor x, at::Tensor out) {
  for_each_row(x, out, "softmax_naive", [](const auto* xr, auto* yr, int64_t cols) {
    using T = std::remove_cv_t<std::remove_pointer_t<decltype(yr)>>;
    float row_max = -std::numeric_limits<float>::infinity();
    for (int64_t j = 0; j < cols; ++j) row_max = std::fmax(row_max, static_cast<float>(xr[j]));
    float sum = 0.0f;
    for (int64_t j = 0; j < cols; ++j) sum += std::exp(static_cast<float>(xr[j]) - row_max);
    for (int64_t j = 0; j < cols; ++j) {
      yr[j] = static_cast<T>(std::exp(static_cast<float>(xr[j]) - row_max) / sum);
    }
  });
}

void softmax_online(at::Tensor x, at::Tensor out) {
  for_each_row(x, out, "softmax_online", [](const auto* xr, auto* yr, int64_t cols) {
    using T = std::remove_cv_t<std::remove_pointer_t<decltype(yr)>>;
    float m = -FLT_MAX, d = 0.0f;  // running max, and the sum of exp(x - m) so far
    for (int64_t j = 0; j < cols; ++j) {
      const float v = static_cast<float>(xr[j]);
      if (v > m) {
        d = d * std::exp(m - v) + 1.0f;
        m = v;
      } else {
        d += std::exp(v - m);
      }
    }
    const float inv = 1.0f / d;
    for (int64_t j = 0; j < cols; ++j) {
      yr[j] = static_cast<T>(std::exp(static_cast<float>(xr[j]) - m) * inv);
    }
  });
}

void softmax_block_reduce(at::Tensor x, at::Tensor out) {
  std::vector<float> row;
  for_each_row(x, out, "softmax_block_reduce", [&row](const auto* xr, auto* yr, int64_t cols) {
    using T = std::remove_cv_t<std::remove_pointer_t<decltype(yr)>>;
    row.assign(xr, xr + cols);  // read once, converted to fp32
    float m = -std::numeric_limits<float>::infinity();
    for (float v : row) m = std::fmax(m, v);
    float s = 0.0f;
    for (float& v : row) s += (v = std::exp(v - m));
    const float inv = 1.0f / s;
    for (int64_t j = 0; j < cols; ++j) yr[j] = static_cast<T>(row[j] * inv);
  });
}
