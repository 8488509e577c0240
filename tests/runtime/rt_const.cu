// __constant__ variables through the runtime and driver APIs, as users write them (filter
// coefficients, lookup tables; docs/ptx.md, "Constant memory"): the initialiser is the starting
// value, cudaMemcpyToSymbol (whole, at an offset, async) changes what later kernels' ld.const read,
// cudaMemcpyFromSymbol / cudaGetSymbolAddress / cudaGetSymbolSize reach the same device memory,
// and cuModuleGetGlobal finds a .const variable of hand-written PTX.
//
//   rt_const [CASE...]
// Each case ends with cudaDeviceReset, so that the next starts from the initialisers again.
#include <cuda.h>

#include <cstdio>
#include <vector>

#include "tests/runtime/rt_check.h"

constexpr int kN = 16;
__constant__ float coeffs[kN] = {0.5f, 1.0f, 1.5f, 2.0f, 2.5f, 3.0f, 3.5f, 4.0f,
                                 4.5f, 5.0f, 5.5f, 6.0f, 6.5f, 7.0f, 7.5f, 8.0f};

// out[i] = coeffs[i] * x[i], the index a register (ld.const at a computed address).
__global__ void rt_apply(const float* x, float* out) {
  const int i = threadIdx.x;
  if (i < kN) out[i] = coeffs[i] * x[i];
}

