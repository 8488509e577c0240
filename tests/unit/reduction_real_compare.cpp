// Compares what a real GPU computed (the file reduction_real_check.cu writes) with reduceInto,
// bit for bit.
//
//   reduction_real_compare FILE        one line per (dtype, op), the first differences of each;
//                                      exit 0 when every element matches, 1 when one does not,
//                                      2 when the file cannot be read
//   reduction_real_compare --self-test writes a small file with known results, one of them
//                                      deliberately wrong, and checks that exactly that one is
//                                      reported (run by ctest, so the tool is known to work
//                                      before a GPU's file reaches it)
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "mcsim/kernels.h"
#include "model/reduction.h"
#include "tests/unit/reduction_real_format.h"

namespace {

using mcsim::realcheck::Record;

const char* dtypeName(uint32_t dtype) {
  static const char* const kNames[] = {"f32", "f16x2", "bf16x2", "f64", "u32", "s32", "u64"};
  return dtype <= MCSIM_DTYPE_U64 ? kNames[dtype] : "?";
}

const char* opName(uint32_t op) {
  return op == MCSIM_REDOP_ADD ? "add" : op == MCSIM_REDOP_MIN ? "min" : op == MCSIM_REDOP_MAX ? "max" : "?";
}

uint64_t element(const std::vector<uint8_t>& v, size_t i, size_t size) {
  uint64_t x = 0;
  std::memcpy(&x, &v[i * size], size);
  return x;
}

bool isNaN(uint32_t dtype, uint64_t v) {
  switch (dtype) {
    case MCSIM_DTYPE_F32: return (v & 0x7fffffffu) > 0x7f800000u;
    case MCSIM_DTYPE_F64: return (v & 0x7fffffffffffffffull) > 0x7ff0000000000000ull;
    case MCSIM_DTYPE_F16X2: return ((v & 0x7fffu) > 0x7c00u) || (((v >> 16) & 0x7fffu) > 0x7c00u);
    case MCSIM_DTYPE_BF16X2: return ((v & 0x7fffu) > 0x7f80u) || (((v >> 16) & 0x7fffu) > 0x7f80u);
    default: return false;
  }
}

// Returns the number of differing elements and prints the first few.
uint64_t compareRecord(const Record& r) {
  const size_t size = mcsim_dtype_bytes(r.dtype);
  std::vector<uint8_t> acc = r.a;
  if (!mcsim::model::reduceInto(r.dtype, r.op, acc.data(), r.b.data(), r.count)) {
    std::printf("%-6s %s: %" PRIu64 " elements: reduceInto does not define this reduction\n",
                dtypeName(r.dtype), opName(r.op), r.count);
    return r.count;
  }
  uint64_t bad = 0, nanOnly = 0;
  std::vector<std::string> examples;
  for (uint64_t i = 0; i < r.count; ++i) {
    const uint64_t gpu = element(r.d, i, size), sim = element(acc, i, size);
    if (gpu == sim) continue;
    ++bad;
    if (isNaN(r.dtype, gpu) && isNaN(r.dtype, sim)) ++nanOnly;
    if (examples.size() < 8) {
      char line[160];
      const int w = static_cast<int>(2 * size);
      std::snprintf(line, sizeof line, "    [%" PRIu64 "] a=%0*" PRIx64 " b=%0*" PRIx64 " gpu=%0*" PRIx64
                    " mcsim=%0*" PRIx64, i, w, element(r.a, i, size), w, element(r.b, i, size), w,
                    gpu, w, sim);
      examples.push_back(line);
    }
  }
  std::printf("%-6s %s: %" PRIu64 " elements, %" PRIu64 " differ", dtypeName(r.dtype), opName(r.op),
              r.count, bad);
  if (nanOnly > 0) std::printf(" (%" PRIu64 " of them NaN on both sides, in another pattern)", nanOnly);
  std::printf("\n");
  for (const auto& line : examples) std::printf("%s\n", line.c_str());
  return bad;
}

// Sets *bad to the number of differing elements; false if the file cannot be read.
bool compareFile(const char* path, uint64_t* bad) {
  std::string description, error;
  std::vector<Record> records;
  auto bytes = [](uint32_t dtype) { return static_cast<uint64_t>(mcsim_dtype_bytes(dtype)); };
  if (!mcsim::realcheck::readFile(path, bytes, &description, &records, &error)) {
    std::fprintf(stderr, "%s: %s\n", path, error.c_str());
    return false;
  }
  std::printf("%s: %s, %zu records\n", path, description.c_str(), records.size());
  *bad = 0;
  for (const Record& r : records) *bad += compareRecord(r);
  if (*bad == 0) {
    std::printf("every element matches\n");
  } else {
    std::printf("%" PRIu64 " elements differ\n", *bad);
  }
  return true;
}

Record record32(uint32_t dtype, uint32_t op, const std::vector<uint32_t>& a,
                const std::vector<uint32_t>& b, const std::vector<uint32_t>& d) {
  Record r;
  r.dtype = dtype;
  r.op = op;
  r.count = a.size();
  auto bytesOf = [](const std::vector<uint32_t>& v) {
    std::vector<uint8_t> out(v.size() * 4);
    std::memcpy(out.data(), v.data(), out.size());
    return out;
  };
  r.a = bytesOf(a);
  r.b = bytesOf(b);
  r.d = bytesOf(d);
  return r;
}

int selfTest() {
  const std::string path = "reduction_real_compare_self_test.bin";
  // Results worked out by hand, as the GPU would give them, and one wrong one (1 + 2 = 4).
  std::vector<Record> records = {
      record32(MCSIM_DTYPE_F32, MCSIM_REDOP_ADD, {0x3f800000u, 0x7f800000u, 0x80000000u},
               {0x40000000u, 0xff800000u, 0x80000000u}, {0x40400000u, 0x7fffffffu, 0x80000000u}),
      record32(MCSIM_DTYPE_BF16X2, MCSIM_REDOP_MIN, {0x80003f80u}, {0x00007fc0u}, {0x80003f80u}),
      record32(MCSIM_DTYPE_U32, MCSIM_REDOP_ADD, {1u, 0xffffffffu}, {2u, 1u}, {4u, 0u}),
  };
  if (!mcsim::realcheck::writeFile(path.c_str(), "self test", records)) {
    std::fprintf(stderr, "cannot write %s\n", path.c_str());
    return 1;
  }
  uint64_t bad = 0;
  const bool read = compareFile(path.c_str(), &bad);
  std::remove(path.c_str());
  if (!read || bad != 1) {
    std::fprintf(stderr, "self test: expected exactly the one wrong element to be reported\n");
    return 1;
  }
  std::printf("self test passed: the one wrong element was reported\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::strcmp(argv[1], "--self-test") == 0) return selfTest();
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s FILE | --self-test\n", argv[0]);
    return 2;
  }
  uint64_t bad = 0;
  if (!compareFile(argv[1], &bad)) return 2;
  return bad == 0 ? 0 : 1;
}
