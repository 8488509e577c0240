// NCCL's communicator set-up on the simulated node: ncclCommInitAll over the GPUs named on the
// command line (all of the node's by default), each communicator's rank, size and device checked,
// then destroyed. NCCL finds the node through mcsim's libcuda.so.1 and libnvidia-ml.so.1
// (docs/nvml.md); its collectives do not run yet (the image of its kernels is device-linked and
// carries SASS only; their PTX is in relocatable objects mcsim does not link yet: docs/nccl.md), so
// this program stops at set-up.
#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

int main(int argc, char** argv) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    std::printf("FAILED: cudaGetDeviceCount\n");
    return 1;
  }
  if (argc > 1) n = std::atoi(argv[1]);
  std::vector<ncclComm_t> comms(static_cast<size_t>(n));
  std::vector<int> devs(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) devs[static_cast<size_t>(i)] = i;
  const ncclResult_t r = ncclCommInitAll(comms.data(), n, devs.data());
  if (r != ncclSuccess) {
    std::printf("FAILED: ncclCommInitAll(%d): %s\n", n, ncclGetErrorString(r));
    return 1;
  }
  int bad = 0;
  for (int i = 0; i < n; ++i) {
    int rank = -1, count = -1, dev = -1;
    ncclCommUserRank(comms[static_cast<size_t>(i)], &rank);
    ncclCommCount(comms[static_cast<size_t>(i)], &count);
    ncclCommCuDevice(comms[static_cast<size_t>(i)], &dev);
    if (rank != i || count != n || dev != i) {
      std::printf("FAILED: communicator %d has rank %d of %d on device %d\n", i, rank, count, dev);
      ++bad;
    }
  }
  for (ncclComm_t c : comms) {
    if (ncclCommDestroy(c) != ncclSuccess) ++bad;
  }
  if (bad == 0) std::printf("nccl_init: %d communicators made, checked and destroyed\n", n);
  return bad == 0 ? 0 : 1;
}
