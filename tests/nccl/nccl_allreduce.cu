// ncclAllReduce (sum, f32) over the GPUs named on the command line, in one process
// (ncclCommInitAll), each rank's buffer filled with values whose sums are exact in f32; every
// element of every rank's result checked. Prints "nccl_allreduce: N ranks, M floats: correct" or
// what went wrong. On mcsim NCCL's kernels cannot run yet (docs/nccl.md): the launch fails and
// ncclGroupEnd reports it; the test in CMakeLists.txt checks that mcsim says why.
#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 2;
  const size_t count = argc > 2 ? std::strtoul(argv[2], nullptr, 10) : 1024;
  std::vector<ncclComm_t> comms(static_cast<size_t>(n));
  std::vector<int> devs(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) devs[static_cast<size_t>(i)] = i;
  if (ncclCommInitAll(comms.data(), n, devs.data()) != ncclSuccess) {
    std::printf("FAILED: ncclCommInitAll(%d)\n", n);
    return 1;
  }
  std::vector<float*> buf(static_cast<size_t>(n));
  std::vector<cudaStream_t> streams(static_cast<size_t>(n));
  // Rank r holds r + 1 + (k % 7) at element k: the sum is n(n+1)/2 + n (k % 7), exact in f32.
  for (int i = 0; i < n; ++i) {
    const size_t r = static_cast<size_t>(i);
    std::vector<float> h(count);
    for (size_t k = 0; k < count; ++k) h[k] = static_cast<float>(i + 1) + static_cast<float>(k % 7);
    if (cudaSetDevice(i) != cudaSuccess || cudaMalloc(&buf[r], count * sizeof(float)) != cudaSuccess ||
        cudaStreamCreate(&streams[r]) != cudaSuccess ||
        cudaMemcpy(buf[r], h.data(), count * sizeof(float), cudaMemcpyHostToDevice) != cudaSuccess) {
      std::printf("FAILED: setting up rank %d\n", i);
      return 1;
    }
  }
  ncclGroupStart();
  for (int i = 0; i < n; ++i) {
    const size_t r = static_cast<size_t>(i);
    ncclAllReduce(buf[r], buf[r], count, ncclFloat, ncclSum, comms[r], streams[r]);
  }
  const ncclResult_t group = ncclGroupEnd();
  int bad = 0;
  if (group != ncclSuccess) {
    std::printf("nccl_allreduce: ncclGroupEnd: %s\n", ncclGetErrorString(group));
    bad = 1;
  }
  for (int i = 0; i < n && bad == 0; ++i) {
    const size_t r = static_cast<size_t>(i);
    cudaSetDevice(i);
    if (cudaStreamSynchronize(streams[r]) != cudaSuccess) {
      std::printf("nccl_allreduce: rank %d: the all-reduce failed\n", i);
      ++bad;
      continue;
    }
    std::vector<float> h(count);
    cudaMemcpy(h.data(), buf[r], count * sizeof(float), cudaMemcpyDeviceToHost);
    for (size_t k = 0; k < count; ++k) {
      const float want = static_cast<float>(n * (n + 1) / 2) + static_cast<float>(n) * static_cast<float>(k % 7);
      if (h[k] != want && bad++ < 5) std::printf("nccl_allreduce: rank %d [%zu] = %g, expected %g\n", i, k, h[k], want);
    }
  }
  for (ncclComm_t c : comms) ncclCommDestroy(c);
  for (int i = 0; i < n; ++i) {
    cudaSetDevice(i);
    cudaStreamDestroy(streams[static_cast<size_t>(i)]);
    cudaFree(buf[static_cast<size_t>(i)]);
  }
  if (bad == 0) std::printf("nccl_allreduce: %d ranks, %zu floats: correct\n", n, count);
  return bad == 0 ? 0 : 1;
}
