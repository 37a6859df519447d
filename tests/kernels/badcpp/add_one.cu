// add_one.cu — device side of the broken variant (unused on CPU-only machines).
__global__ void add_one_kernel(const float* x, float* y, long n) {
  long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] + 1.0f;
}
