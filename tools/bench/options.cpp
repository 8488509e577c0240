#include "options.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "mcsim/kernels.h"
#include "settings/byte_size.h"

namespace mcsim::bench {

namespace {

struct DtypeName {
  const char* name;
  uint32_t dtype;
};
// f16 and bf16 are the kernels' packed pairs: one element is a 32-bit word of two halves.
constexpr DtypeName kDtypes[] = {
    {"f32", MCSIM_DTYPE_F32},       {"f16", MCSIM_DTYPE_F16X2},   {"bf16", MCSIM_DTYPE_BF16X2},
    {"f16x2", MCSIM_DTYPE_F16X2},   {"bf16x2", MCSIM_DTYPE_BF16X2}, {"f64", MCSIM_DTYPE_F64},
    {"u32", MCSIM_DTYPE_U32},       {"s32", MCSIM_DTYPE_S32},     {"u64", MCSIM_DTYPE_U64},
};

bool parseCount(const char* text, int low, int* out) {
  char* end = nullptr;
  errno = 0;
  const long v = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || errno == ERANGE || v < low || v > 1000000) return false;
  *out = static_cast<int>(v);
  return true;
}

// One size, in the grammar fault plans use too (settings/byte_size.h); a size of 0 moves nothing.
bool parseSize(const std::string& item, uint64_t* bytes) {
  return settings::parseByteSize(item, bytes) && *bytes > 0;
}

}  // namespace

const char* algoName(Algo a) {
  switch (a) {
    case Algo::kNvls: return "nvls";
    case Algo::kOneshot: return "oneshot";
    case Algo::kTwoshot: return "twoshot";
    case Algo::kRing: return "ring";
  }
  return "?";
}

const char* usage() {
  return "usage: mcsim_bench_allreduce [--gpus N] [--algo nvls|oneshot|twoshot|ring] [--sizes LIST]\n"
         "                             [--dtype f32|f16|bf16|f64|u32|s32|u64] [--iters K] [--check]\n"
         "                             [--loader module|library]\n"
         "  --gpus N      GPUs taking part (default: every device)\n"
         "  --algo A      nvls (default), oneshot, twoshot (multicast) or ring (peer copies)\n"
         "  --sizes LIST  bytes per GPU, comma separated, binary units: 64K,1M,1G (default 1M)\n"
         "  --dtype T     element type (default f32; f16 and bf16 are packed pairs)\n"
         "  --iters K     timed iterations after one warm-up (default 5)\n"
         "  --check       verify every size against a host-computed reference\n"
         "  --loader L    load the kernels with cuModuleLoadData per context (module, default) or\n"
         "                cuLibraryLoadData once (library)\n"
         "Prints `bytes time_us algbw_GBps busbw_GBps`, then one row per size.\n";
}

bool parseSizeList(const std::string& text, std::vector<uint64_t>* sizes, std::string* error) {
  sizes->clear();
  size_t from = 0;
  while (true) {
    const size_t comma = text.find(',', from);
    const std::string item = text.substr(from, comma == std::string::npos ? std::string::npos : comma - from);
    uint64_t bytes = 0;
    if (!parseSize(item, &bytes)) {
      *error = "--sizes: '" + item + "' is not a size such as 4096, 512K, 1.5M or 1GiB";
      return false;
    }
    sizes->push_back(bytes);
    if (comma == std::string::npos) return true;
    from = comma + 1;
  }
}

bool parseOptions(int argc, char** argv, Options* o, std::string* error, bool* help) {
  *help = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      *help = true;
      return true;
    }
    if (arg == "--check") {
      o->check = true;
      continue;
    }
    // Every other option takes a value: --name VALUE or --name=VALUE.
    std::string name = arg, value;
    if (const size_t eq = arg.find('='); arg.compare(0, 2, "--") == 0 && eq != std::string::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      *error = arg.compare(0, 2, "--") == 0 ? arg + " needs a value" : "unexpected argument '" + arg + "'";
      return false;
    }
    if (name == "--gpus") {
      if (!parseCount(value.c_str(), 1, &o->gpus)) {
        *error = "--gpus: '" + value + "' is not a number of GPUs (1 or more)";
        return false;
      }
    } else if (name == "--iters") {
      if (!parseCount(value.c_str(), 1, &o->iters)) {
        *error = "--iters: '" + value + "' is not a number of iterations (1 or more)";
        return false;
      }
    } else if (name == "--algo") {
      if (value == "nvls") {
        o->algo = Algo::kNvls;
      } else if (value == "oneshot") {
        o->algo = Algo::kOneshot;
      } else if (value == "twoshot") {
        o->algo = Algo::kTwoshot;
      } else if (value == "ring") {
        o->algo = Algo::kRing;
      } else {
        *error = "--algo: unknown algorithm '" + value + "' (nvls, oneshot, twoshot or ring)";
        return false;
      }
    } else if (name == "--sizes") {
      if (!parseSizeList(value, &o->sizes, error)) return false;
    } else if (name == "--dtype") {
      bool found = false;
      for (const DtypeName& d : kDtypes) {
        if (value == d.name) {
          o->dtype = d.dtype;
          o->dtypeName = d.name;
          found = true;
        }
      }
      if (!found) {
        *error = "--dtype: unknown type '" + value + "' (f32, f16, bf16, f64, u32, s32 or u64)";
        return false;
      }
    } else if (name == "--loader") {
      if (value == "module") {
        o->loader = Loader::kModule;
      } else if (value == "library") {
        o->loader = Loader::kLibrary;
      } else {
        *error = "--loader: '" + value + "' is neither module nor library";
        return false;
      }
    } else {
      *error = "unknown option '" + name + "'";
      return false;
    }
  }
  const uint64_t elem = mcsim_dtype_bytes(o->dtype);
  for (uint64_t bytes : o->sizes) {
    if (bytes % elem != 0) {
      *error = "--sizes: " + std::to_string(bytes) + " bytes is not a whole number of " + o->dtypeName +
               " elements (" + std::to_string(elem) + " bytes each)";
      return false;
    }
  }
  return true;
}

}  // namespace mcsim::bench
