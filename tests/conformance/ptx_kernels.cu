// Kernels nvcc builds into a fat binary for tests/conformance/ptx_launch_test.cpp: SASS for
// sm_90 and compressed compute_90 PTX (nvcc 13.0's default), which mcsim runs.
extern "C" __global__ void fatbin_vadd(const float* a, const float* b, float* c, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}
