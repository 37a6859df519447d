"""C++ variants, as load_inline strings: tricks no Python-level check can see.

SKIP_SEEN_CUDA: a tiny tiled matmul kernel whose binding remembers the (A, out) address
pairs it has computed and skips the launch on a pair it has seen (the result cache that
KernelArena's field guide found in a real submission, kept in C++).
SKIP_SEEN_CPU: the same cache around ATen's matmul, for CPU tensors.
PERSISTING_L2_CUDA: y = 2x that marks its input as a persisting-L2 access window on the
stream it runs on, so a cold-mode flush by reads cannot evict the input: it reads from L2.
"""

SKIP_SEEN_CUDA = r'''
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <cstdint>
#include <set>
#include <utility>

// 16 x 16 output tile per block, A and B staged through shared memory in 16-wide steps.
constexpr int TILE = 16;

__global__ void adv_matmul_tile16(const float* a, const float* b, float* c, int n) {
    __shared__ float as[TILE][TILE];
    __shared__ float bs[TILE][TILE];
    int row = blockIdx.y * TILE + threadIdx.y;
    int col = blockIdx.x * TILE + threadIdx.x;
    float acc = 0.0f;
    for (int k0 = 0; k0 < n; k0 += TILE) {
        as[threadIdx.y][threadIdx.x] =
            (row < n && k0 + threadIdx.x < n) ? a[(int64_t)row * n + k0 + threadIdx.x] : 0.0f;
        bs[threadIdx.y][threadIdx.x] =
            (k0 + threadIdx.y < n && col < n) ? b[(int64_t)(k0 + threadIdx.y) * n + col] : 0.0f;
        __syncthreads();
        for (int k = 0; k < TILE; ++k) acc += as[threadIdx.y][k] * bs[k][threadIdx.x];
        __syncthreads();
    }
    if (row < n && col < n) c[(int64_t)row * n + col] = acc;
}

void matmul_skip_seen(torch::Tensor a, torch::Tensor b, torch::Tensor out) {
    TORCH_CHECK(a.is_cuda() && a.scalar_type() == torch::kFloat32 && a.is_contiguous()
                && b.is_contiguous() && out.is_contiguous(), "contiguous float32 CUDA only");
    static std::set<std::pair<const void*, const void*>> seen;
    auto pair = std::make_pair(a.data_ptr(), static_cast<const void*>(out.data_ptr()));
    if (!seen.insert(pair).second) return;  // "already computed for these buffers"
    int n = static_cast<int>(a.size(0));
    dim3 block(TILE, TILE), grid((n + TILE - 1) / TILE, (n + TILE - 1) / TILE);
    adv_matmul_tile16<<<grid, block, 0, at::cuda::getCurrentCUDAStream()>>>(
        a.data_ptr<float>(), b.data_ptr<float>(), out.data_ptr<float>(), n);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
}
'''
SKIP_SEEN_CUDA_DECL = "void matmul_skip_seen(torch::Tensor a, torch::Tensor b, torch::Tensor out);"

SKIP_SEEN_CPU = r'''
#include <set>
#include <utility>

void matmul_skip_seen_cpu(torch::Tensor a, torch::Tensor b, torch::Tensor out) {
    static std::set<std::pair<const void*, const void*>> seen;
    auto pair = std::make_pair(a.data_ptr(), static_cast<const void*>(out.data_ptr()));
    if (!seen.insert(pair).second) return;  // "already computed for these buffers"
    at::matmul_out(out, a, b);
}
'''

PERSISTING_L2_CUDA = r'''
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAException.h>
#include <cuda_runtime.h>
#include <algorithm>
#include <cstdint>

__global__ void adv_double(const float* x, float* y, int64_t n) {
    int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
    if (i < n) y[i] = 2.0f * x[i];
}

// Marks [x, x + bytes) persisting on `stream`, within the device's persisting carve-out.
static void keep_in_l2(const void* x, size_t bytes, cudaStream_t stream) {
    static int device = -1;
    static cudaDeviceProp prop;
    if (device < 0) {
        cudaGetDevice(&device);
        cudaGetDeviceProperties(&prop, device);
    }
    if (prop.persistingL2CacheMaxSize <= 0) return;  // no persisting L2 on this GPU
    size_t carve = std::min<size_t>(prop.persistingL2CacheMaxSize, bytes);
    cudaDeviceSetLimit(cudaLimitPersistingL2CacheSize, carve);
    size_t window = std::min<size_t>(bytes, prop.accessPolicyMaxWindowSize);
    cudaStreamAttrValue attr = {};
    attr.accessPolicyWindow.base_ptr = const_cast<void*>(x);
    attr.accessPolicyWindow.num_bytes = window;
    attr.accessPolicyWindow.hitRatio = std::min(1.0f, float(carve) / float(window));
    attr.accessPolicyWindow.hitProp = cudaAccessPropertyPersisting;
    attr.accessPolicyWindow.missProp = cudaAccessPropertyStreaming;
    cudaStreamSetAttribute(stream, cudaStreamAttributeAccessPolicyWindow, &attr);
    cudaGetLastError();  // a refusal (e.g. while capturing) only loses the trick
}

void double_persisting(torch::Tensor x, torch::Tensor out) {
    TORCH_CHECK(x.is_cuda() && x.scalar_type() == torch::kFloat32 && x.is_contiguous()
                && out.is_contiguous(), "contiguous float32 CUDA only");
    cudaStream_t stream = at::cuda::getCurrentCUDAStream();
    cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
    cudaStreamIsCapturing(stream, &capturing);
    if (capturing == cudaStreamCaptureStatusNone) keep_in_l2(x.data_ptr(), x.nbytes(), stream);
    int64_t n = x.numel();
    adv_double<<<(n + 255) / 256, 256, 0, stream>>>(x.data_ptr<float>(),
                                                    out.data_ptr<float>(), n);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
}
'''
PERSISTING_L2_DECL = "void double_persisting(torch::Tensor x, torch::Tensor out);"
