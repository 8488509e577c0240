// The command line of mcsim_bench_allreduce. Parsing is by hand: the benchmark is a plain
// driver-API program that links nothing but libcuda.so.1 and the kernel image, so that the same
// source builds and runs on a real GPU node.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mcsim::bench {

enum class Algo { kNvls, kOneshot, kTwoshot, kRing };
enum class Loader { kModule, kLibrary };  // cuModuleLoadData per context, or cuLibraryLoadData once
// What stdout holds: nccl-tests' table (its header lines, out-of-place and in-place columns, the
// average bus bandwidth), to diff against a real machine's all_reduce_perf; or one plain row per
// size (`bytes time_us algbw_GBps busbw_GBps`), for scripts.
enum class Format { kNcclTests, kPlain };

struct Options {
  int gpus = 0;  // 0: every device
  Algo algo = Algo::kNvls;
  std::vector<uint64_t> sizes{uint64_t{1} << 20};  // bytes per GPU
  uint32_t dtype = 0;                              // MCSIM_DTYPE_F32
  std::string dtypeName = "f32";
  std::string ncclTypeName = "float";             // the type as nccl-tests names it
  int iters = 5;    // timed iterations
  int warmups = 1;  // untimed iterations before them
  bool check = false;
  Loader loader = Loader::kModule;
  Format format = Format::kNcclTests;
  // How the sizes were asked for, for nccl-tests' first line: -b/-e with -f (factor > 1) or -i.
  uint64_t minBytes = 0, maxBytes = 0, stepBytes = 0, stepFactor = 1;
};

const char* algoName(Algo a);

// Parses argv; on a usage error returns false with the message in `error` (an empty message
// with true from `help` means --help was asked for).
bool parseOptions(int argc, char** argv, Options* o, std::string* error, bool* help);
const char* usage();

// "512K,2M,1G" -> bytes. Units are binary (K = 1024), as nccl-tests reads them; KiB, MiB, GiB and
// a trailing B are accepted too. False on anything else, zero included.
bool parseSizeList(const std::string& text, std::vector<uint64_t>* sizes, std::string* error);

}  // namespace mcsim::bench
