// NCCL collectives over the GPUs named on the command line, in one process (ncclCommInitAll),
// every element of every rank's result checked:
//
//   nccl_allreduce N COUNT [COLLECTIVE [TYPE [OP [REPEAT [BATCH]]]]]
//
// COLLECTIVE: allreduce (the default), allgather, reducescatter, broadcast (from rank 0), a
// comma-separated list of them, or all (the four). TYPE: f32 (the default), bf16, f16, or a list.
// OP (for all-reduce and reduce-scatter): sum (the default), max, or a list. Every combination
// runs in turn on one set of communicators, collective by collective. COUNT elements a rank
// contributes (receives, for reducescatter). REPEAT: each is run that many times (1 by default),
// each run checked, each timed with events on rank 0's stream. BATCH (1 by default): each run
// issues that many collectives back to back, the events around all but the first, and reports
// their mean: the GPUs' time per collective in a steady stream of them, the figure nccl-tests'
// mean over many iterations approaches (the host's work for the next collective overlaps the GPUs'
// work on this one). With one collective a run, the events also hold the host's launch work,
// which for 8 GPUs of one thread is tens of microseconds.
//
// Rank r's element k is ((5r + 3k) mod 11) - 5 + (k mod 7): small integers of both signs, whose
// sums over up to 8 ranks (|sum| <= 88) and every partial sum are exact in f32, bf16 (8 bits of
// significand: integers up to 256) and f16, in whatever order NCCL or the switch adds them, and
// whose maximum comes from a different rank for different k. So the expected value of every
// element is exact, and compared bit for bit.
//
// Prints "nccl_allreduce: N ranks, M floats: correct" for f32 sum all-reduce, otherwise with the
// collective, type and op named ("nccl_allreduce: 8 ranks, 1024 bf16 reducescatter max: correct"),
// with rank 0's time of the collective, or what went wrong (docs/nccl.md).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

float value(int rank, size_t k) {
  return static_cast<float>(static_cast<int>((5 * static_cast<size_t>(rank) + 3 * k) % 11) - 5 + static_cast<int>(k % 7));
}

struct Type {
  std::string name;
  ncclDataType_t nccl;
  size_t bytes;
};

// The bits of `f` (an integer of small magnitude, so exact in every type) in `t`.
void encode(const Type& t, float f, void* out) {
  if (t.nccl == ncclFloat) {
    std::memcpy(out, &f, 4);
  } else if (t.nccl == ncclBfloat16) {
    const __nv_bfloat16 h = __float2bfloat16(f);
    std::memcpy(out, &h, 2);
  } else {
    const __half h = __float2half(f);
    std::memcpy(out, &h, 2);
  }
}

}  // namespace

