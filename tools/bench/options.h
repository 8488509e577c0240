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

struct Options {
  int gpus = 0;  // 0: every device
  Algo algo = Algo::kNvls;
  std::vector<uint64_t> sizes{uint64_t{1} << 20};  // bytes per GPU
  uint32_t dtype = 0;                              // MCSIM_DTYPE_F32
  std::string dtypeName = "f32";
  int iters = 5;    // timed iterations, after one warm-up
  bool check = false;
  Loader loader = Loader::kModule;
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
