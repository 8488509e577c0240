// Kernels compiled to PTX by nvcc in the build (tests/ptx/CMakeLists.txt) and run by the PTX
// executor in compiled_test.cpp: the shapes a user's first kernels take.
#include <cstdint>

extern "C" __global__ void vector_add(const float* a, const float* b, float* c, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

// One partial sum per block: a tree in shared memory with __syncthreads between the levels.
extern "C" __global__ void block_reduce(const float* in, float* out, int n) {
  __shared__ float s[256];
  const int t = threadIdx.x;
  const int i = blockIdx.x * blockDim.x + t;
  s[t] = i < n ? in[i] : 0.0f;
  __syncthreads();
  for (int k = blockDim.x / 2; k > 0; k >>= 1) {
    if (t < k) s[t] += s[t + k];
    __syncthreads();
  }
  if (t == 0) out[blockIdx.x] = s[0];
}

// A warp's sum by shuffles, then one atomic per warp.
extern "C" __global__ void warp_reduce(const int* in, int* total, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  int v = i < n ? in[i] : 0;
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  if ((threadIdx.x & 31) == 0) atomicAdd(total, v);
}

// Atomics of several kinds into a small histogram and a running maximum.
extern "C" __global__ void histogram(const unsigned* in, unsigned* bins, unsigned* maxOut, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const unsigned v = in[i];
  atomicAdd(&bins[v % 16], 1u);
  atomicMax(maxOut, v);
}

// A loop whose trip count differs per thread, with a branch inside.
extern "C" __global__ void divergent_loop(int* out) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  int s = 0;
  for (int i = 0; i < t % 37; ++i) {
    if (i & 1) s += i * t;
    else s ^= i + 3;
  }
  out[t] = s;
}

// Dynamic shared memory, 64-bit integers and doubles.
extern "C" __global__ void dynamic_shared(const double* in, unsigned long long* out) {
  extern __shared__ double buf[];
  const int t = threadIdx.x;
  buf[t] = in[t] * 3.0 + 0.5;
  __syncthreads();
  const double v = buf[blockDim.x - 1 - t];
  out[t] = static_cast<unsigned long long>(v * 1000.0) ^ (static_cast<unsigned long long>(t) << 40);
}

// Device functions that stay calls: __noinline__, a struct returned by value, tree recursion.
struct Pair {
  int lo, hi;
};
__device__ __noinline__ Pair split_word(unsigned v) { return Pair{static_cast<int>(v & 0xffff), static_cast<int>(v >> 16)}; }
__device__ __noinline__ int fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
extern "C" __global__ void device_calls(const unsigned* in, int* out) {
  const int t = threadIdx.x;
  const Pair p = split_word(in[t]);
  out[t] = p.lo - p.hi + fib(t % 12);
}

// Device printf (vprintf) with the conversions a program uses, and assert (__assertfail).
#include <cassert>
#include <cstdio>
extern "C" __global__ void printf_kernel(int base) {
  const int t = threadIdx.x;
  if (t < 3) {
    printf("t=%d u=%u x=%x X=%#X o=%o c=%c s=%s|%5s|%-4s| f=%.3f e=%e g=%g %% ld=%ld lld=%lld lu=%lu w=%6.2f %*d\n", t + base,
           static_cast<unsigned>(t) + 4000000000u, 255 + t, 0xabcu, 8, 'A' + t, "str", "ab", "cd", 1.5f + t, 12345.678,
           0.0001, -(1L << 40) - t, 1LL << 50, 18446744073709551615ul, 3.14159, 4, t);
  }
  if (t == 31) printf("no arguments\n");
}
extern "C" __global__ void assert_kernel(const int* in) {
  const int t = threadIdx.x;
  assert(in[t] >= 0);
}

// A struct passed and returned by value, and a pointer to the caller's local array.
struct Big {
  int a[6];
  double d;
};
__device__ __noinline__ double sum_big(Big b, const int* p) {
  double s = b.d;
  for (int i = 0; i < 6; ++i) s += b.a[i] + p[i];
  return s;
}
__device__ __noinline__ Big make_big(int x) {
  Big b;
  for (int i = 0; i < 6; ++i) b.a[i] = x + i;
  b.d = x * 0.5;
  return b;
}
extern "C" __global__ void struct_calls(double* out) {
  int loc[6];
  for (int i = 0; i < 6; ++i) loc[i] = static_cast<int>(threadIdx.x) * i;
  const Big b = make_big(threadIdx.x);
  out[threadIdx.x] = sum_big(b, loc);
}