namespace {

float initial(int i) { return 0.5f * static_cast<float>(i + 1); }

// What rt_apply computes with x[i] = 1 + i: coeffs as the kernel sees them, times (1 + i).
std::vector<float> applied(cudaStream_t stream = nullptr) {
  float *x = nullptr, *out = nullptr;
  RT_OK(cudaMalloc(&x, kN * sizeof(float)));
  RT_OK(cudaMalloc(&out, kN * sizeof(float)));
  std::vector<float> hx(kN), h(kN);
  for (int i = 0; i < kN; ++i) hx[i] = 1.0f + static_cast<float>(i);
  RT_OK(cudaMemcpyAsync(x, hx.data(), kN * sizeof(float), cudaMemcpyHostToDevice, stream));
  rt_apply<<<1, 32, 0, stream>>>(x, out);
  RT_OK(cudaGetLastError());
  RT_OK(cudaMemcpyAsync(h.data(), out, kN * sizeof(float), cudaMemcpyDeviceToHost, stream));
  RT_OK(cudaStreamSynchronize(stream));
  RT_OK(cudaFree(x));
  RT_OK(cudaFree(out));
  return h;
}

void expectKernelSees(const std::vector<float>& c, cudaStream_t stream = nullptr) {
  const std::vector<float> h = applied(stream);
  for (int i = 0; i < kN; ++i)
    RT_EXPECT(h[i] == c[i] * (1.0f + static_cast<float>(i)), "out[%d] = %g, expected %g * %d", i, h[i], c[i], i + 1);
}

void initialValues() {
  std::vector<float> h(kN, -1.0f);
  RT_OK(cudaMemcpyFromSymbol(h.data(), coeffs, sizeof(float) * kN));
  std::vector<float> want(kN);
  for (int i = 0; i < kN; ++i) want[i] = initial(i);
  for (int i = 0; i < kN; ++i) RT_EXPECT(h[i] == want[i], "coeffs[%d] = %g, expected %g", i, h[i], want[i]);
  expectKernelSees(want);
  RT_OK(cudaDeviceReset());
}

void toSymbol() {
  std::vector<float> c(kN);
  for (int i = 0; i < kN; ++i) c[i] = -3.0f * static_cast<float>(i) + 0.25f;
  RT_OK(cudaMemcpyToSymbol(coeffs, c.data(), sizeof(float) * kN));
  expectKernelSees(c);
  // Four values at element 8 (a byte offset): the rest stays.
  const float four[4] = {100.0f, 200.0f, 300.0f, 400.0f};
  RT_OK(cudaMemcpyToSymbol(coeffs, four, sizeof four, 8 * sizeof(float)));
  for (int i = 0; i < 4; ++i) c[8 + i] = four[i];
  std::vector<float> h(kN, -1.0f);
  RT_OK(cudaMemcpyFromSymbol(h.data(), coeffs, sizeof(float) * kN));
  for (int i = 0; i < kN; ++i) RT_EXPECT(h[i] == c[i], "coeffs[%d] = %g, expected %g", i, h[i], c[i]);
  float two[2] = {};
  RT_OK(cudaMemcpyFromSymbol(two, coeffs, sizeof two, 9 * sizeof(float)));
  RT_EXPECT(two[0] == 200.0f && two[1] == 300.0f, "coeffs[9..10] from an offset = %g %g", two[0], two[1]);
  expectKernelSees(c);
  // Past the end: refused.
  RT_EXPECT(cudaMemcpyToSymbol(coeffs, four, sizeof four, 14 * sizeof(float)) == cudaErrorInvalidValue,
            "a copy past the symbol's end was not refused with cudaErrorInvalidValue");
  (void)cudaGetLastError();
  RT_OK(cudaDeviceReset());
}

void toSymbolAsync() {
  cudaStream_t s = nullptr;
  RT_OK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  std::vector<float> c(kN);
  for (int i = 0; i < kN; ++i) c[i] = static_cast<float>(i * i);
  float* pinned = nullptr;
  RT_OK(cudaMallocHost(&pinned, sizeof(float) * kN));
  for (int i = 0; i < kN; ++i) pinned[i] = c[i];
  RT_OK(cudaMemcpyToSymbolAsync(coeffs, pinned, sizeof(float) * kN, 0, cudaMemcpyHostToDevice, s));
  expectKernelSees(c, s);  // the kernel follows the copy in the stream
  std::vector<float> h(kN, -1.0f);
  RT_OK(cudaMemcpyFromSymbolAsync(h.data(), coeffs, sizeof(float) * kN, 0, cudaMemcpyDeviceToHost, s));
  RT_OK(cudaStreamSynchronize(s));
  for (int i = 0; i < kN; ++i) RT_EXPECT(h[i] == c[i], "coeffs[%d] = %g, expected %g", i, h[i], c[i]);
  RT_OK(cudaFreeHost(pinned));
  RT_OK(cudaStreamDestroy(s));
  RT_OK(cudaDeviceReset());
}

void symbolAddress() {
  void* p = nullptr;
  size_t bytes = 0;
  RT_OK(cudaGetSymbolAddress(&p, coeffs));
  RT_OK(cudaGetSymbolSize(&bytes, coeffs));
  RT_EXPECT(p != nullptr, "cudaGetSymbolAddress gave NULL");
  RT_EXPECT(bytes == sizeof(float) * kN, "cudaGetSymbolSize = %zu, expected %zu", bytes, sizeof(float) * kN);
  // The address is device memory: a plain copy reads the initialiser, and one written there is
  // what the kernel's ld.const reads.
  std::vector<float> h(kN, -1.0f);
  RT_OK(cudaMemcpy(h.data(), p, bytes, cudaMemcpyDeviceToHost));
  for (int i = 0; i < kN; ++i) RT_EXPECT(h[i] == initial(i), "coeffs[%d] through its address = %g", i, h[i]);
  std::vector<float> c(kN);
  for (int i = 0; i < kN; ++i) c[i] = 10.0f + static_cast<float>(i);
  RT_OK(cudaMemcpy(p, c.data(), bytes, cudaMemcpyHostToDevice));
  expectKernelSees(c);
  cudaPointerAttributes attr{};
  RT_OK(cudaPointerGetAttributes(&attr, p));
  RT_EXPECT(attr.type == cudaMemoryTypeDevice, "cudaPointerGetAttributes(type) = %d", static_cast<int>(attr.type));
  RT_OK(cudaDeviceReset());
}

#define CU_OK(call)                                                                                 \
  do {                                                                                              \
    const CUresult r_ = (call);                                                                     \
    if (r_ != CUDA_SUCCESS) {                                                                       \
      const char* n_ = nullptr;                                                                     \
      cuGetErrorName(r_, &n_);                                                                      \
      throw ::rtcheck::Failure{std::string(#call) + " -> " + (n_ != nullptr ? n_ : "?")};          \
    }                                                                                               \
  } while (0)

// A .const table of hand-written PTX, through the driver API: cuModuleGetGlobal gives its device
// address and size, the initialiser is there, and cuMemcpyHtoD changes what ld.const reads.
const char kTablePtx[] = R"(
.version 8.0
.target sm_90
.address_size 64
.const .align 4 .b32 table[4] = {10, 20, 30, 40};
.const .align 8 .b64 other = 7;
.visible .entry read_table(.param .u64 out)
{
  .reg .b32 %r<4>;
  .reg .b64 %rd<8>;
  ld.param.u64 %rd1, [out];
  cvta.to.global.u64 %rd2, %rd1;
  mov.u32 %r1, %tid.x;
  mul.wide.u32 %rd3, %r1, 4;
  mov.u64 %rd4, table;
  add.s64 %rd5, %rd4, %rd3;
  ld.const.u32 %r2, [%rd5];
  ld.const.u64 %rd6, [other];
  cvt.u32.u64 %r3, %rd6;
  add.s32 %r2, %r2, %r3;
  add.s64 %rd7, %rd2, %rd3;
  st.global.u32 [%rd7], %r2;
  ret;
}
)";

void driverModuleGetGlobal() {
  RT_OK(cudaFree(nullptr));  // the primary context, current
  CUmodule mod = nullptr;
  CU_OK(cuModuleLoadData(&mod, kTablePtx));
  CUdeviceptr table = 0, other = 0;
  size_t bytes = 0, otherBytes = 0;
  CU_OK(cuModuleGetGlobal(&table, &bytes, mod, "table"));
  CU_OK(cuModuleGetGlobal(&other, &otherBytes, mod, "other"));
  RT_EXPECT(bytes == 16 && otherBytes == 8, "sizes %zu and %zu, expected 16 and 8", bytes, otherBytes);
  RT_EXPECT(table != 0 && other != 0 && table != other, "addresses 0x%llx and 0x%llx",
            static_cast<unsigned long long>(table), static_cast<unsigned long long>(other));
  CUdeviceptr missing = 0;
  RT_EXPECT(cuModuleGetGlobal(&missing, nullptr, mod, "no_such_table") == CUDA_ERROR_NOT_FOUND,
            "a name the module lacks was not CUDA_ERROR_NOT_FOUND");
  unsigned h[4] = {};
  CU_OK(cuMemcpyDtoH(h, table, sizeof h));
  RT_EXPECT(h[0] == 10 && h[1] == 20 && h[2] == 30 && h[3] == 40, "initial table %u %u %u %u", h[0], h[1], h[2], h[3]);
  CUfunction f = nullptr;
  CU_OK(cuModuleGetFunction(&f, mod, "read_table"));
  CUdeviceptr out = 0;
  CU_OK(cuMemAlloc(&out, sizeof h));
  void* args[] = {&out};
  CU_OK(cuLaunchKernel(f, 1, 1, 1, 4, 1, 1, 0, nullptr, args, nullptr));
  CU_OK(cuMemcpyDtoH(h, out, sizeof h));
  RT_EXPECT(h[0] == 17 && h[1] == 27 && h[2] == 37 && h[3] == 47, "kernel read %u %u %u %u", h[0], h[1], h[2], h[3]);
  const unsigned fresh[4] = {1000, 2000, 3000, 4000};
  const unsigned long long seven = 1;
  CU_OK(cuMemcpyHtoD(table, fresh, sizeof fresh));
  CU_OK(cuMemcpyHtoD(other, &seven, sizeof seven));
  CU_OK(cuLaunchKernel(f, 1, 1, 1, 4, 1, 1, 0, nullptr, args, nullptr));
  CU_OK(cuMemcpyDtoH(h, out, sizeof h));
  RT_EXPECT(h[0] == 1001 && h[1] == 2001 && h[2] == 3001 && h[3] == 4001, "after cuMemcpyHtoD the kernel read %u %u %u %u",
            h[0], h[1], h[2], h[3]);
  // A second load of the same PTX has a bank of its own, with the initialiser.
  CUmodule mod2 = nullptr;
  CU_OK(cuModuleLoadData(&mod2, kTablePtx));
  CUdeviceptr table2 = 0;
  CU_OK(cuModuleGetGlobal(&table2, nullptr, mod2, "table"));
  RT_EXPECT(table2 != table, "two loads share one constant bank");
  CU_OK(cuMemcpyDtoH(h, table2, sizeof h));
  RT_EXPECT(h[0] == 10 && h[3] == 40, "the second load's table %u .. %u", h[0], h[3]);
  CU_OK(cuModuleUnload(mod2));
  CU_OK(cuMemFree(out));
  CU_OK(cuModuleUnload(mod));
  RT_OK(cudaDeviceReset());
}

const rtcheck::Case kCases[] = {
    {"initial_values", initialValues},
    {"to_symbol", toSymbol},
    {"to_symbol_async", toSymbolAsync},
    {"symbol_address", symbolAddress},
    {"driver_module_get_global", driverModuleGetGlobal},
};

}  // namespace

int main(int argc, char** argv) { return rtcheck::runCases(kCases, sizeof kCases / sizeof kCases[0], argc, argv); }
