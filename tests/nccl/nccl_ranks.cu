// NCCL with one process a GPU, as jobs run it (ncclCommInitRank), every element checked:
// `nccl_ranks N COUNT` starts N processes of itself (fork and exec, `--rank R`), each on GPU R
// (cudaSetDevice(R)); rank 0 gets the unique id (ncclGetUniqueId) and passes it to the others
// through a file (written whole, then renamed into place). Each rank runs ncclAllReduce (sum,
// f32), ncclAllGather, ncclReduceScatter (sum) and ncclBroadcast (from rank 0) of COUNT floats a
// rank on one communicator, checks every element it receives, and prints one line per
// collective; the launcher prints "nccl_ranks: N processes, M floats: correct" when every rank
// exits 0 (docs/nccl.md). On mcsim the processes attach to the shared node MCSIM_NODE names.
// `nccl_ranks N COUNT G` puts the ranks on the compute trays of a rack, G GPUs a tray (the node's
// preset must have trays, gb200-nvl72): rank R runs on tray R / G (MCSIM_TRAY, and NCCL_HOSTID
// naming the tray, so that NCCL takes each tray for a host of its own) and uses its device R % G;
// NCCL then builds one multi-node NVLink (MNNVL) communicator over the trays (docs/nccl.md).
// Rank r's element k is r + 1 + (k % 7), so sums are exact in f32.
#include <cuda_runtime.h>
#include <nccl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

float value(int rank, size_t k) { return static_cast<float>(rank + 1) + static_cast<float>(k % 7); }