// Recursion through a pointer to the caller's local array: each activation's array has its own
// address, so the deeper call's writes through `parent` reach its caller's copy, not its own.
__device__ __noinline__ int local_chain(int* parent, int n) {
  int mine[4];
  for (int i = 0; i < 4; ++i) mine[i] = n * 10 + i;
  if (parent != nullptr) parent[n & 3] += 1000 * (n + 1);
  const int below = n > 0 ? local_chain(mine, n - 1) : 0;
  int s = 0;
  for (int i = 0; i < 4; ++i) s += mine[i] * (i + 1);
  return s + 7 * below;
}
extern "C" __global__ void recursive_locals(int* out) {
  int top[4] = {1, 2, 3, 4};
  const int r = local_chain(top, static_cast<int>(threadIdx.x % 9));
  out[threadIdx.x] = r + top[0] + top[1] + top[2] + top[3];
}

// More arguments than device printf takes (32): the rest are printed as written.
extern "C" __global__ void printf_many() {
  printf("%d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d %d|\n", 1, 2, 3, 4,
         5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34);
}

// A one-shot all-reduce with multimem inline assembly, as CUDA C++ code writes it: each thread
// ld_reduces four floats of the multicast buffer, stores the sums to out, then adds 1 to every
// member's counter (PTX ISA 9.7.9.14; sm_90).
extern "C" __global__ void multimem_allreduce(float* mc, float* out, unsigned* mcCounter, int n4) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n4) return;
  float a, b, c, d;
  asm volatile("multimem.ld_reduce.relaxed.sys.global.add.v4.f32 {%0, %1, %2, %3}, [%4];"
               : "=f"(a), "=f"(b), "=f"(c), "=f"(d)
               : "l"(mc + 4 * i)
               : "memory");
  reinterpret_cast<float4*>(out)[i] = make_float4(a, b, c, d);
  asm volatile("multimem.red.release.sys.global.add.u32 [%0], %1;" ::"l"(mcCounter), "r"(1u) : "memory");
}

// Indirect calls: a table of device-function pointers (a .global initialised with function
// addresses), indexed per thread, and a pointer passed through a function that calls it.
typedef int (*IntOp)(int);
__device__ __noinline__ int op_add7(int x) { return x + 7; }
__device__ __noinline__ int op_twice(int x) { return 2 * x; }
__device__ __noinline__ int op_fib(int x) { return fib(x % 12); }
__device__ IntOp op_table[3] = {op_add7, op_twice, op_fib};
__device__ __noinline__ int apply_twice(IntOp f, int x) { return f(f(x)); }
extern "C" __global__ void function_pointers(int* out) {
  const int t = threadIdx.x;
  out[t] = apply_twice(op_table[t % 3], t) + (t % 2 == 0 ? op_table[1](t) : 0);
}

// cuda::barrier with cuda::memcpy_async (libcu++; mbarrier and cp.async in the PTX): a block copies
// its 256 values into shared memory, then passes them round a ring, one arrive_and_wait a phase.
#include <cuda/barrier>
extern "C" __global__ void barrier_phases(const int* in, int* out, int phases) {
  __shared__ int buf[256];
  __shared__ int ring[256];
#pragma nv_diag_suppress static_var_with_dynamic_init
  __shared__ cuda::barrier<cuda::thread_scope_block> bar;
  if (threadIdx.x == 0) init(&bar, blockDim.x);
  __syncthreads();
  cuda::memcpy_async(buf, in + blockIdx.x * 256, sizeof(int) * 256, bar);
  bar.arrive_and_wait();
  int v = buf[threadIdx.x];
  for (int p = 0; p < phases; ++p) {
    ring[threadIdx.x] = v;
    bar.arrive_and_wait();
    v = ring[(threadIdx.x + 1) % 256] + 1;
    bar.arrive_and_wait();
  }
  out[blockIdx.x * 256 + threadIdx.x] = v;
}
