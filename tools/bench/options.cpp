#include "options.h"

#include <algorithm>
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
  const char* ncclName;  // nccl-tests' name (its -d), for the table
};
// f16 and bf16 are the kernels' packed pairs: one element is a 32-bit word of two halves. The
// names after the kernels' are nccl-tests' (its test_typenames) for the same types.
constexpr DtypeName kDtypes[] = {
    {"f32", MCSIM_DTYPE_F32, "float"},       {"f16", MCSIM_DTYPE_F16X2, "half"},
    {"bf16", MCSIM_DTYPE_BF16X2, "bfloat16"}, {"f16x2", MCSIM_DTYPE_F16X2, "half"},
    {"bf16x2", MCSIM_DTYPE_BF16X2, "bfloat16"}, {"f64", MCSIM_DTYPE_F64, "double"},
    {"u32", MCSIM_DTYPE_U32, "uint32"},      {"s32", MCSIM_DTYPE_S32, "int32"},
    {"u64", MCSIM_DTYPE_U64, "uint64"},      {"float", MCSIM_DTYPE_F32, "float"},
    {"half", MCSIM_DTYPE_F16X2, "half"},     {"bfloat16", MCSIM_DTYPE_BF16X2, "bfloat16"},
    {"double", MCSIM_DTYPE_F64, "double"},   {"uint32", MCSIM_DTYPE_U32, "uint32"},
    {"int32", MCSIM_DTYPE_S32, "int32"},     {"uint64", MCSIM_DTYPE_U64, "uint64"},
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

// nccl-tests' sizes: from `low` to `high`, each stepFactor times the last when it is above 1, else
// stepBytes more (nccl-tests' default step: 1 MiB).
bool sizeRange(uint64_t low, uint64_t high, Options* o, std::string* error) {
  if (low > high) {
    *error = "-b " + std::to_string(low) + " is more than -e " + std::to_string(high);
    return false;
  }
  if (o->stepBytes == 0) o->stepBytes = uint64_t{1} << 20;
  o->sizes.clear();
  for (uint64_t size = low; size <= high;) {
    if (o->sizes.size() == 4096) {
      *error = "-b, -e, -f and -i make more than 4096 sizes";
      return false;
    }
    o->sizes.push_back(size);
    const uint64_t next = o->stepFactor > 1 ? size * o->stepFactor : size + o->stepBytes;
    if (next <= size) break;  // past 2^64
    size = next;
  }
  o->minBytes = low;
  o->maxBytes = high;
  return true;
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
         "                             [-b MIN -e MAX [-f FACTOR | -i STEP]] [--dtype T] [-o sum]\n"
         "                             [--iters K] [-w W] [--check | -c 0|1] [--loader module|library]\n"
         "                             [--format nccl-tests|plain]\n"
         "  --gpus N, -g N      GPUs taking part (default: every device)\n"
         "  --algo A            nvls (default), oneshot, twoshot (multicast) or ring (peer copies)\n"
         "  --sizes LIST        bytes per GPU, comma separated, binary units: 64K,1M,1G (default 1M)\n"
         "  -b, --minbytes MIN  as nccl-tests: sizes from MIN to MAX (-e, --maxbytes; default MIN),\n"
         "                      each -f (--stepfactor) times the last, or -i (--stepbytes) more\n"
         "  --dtype T, -d T     f32 (default), f16, bf16 (packed pairs), f64, u32, s32, u64, or\n"
         "                      nccl-tests' names: float, half, bfloat16, double, uint32, int32, uint64\n"
         "  -o, --op sum        the reduction (the benchmark's kernels reduce with sum)\n"
         "  --iters K, -n K     timed iterations (default 5)\n"
         "  -w, --warmup_iters W  untimed iterations before them (default 1)\n"
         "  --check, -c 1       verify every size against a host-computed reference (#wrong)\n"
         "  --loader L          load the kernels with cuModuleLoadData per context (module, default)\n"
         "                      or cuLibraryLoadData once (library)\n"
         "  --format F          nccl-tests (default): nccl-tests' table, out-of-place and in-place\n"
         "                      columns and the average bus bandwidth; plain: `bytes time_us\n"
         "                      algbw_GBps busbw_GBps` and one row per size\n";
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
  bool sizeList = false;
  uint64_t rangeMin = 0, rangeMax = 0;  // -b and -e, 0 when not given
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
    if (name == "--gpus" || name == "-g" || name == "--ngpus") {
      if (!parseCount(value.c_str(), 1, &o->gpus)) {
        *error = "--gpus: '" + value + "' is not a number of GPUs (1 or more)";
        return false;
      }
    } else if (name == "--iters" || name == "-n") {
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
      sizeList = true;
    } else if (name == "--dtype" || name == "-d" || name == "--datatype") {
      bool found = false;
      for (const DtypeName& d : kDtypes) {
        if (value == d.name) {
          o->dtype = d.dtype;
          o->dtypeName = d.name;
          o->ncclTypeName = d.ncclName;
          found = true;
        }
      }
      if (!found) {
        *error = name + ": unknown type '" + value +
                 "' (f32, f16, bf16, f64, u32, s32, u64; or float, half, bfloat16, double, uint32, int32, uint64)";
        return false;
      }
    } else if (name == "-w" || name == "--warmup_iters") {
      if (!parseCount(value.c_str(), 0, &o->warmups)) {
        *error = name + ": '" + value + "' is not a number of warm-up iterations (0 or more)";
        return false;
      }
    } else if (name == "-c") {
      int check = 0;
      if (!parseCount(value.c_str(), 0, &check) || check > 1) {
        *error = "-c: '" + value + "' is neither 0 nor 1 (verify the results or not)";
        return false;
      }
      o->check = check == 1;
    } else if (name == "-o" || name == "--op") {
      if (value != "sum") {
        *error = name + ": '" + value + "': the benchmark's all-reduce kernels reduce with sum only";
        return false;
      }
    } else if (name == "-b" || name == "--minbytes" || name == "-e" || name == "--maxbytes" || name == "-i" ||
               name == "--stepbytes") {
      uint64_t bytes = 0;
      if (!parseSize(value, &bytes)) {
        *error = name + ": '" + value + "' is not a size such as 8, 512K or 1G";
        return false;
      }
      (name == "-b" || name == "--minbytes" ? rangeMin : name == "-e" || name == "--maxbytes" ? rangeMax : o->stepBytes) =
          bytes;
    } else if (name == "-f" || name == "--stepfactor") {
      int factor = 0;
      if (!parseCount(value.c_str(), 1, &factor)) {
        *error = name + ": '" + value + "' is not a step factor (1 or more)";
        return false;
      }
      o->stepFactor = static_cast<uint64_t>(factor);
    } else if (name == "--format") {
      if (value == "nccl-tests") {
        o->format = Format::kNcclTests;
      } else if (value == "plain") {
        o->format = Format::kPlain;
      } else {
        *error = "--format: '" + value + "' is neither nccl-tests nor plain";
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
  if (rangeMin != 0 || rangeMax != 0) {
    if (sizeList) {
      *error = "--sizes and -b/-e both name the sizes: use one";
      return false;
    }
    if (!sizeRange(rangeMin != 0 ? rangeMin : rangeMax, rangeMax != 0 ? rangeMax : rangeMin, o, error)) return false;
  } else if (o->stepBytes != 0 || o->stepFactor != 1) {
    *error = "-f and -i step from -b to -e: give -b (and -e)";
    return false;
  } else {
    o->minBytes = *std::min_element(o->sizes.begin(), o->sizes.end());
    o->maxBytes = *std::max_element(o->sizes.begin(), o->sizes.end());
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