// One collective on communicators `comms`; 0 when every element is right.
int run(std::vector<ncclComm_t>& comms, int n, size_t count, const std::string& coll, const Type& type,
        const std::string& op, int repeat, int batch) {
  const size_t ranks = static_cast<size_t>(n);
  const ncclRedOp_t redOp = op == "max" ? ncclMax : ncclSum;
  // Elements each rank sends and receives.
  const size_t sendCount = coll == "reducescatter" ? count * ranks : count;
  const size_t recvCount = coll == "allgather" ? count * ranks : count;
  std::vector<void*> send(ranks), recv(ranks);
  std::vector<cudaStream_t> streams(ranks);
  for (int i = 0; i < n; ++i) {
    const size_t r = static_cast<size_t>(i);
    std::vector<uint8_t> h(sendCount * type.bytes);
    for (size_t k = 0; k < sendCount; ++k) encode(type, value(i, k), h.data() + k * type.bytes);
    if (cudaSetDevice(i) != cudaSuccess || cudaMalloc(&send[r], sendCount * type.bytes) != cudaSuccess ||
        cudaMalloc(&recv[r], recvCount * type.bytes) != cudaSuccess || cudaStreamCreate(&streams[r]) != cudaSuccess ||
        cudaMemcpy(send[r], h.data(), sendCount * type.bytes, cudaMemcpyHostToDevice) != cudaSuccess) {
      std::printf("FAILED: setting up rank %d\n", i);
      return 1;
    }
  }
  // The expected result of every element, encoded.
  std::vector<std::vector<uint8_t>> want(coll == "reducescatter" ? ranks : 1, std::vector<uint8_t>(recvCount * type.bytes));
  for (size_t r = 0; r < want.size(); ++r) {
    for (size_t k = 0; k < recvCount; ++k) {
      float w = 0;
      if (coll == "allreduce" || coll == "reducescatter") {
        const size_t at = coll == "allreduce" ? k : r * count + k;
        w = value(0, at);
        for (int j = 1; j < n; ++j) w = op == "max" ? (value(j, at) > w ? value(j, at) : w) : w + value(j, at);
      } else if (coll == "allgather") {
        w = value(static_cast<int>(k / count), k % count);
      } else {
        w = value(0, k);
      }
      encode(type, w, want[r].data() + k * type.bytes);
    }
  }
  std::string what = std::to_string(n) + " ranks, " + std::to_string(count) + " " + (type.name == "f32" ? "floats" : type.name);
  if (coll != "allreduce") what += " " + coll;
  if ((coll == "allreduce" || coll == "reducescatter") && op != "sum") what += " " + op;
  int bad = 0;
  for (int it = 0; it < repeat && bad == 0; ++it) {
    for (int i = 0; i < n; ++i) {
      cudaSetDevice(i);
      cudaMemset(recv[static_cast<size_t>(i)], 0xff, recvCount * type.bytes);
      cudaDeviceSynchronize();
    }
    // Rank 0's stream timed around the collective (simulated time on mcsim).
    cudaEvent_t start = nullptr, stop = nullptr;
    cudaSetDevice(0);
    cudaEventCreate(&start);
    cudaEventCreate(&stop);
    ncclResult_t group = ncclSuccess;
    for (int b = 0; b < batch && group == ncclSuccess; ++b) {
      if (b == (batch > 1 ? 1 : 0)) {
        cudaSetDevice(0);
        cudaEventRecord(start, streams[0]);
      }
      ncclGroupStart();
      for (size_t r = 0; r < ranks; ++r) {
        if (coll == "allreduce") ncclAllReduce(send[r], recv[r], count, type.nccl, redOp, comms[r], streams[r]);
        if (coll == "allgather") ncclAllGather(send[r], recv[r], count, type.nccl, comms[r], streams[r]);
        if (coll == "reducescatter") ncclReduceScatter(send[r], recv[r], count, type.nccl, redOp, comms[r], streams[r]);
        if (coll == "broadcast") ncclBroadcast(send[r], recv[r], count, type.nccl, 0, comms[r], streams[r]);
      }
      group = ncclGroupEnd();
    }
    cudaSetDevice(0);
    cudaEventRecord(stop, streams[0]);
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
      std::vector<uint8_t> h(recvCount * type.bytes);
      cudaMemcpy(h.data(), recv[r], h.size(), cudaMemcpyDeviceToHost);
      const std::vector<uint8_t>& w = want[coll == "reducescatter" ? r : 0];
      if (h == w) continue;
      for (size_t k = 0; k < recvCount; ++k) {
        if (std::memcmp(h.data() + k * type.bytes, w.data() + k * type.bytes, type.bytes) == 0) continue;
        if (bad++ >= 5) continue;
        uint32_t got = 0, exp = 0;
        std::memcpy(&got, h.data() + k * type.bytes, type.bytes);
        std::memcpy(&exp, w.data() + k * type.bytes, type.bytes);
        std::printf("nccl_allreduce: rank %d [%zu] = 0x%x, expected 0x%x\n", i, k, got, exp);
      }
    }
    float ms = 0;
    cudaSetDevice(0);
    cudaEventElapsedTime(&ms, start, stop);
    cudaEventDestroy(start);
    cudaEventDestroy(stop);
    if (bad == 0) {
      const int timed = batch > 1 ? batch - 1 : 1;
      std::printf("nccl_allreduce: %s: correct (rank 0: %.1f us", what.c_str(), static_cast<double>(ms) * 1e3 / timed);
      std::printf(batch > 1 ? ", the mean of the last %d of %d back to back)\n" : ")\n", timed, batch);
    }
  }
  for (int i = 0; i < n; ++i) {
    cudaSetDevice(i);
    cudaStreamDestroy(streams[static_cast<size_t>(i)]);
    cudaFree(send[static_cast<size_t>(i)]);
    cudaFree(recv[static_cast<size_t>(i)]);
  }
  return bad == 0 ? 0 : 1;
}

// The items of a comma-separated list.
std::vector<std::string> split(const std::string& list) {
  std::vector<std::string> out;
  size_t at = 0;
  while (true) {
    const size_t comma = list.find(',', at);
    out.push_back(list.substr(at, comma == std::string::npos ? std::string::npos : comma - at));
    if (comma == std::string::npos) return out;
    at = comma + 1;
  }
}

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 2;
  const size_t count = argc > 2 ? std::strtoul(argv[2], nullptr, 10) : 1024;
  std::vector<std::string> colls = split(argc > 3 ? argv[3] : "allreduce");
  const std::vector<std::string> typeNames = split(argc > 4 ? argv[4] : "f32");
  const std::vector<std::string> ops = split(argc > 5 ? argv[5] : "sum");
  const int repeat = argc > 6 ? std::atoi(argv[6]) : 1;
  const int batch = argc > 7 ? std::atoi(argv[7]) : 1;
  if (colls.size() == 1 && colls[0] == "all") colls = {"allreduce", "allgather", "reducescatter", "broadcast"};
  for (const std::string& c : colls) {
    if (c != "allreduce" && c != "allgather" && c != "reducescatter" && c != "broadcast") {
      std::printf("FAILED: unknown collective '%s'\n", c.c_str());
      return 2;
    }
  }
  std::vector<Type> types;
  for (const std::string& t : typeNames) {
    if (t == "f32") types.push_back({"f32", ncclFloat, 4});
    else if (t == "bf16") types.push_back({"bf16", ncclBfloat16, 2});
    else if (t == "f16") types.push_back({"f16", ncclHalf, 2});
    else {
      std::printf("FAILED: unknown type '%s' (f32, bf16, f16)\n", t.c_str());
      return 2;
    }
  }
  for (const std::string& op : ops) {
    if (op != "sum" && op != "max") {
      std::printf("FAILED: unknown op '%s' (sum, max)\n", op.c_str());
      return 2;
    }
  }
  if (n < 1 || repeat < 1 || batch < 1) {
    std::printf("FAILED: a positive number of ranks, of repeats and of collectives a run\n");
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
  // Every collective, type and op named, in that order (the op only for the reductions), on one
  // set of communicators.
  int failed = 0;
  for (const std::string& c : colls) {
    const bool reduces = c == "allreduce" || c == "reducescatter";
    for (const Type& t : types)
      for (size_t o = 0; o < (reduces ? ops.size() : 1); ++o) failed += run(comms, n, count, c, t, reduces ? ops[o] : "sum", repeat, batch);
  }
  for (ncclComm_t c : comms) ncclCommDestroy(c);
  return failed == 0 ? 0 : 1;
}
