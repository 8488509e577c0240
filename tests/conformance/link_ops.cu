// Device code for tests/conformance/link_test.cpp's host object and library inputs: what the
// hand-written callee.ptx defines there (scale, offset, factor), compiled by nvcc as relocatable
// device code with PTX only (-dc, code=compute_90) into a host object and a static library.
extern "C" __device__ unsigned offset = 7;
__device__ unsigned factor = 3;
extern "C" __device__ __noinline__ int scale(int x) { return x * static_cast<int>(factor); }
