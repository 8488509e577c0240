/* mcsim's kernel library: the ABI shared by the real CUDA kernels (kernels/mcsim_kernels.cu,
 * compiled by nvcc) and mcsim's behavioural models of them.
 *
 * A program loads the library image with cuModuleLoadData or cuLibraryLoadData, looks kernels up
 * by the names below, and launches them with cuLaunchKernel / cuLaunchKernelEx. On a real GPU
 * (sm_90 or newer) they run as compiled; under mcsim the driver recognises them by name and runs
 * their behavioural models. The same host code serves both.
 *
 * Conventions for every kernel:
 *  - `count` is in elements of `dtype`; a packed f16x2 / bf16x2 element is one 32-bit word
 *    holding two halves (low half first), so it reduces as two independent lanes.
 *  - `vec` is how many elements one multimem instruction carries: 1, 2 or 4 for the 32-bit
 *    floating-point types (.v2 / .v4 forms), always 1 for f64 and the integer types (PTX has no
 *    vector forms of those). `count` must be a multiple of `vec`; addresses must be aligned to
 *    element size * vec.
 *  - `mc_*` arguments are multicast addresses (a multicast object mapped with cuMemMap);
 *    the others are ordinary device addresses (local memory, or a peer's through a mapping).
 *  - Grid and block size are the caller's choice; every kernel is correct for any launch shape
 *    (grid-stride loops). Launch shape matters for speed, on real GPUs and in the model alike.
 *    The kernels with a barrier spin, so all of their blocks must be resident at once.
 *  - Arguments outside these rules (an unknown dtype or op, a vec the type has no form for, a
 *    count that is not a multiple of vec, world 0, rank >= world, an op/type pair marked "not
 *    defined" below) make the kernel execute `trap` before touching memory: the launch fails.
 *  - Operator domain (what ptxas accepts for multimem.ld_reduce, CUDA 13.0, sm_90 and sm_100):
 *    add on every type; min and max on f16x2, bf16x2, u32, s32 and u64; min and max on f32 and
 *    f64 are not defined. mcsim_reduce takes the same domain.
 */
#ifndef MCSIM_KERNELS_H
#define MCSIM_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Element types. The value is what kernels take in their `dtype` argument. */
enum mcsim_dtype {
  MCSIM_DTYPE_F32 = 0,
  MCSIM_DTYPE_F16X2 = 1,
  MCSIM_DTYPE_BF16X2 = 2,
  MCSIM_DTYPE_F64 = 3,
  MCSIM_DTYPE_U32 = 4,
  MCSIM_DTYPE_S32 = 5,
  MCSIM_DTYPE_U64 = 6
};

/* Reduction operators (multimem.ld_reduce takes all three; multimem.red only ADD). */
enum mcsim_redop { MCSIM_REDOP_ADD = 0, MCSIM_REDOP_MIN = 1, MCSIM_REDOP_MAX = 2 };

/* Bytes per element of `dtype` (4 or 8); 0 for an unknown type. */
static inline size_t mcsim_dtype_bytes(uint32_t dtype) {
  return dtype == MCSIM_DTYPE_F64 || dtype == MCSIM_DTYPE_U64 ? 8u : dtype <= MCSIM_DTYPE_U64 ? 4u : 0u;
}