// The unique id, through `path`: rank 0 writes it, the others wait for it (at most 120 s).
bool shareId(int rank, const std::string& path, ncclUniqueId* id) {
  if (rank == 0) {
    if (ncclGetUniqueId(id) != ncclSuccess) return false;
    const std::string tmp = path + ".tmp";
    FILE* f = std::fopen(tmp.c_str(), "wb");
    if (f == nullptr) return false;
    const bool ok = std::fwrite(id, sizeof *id, 1, f) == 1;
    return std::fclose(f) == 0 && ok && std::rename(tmp.c_str(), path.c_str()) == 0;
  }
  for (int i = 0; i < 12000; ++i) {
    if (FILE* f = std::fopen(path.c_str(), "rb")) {
      const bool ok = std::fread(id, sizeof *id, 1, f) == 1;
      std::fclose(f);
      return ok;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

// One collective on `comm`; 0 when every element is right.
int run(ncclComm_t comm, cudaStream_t stream, int rank, int n, size_t count, const std::string& coll) {
  const size_t ranks = static_cast<size_t>(n), r = static_cast<size_t>(rank);
  const size_t sendCount = coll == "reducescatter" ? count * ranks : count;
  const size_t recvCount = coll == "allgather" ? count * ranks : count;
  float *send = nullptr, *recv = nullptr;
  std::vector<float> h(sendCount);
  for (size_t k = 0; k < sendCount; ++k) h[k] = value(rank, k);
  if (cudaMalloc(&send, sendCount * sizeof(float)) != cudaSuccess ||
      cudaMalloc(&recv, recvCount * sizeof(float)) != cudaSuccess ||
      cudaMemcpy(send, h.data(), sendCount * sizeof(float), cudaMemcpyHostToDevice) != cudaSuccess) {
    std::printf("nccl_ranks: rank %d: FAILED setting up the %s\n", rank, coll.c_str());
    return 1;
  }
  ncclResult_t res = ncclSuccess;
  if (coll == "allreduce") res = ncclAllReduce(send, recv, count, ncclFloat, ncclSum, comm, stream);
  if (coll == "allgather") res = ncclAllGather(send, recv, count, ncclFloat, comm, stream);
  if (coll == "reducescatter") res = ncclReduceScatter(send, recv, count, ncclFloat, ncclSum, comm, stream);
  if (coll == "broadcast") res = ncclBroadcast(send, recv, count, ncclFloat, 0, comm, stream);
  int bad = 0;
  if (res != ncclSuccess) {
    std::printf("nccl_ranks: rank %d: %s: %s\n", rank, coll.c_str(), ncclGetErrorString(res));
    bad = 1;
  } else if (cudaStreamSynchronize(stream) != cudaSuccess) {
    std::printf("nccl_ranks: rank %d: the %s failed\n", rank, coll.c_str());
    bad = 1;
  } else {
    std::vector<float> got(recvCount);
    cudaMemcpy(got.data(), recv, recvCount * sizeof(float), cudaMemcpyDeviceToHost);
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
      if (got[k] != want && bad++ < 5) {
        std::printf("nccl_ranks: rank %d: %s [%zu] = %g, expected %g\n", rank, coll.c_str(), k, got[k], want);
      }
    }
  }
  cudaFree(send);
  cudaFree(recv);
  if (bad == 0) std::printf("nccl_ranks: rank %d: %zu floats %s: correct\n", rank, count, coll.c_str());
  std::fflush(stdout);
  return bad == 0 ? 0 : 1;
}

int rankMain(int rank, int n, size_t count, const std::string& idPath, int device) {
  if (cudaSetDevice(device) != cudaSuccess) {
    std::printf("nccl_ranks: rank %d: FAILED: cudaSetDevice\n", rank);
    return 1;
  }
  ncclUniqueId id;
  if (!shareId(rank, idPath, &id)) {
    std::printf("nccl_ranks: rank %d: FAILED: no unique id through %s\n", rank, idPath.c_str());
    return 1;
  }
  ncclComm_t comm = nullptr;
  const ncclResult_t init = ncclCommInitRank(&comm, n, id, rank);
  if (init != ncclSuccess) {
    std::printf("nccl_ranks: rank %d: FAILED: ncclCommInitRank: %s\n", rank, ncclGetErrorString(init));
    return 1;
  }
  cudaStream_t stream = nullptr;
  cudaStreamCreate(&stream);
  int failed = 0;
  for (const char* c : {"allreduce", "allgather", "reducescatter", "broadcast"}) failed += run(comm, stream, rank, n, count, c);
  cudaStreamDestroy(stream);
  ncclCommDestroy(comm);
  return failed == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 7 && std::strcmp(argv[1], "--rank") == 0) {
    return rankMain(std::atoi(argv[2]), std::atoi(argv[3]), std::strtoul(argv[4], nullptr, 10), argv[5],
                    std::atoi(argv[6]));
  }
  const int n = argc > 1 ? std::atoi(argv[1]) : 2;
  const size_t count = argc > 2 ? std::strtoul(argv[2], nullptr, 10) : 1024;
  const int perTray = argc > 3 ? std::atoi(argv[3]) : 0;
  if (n < 1 || n > 72 || count == 0 || perTray < 0) {
    std::printf("usage: nccl_ranks N COUNT [GPUS_PER_TRAY]\n");
    return 2;
  }
  char dir[] = "/tmp/nccl_ranks-XXXXXX";
  if (mkdtemp(dir) == nullptr) {
    std::perror("mkdtemp");
    return 1;
  }
  const std::string idPath = std::string(dir) + "/id";
  std::vector<pid_t> pids;
  for (int r = 0; r < n; ++r) {
    const pid_t pid = fork();
    if (pid == 0) {
      const std::string rank = std::to_string(r), ranks = std::to_string(n), floats = std::to_string(count);
      setenv("MCSIM_RANK", rank.c_str(), 1);
      std::string device = rank;
      if (perTray > 0) {
        const std::string tray = std::to_string(r / perTray);
        setenv("MCSIM_TRAY", tray.c_str(), 1);
        setenv("NCCL_HOSTID", ("nccl-ranks-tray-" + tray).c_str(), 1);
        device = std::to_string(r % perTray);
      }
      execl("/proc/self/exe", argv[0], "--rank", rank.c_str(), ranks.c_str(), floats.c_str(), idPath.c_str(),
            device.c_str(), static_cast<char*>(nullptr));
      std::perror("execl");
      _exit(127);
    }
    if (pid < 0) {
      std::perror("fork");
      return 1;
    }
    pids.push_back(pid);
  }
  int failed = 0;
  for (size_t r = 0; r < pids.size(); ++r) {
    int status = 0;
    if (waitpid(pids[r], &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      std::printf("nccl_ranks: rank %zu FAILED (%s %d)\n", r, WIFSIGNALED(status) ? "signal" : "exit status",
                  WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
      ++failed;
    }
  }
  std::remove(idPath.c_str());
  rmdir(dir);
  if (failed == 0) std::printf("nccl_ranks: %d processes, %zu floats: correct\n", n, count);
  return failed == 0 ? 0 : 1;
}
