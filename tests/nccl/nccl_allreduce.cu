// NCCL collectives over the GPUs named on the command line, in one process (ncclCommInitAll),
// every element of every rank's result checked: `nccl_allreduce N COUNT [COLLECTIVE]` with
// COLLECTIVE allreduce (sum, f32; the default), allgather, reducescatter (sum), broadcast (from
// rank 0), or all (the four in turn, one set of communicators); COUNT floats a rank contributes
// (receives, for reducescatter). Rank r's element k is
// r + 1 + (k % 7), so sums are exact in f32. Prints "nccl_allreduce: N ranks, M floats: correct"
// (with the collective's name when not allreduce) or what went wrong (docs/nccl.md).
#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

float value(int rank, size_t k) { return static_cast<float>(rank + 1) + static_cast<float>(k % 7); }

}  // namespace

// One collective on communicators `comms`; 0 when every element is right.
int run(std::vector<ncclComm_t>& comms, int n, size_t count, const std::string& coll) {
  const size_t ranks = static_cast<size_t>(n);
  // Elements each rank sends and receives.
  const size_t sendCount = coll == "reducescatter" ? count * ranks : count;
  const size_t recvCount = coll == "allgather" ? count * ranks : count;
  std::vector<float*> send(ranks), recv(ranks);
  std::vector<cudaStream_t> streams(ranks);
  for (int i = 0; i < n; ++i) {
    const size_t r = static_cast<size_t>(i);
    std::vector<float> h(sendCount);
    for (size_t k = 0; k < sendCount; ++k) h[k] = value(i, k);
    if (cudaSetDevice(i) != cudaSuccess || cudaMalloc(&send[r], sendCount * sizeof(float)) != cudaSuccess ||
        cudaMalloc(&recv[r], recvCount * sizeof(float)) != cudaSuccess || cudaStreamCreate(&streams[r]) != cudaSuccess ||
        cudaMemcpy(send[r], h.data(), sendCount * sizeof(float), cudaMemcpyHostToDevice) != cudaSuccess) {
      std::printf("FAILED: setting up rank %d\n", i);
      return 1;
    }
  }
  // Rank 0's stream timed around the collective (simulated time on mcsim).
  cudaEvent_t start = nullptr, stop = nullptr;
  cudaSetDevice(0);
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  cudaEventRecord(start, streams[0]);
  ncclGroupStart();
  for (size_t r = 0; r < ranks; ++r) {
    if (coll == "allreduce") ncclAllReduce(send[r], recv[r], count, ncclFloat, ncclSum, comms[r], streams[r]);
    if (coll == "allgather") ncclAllGather(send[r], recv[r], count, ncclFloat, comms[r], streams[r]);
    if (coll == "reducescatter") ncclReduceScatter(send[r], recv[r], count, ncclFloat, ncclSum, comms[r], streams[r]);
    if (coll == "broadcast") ncclBroadcast(send[r], recv[r], count, ncclFloat, 0, comms[r], streams[r]);
  }
  const ncclResult_t group = ncclGroupEnd();
  cudaSetDevice(0);
  cudaEventRecord(stop, streams[0]);
  int bad = 0;
  if (group != ncclSuccess) {
    std::printf("nccl_allreduce: ncclGroupEnd: %s\n", ncclGetErrorString(group));
    bad = 1;
  }
  for (int i = 0; i < n && bad == 0; ++i) {
    const size_t r = static_cast<size_t>(i);
    cudaSetDevice(i);
    if (cudaStreamSynchronize(streams[r]) != cudaSuccess) {
      std::printf("nccl_allreduce: rank %d: the %s failed\n", i, coll == "allreduce" ? "all-reduce" : coll.c_str());
      ++bad;
      continue;
    }
    std::vector<float> h(recvCount);
    cudaMemcpy(h.data(), recv[r], recvCount * sizeof(float), cudaMemcpyDeviceToHost);
    for (size_t k = 0; k < recvCount; ++k) {
      float want = 0;
      if (coll == "allreduce") {
        for (int j = 0; j < n; ++j) want += value(j, k);
      } else if (coll == "allgather") {
        want = value(static_cast<int>(k / count), k % count);
      } else if (coll == "reducescatter") {
        for (int j = 0; j < n; ++j) want += value(j, r * count + k);
      } else {
        want = value(0, k);
      }
      if (h[k] != want && bad++ < 5) std::printf("nccl_allreduce: rank %d [%zu] = %g, expected %g\n", i, k, h[k], want);
    }
  }
  for (int i = 0; i < n; ++i) {
    cudaSetDevice(i);
    cudaStreamDestroy(streams[static_cast<size_t>(i)]);
    cudaFree(send[static_cast<size_t>(i)]);
    cudaFree(recv[static_cast<size_t>(i)]);
  }
  float ms = 0;
  cudaSetDevice(0);
  cudaEventElapsedTime(&ms, start, stop);
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  if (bad == 0) {
    std::printf("nccl_allreduce: %d ranks, %zu floats%s%s: correct (rank 0: %.1f us)\n", n, count,
                coll == "allreduce" ? "" : " ", coll == "allreduce" ? "" : coll.c_str(), static_cast<double>(ms) * 1e3);
  }
  return bad == 0 ? 0 : 1;
}

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 2;
  const size_t count = argc > 2 ? std::strtoul(argv[2], nullptr, 10) : 1024;
  const std::string coll = argc > 3 ? argv[3] : "allreduce";
  if (coll != "allreduce" && coll != "allgather" && coll != "reducescatter" && coll != "broadcast" && coll != "all") {
    std::printf("FAILED: unknown collective '%s'\n", coll.c_str());
    return 2;
  }
  const size_t ranks = static_cast<size_t>(n);
  std::vector<ncclComm_t> comms(ranks);
  std::vector<int> devs(ranks);
  for (int i = 0; i < n; ++i) devs[static_cast<size_t>(i)] = i;
  if (ncclCommInitAll(comms.data(), n, devs.data()) != ncclSuccess) {
    std::printf("FAILED: ncclCommInitAll(%d)\n", n);
    return 1;
  }
  const std::vector<std::string> all = {"allreduce", "allgather", "reducescatter", "broadcast"};
  int failed = 0;
  for (const std::string& c : all)
    if (coll == c || coll == "all") failed += run(comms, n, count, c);
  for (ncclComm_t c : comms) ncclCommDestroy(c);
  return failed == 0 ? 0 : 1;
}