/* Kernel names and parameters (in order; CUdeviceptr is a 64-bit device address).
 *
 * mcsim_mm_st(CUdeviceptr mc_dst, CUdeviceptr src, uint64_t count, uint32_t dtype, uint32_t vec)
 *     multimem.st: every team member's memory at mc_dst receives src[0..count).
 * mcsim_mm_red(CUdeviceptr mc_dst, CUdeviceptr src, uint64_t count, uint32_t dtype, uint32_t vec)
 *     multimem.red.add: every member's mc_dst[i] += src[i] (an atomic reduction at each member).
 * mcsim_mm_ld_reduce(CUdeviceptr dst, CUdeviceptr mc_src, uint64_t count, uint32_t dtype,
 *                    uint32_t op, uint32_t vec)
 *     multimem.ld_reduce: dst[i] = op over the members' mc_src[i], reduced in the switch.
 * mcsim_barrier(CUdeviceptr mc_signal, CUdeviceptr signal, uint32_t world, uint32_t epoch)
 *     A cross-GPU barrier: one thread adds 1 to every member's signal word with
 *     multimem.red.release.sys.add.u32, then waits (ld.acquire.sys) until this GPU's own signal
 *     word (`signal`, the local address of the same word) reaches world * epoch. Zero the signal
 *     words once, then pass epoch 1, 2, 3, ... on successive barriers.
 *     With several blocks, each block is one arrival (its first thread, after __syncthreads) and
 *     waits for world * blocks * epoch, blocks = gridDim.x * gridDim.y * gridDim.z, so every
 *     member must launch the same number of blocks, and a signal word must serve barriers of
 *     one grid size only. "Reaches" is modulo 2^32: (int32_t)(word - target) >= 0. The
 *     all-reduce kernels' barriers follow the same rule.
 * mcsim_allreduce_oneshot(CUdeviceptr mc_buf, CUdeviceptr out, uint64_t count, uint32_t dtype,
 *                         CUdeviceptr mc_signal, CUdeviceptr signal, uint32_t world,
 *                         uint32_t epoch)
 *     barrier(epoch); out[i] = sum over members of buf[i] (ld_reduce of the whole buffer);
 *     barrier(epoch + 1). Uses two barrier epochs. There is no vec argument: f32, f16x2 and
 *     bf16x2 go four elements per instruction (.v4) when mc_buf and out are 16-byte aligned,
 *     over the largest multiple of 4 elements, and one at a time for the rest; the other
 *     types one at a time. (mcsim_allreduce_twoshot likewise, per share, on mc_buf's alignment.)
 * mcsim_allreduce_twoshot(CUdeviceptr mc_buf, uint64_t count, uint32_t dtype,
 *                         CUdeviceptr mc_signal, CUdeviceptr signal, uint32_t rank,
 *                         uint32_t world, uint32_t epoch)
 *     barrier(epoch); this rank reduces its share of the buffer with ld_reduce and stores the
 *     sums to every member with multimem.st (in place); barrier(epoch + 1). Shares: the count is
 *     cut into `world` shares of ceil(count / world) elements, rounded up to a multiple of 4
 *     elements, the last share taking what is left (possibly nothing).
 * mcsim_allreduce_nvls(CUdeviceptr mc_buf, uint64_t count, uint32_t dtype,
 *                      CUdeviceptr mc_signal, CUdeviceptr signal, uint32_t rank,
 *                      uint32_t world, uint32_t epoch)
 *     The same arguments, shares and result as mcsim_allreduce_twoshot, with the loop NCCL's
 *     NVLS kernels use: each thread issues four ld_reduce (4 x 16 bytes on the .v4 path) before
 *     it stores their sums, so four times as many loads are in flight (NCCL's
 *     ncclNvlsUnrollBytes, 4 x 16, in src/include/device.h). twoshot keeps PyTorch's loop (one
 *     load, then its store).
 * mcsim_copy(CUdeviceptr dst, CUdeviceptr src, uint64_t bytes)
 *     A plain SM copy (loads and stores; either side may be a peer's memory). Each thread
 *     issues eight loads (of 16 bytes when both addresses are 16-byte aligned) before its stores.
 * mcsim_reduce(CUdeviceptr dst, CUdeviceptr a, CUdeviceptr b, uint64_t count, uint32_t dtype,
 *              uint32_t op)
 *     dst[i] = a[i] op b[i], plain loads and stores (either side may be a peer's memory). On
 *     the 4-byte types with 16-byte aligned buffers each thread issues four 16-byte loads of a
 *     and four of b before it stores.
 */
#define MCSIM_KERNEL_MM_ST "mcsim_mm_st"
#define MCSIM_KERNEL_MM_RED "mcsim_mm_red"
#define MCSIM_KERNEL_MM_LD_REDUCE "mcsim_mm_ld_reduce"
#define MCSIM_KERNEL_BARRIER "mcsim_barrier"
#define MCSIM_KERNEL_ALLREDUCE_ONESHOT "mcsim_allreduce_oneshot"
#define MCSIM_KERNEL_ALLREDUCE_TWOSHOT "mcsim_allreduce_twoshot"
#define MCSIM_KERNEL_ALLREDUCE_NVLS "mcsim_allreduce_nvls"
#define MCSIM_KERNEL_COPY "mcsim_copy"
#define MCSIM_KERNEL_REDUCE "mcsim_reduce"

/* The library image to pass to cuModuleLoadData / cuLibraryLoadData: a fatbin (sm_90 and
 * sm_100 code, compute_90 PTX) when the project was built with nvcc, else the PTX text of the
 * same kernels (NUL-terminated), which real drivers compile on load. Linked from the
 * mcsim_kernels library. */
extern const unsigned char mcsim_kernel_image[];
extern const size_t mcsim_kernel_image_size;

#ifdef __cplusplus
}
#endif

#endif /* MCSIM_KERNELS_H */
