// The file that tests/unit/reduction_real_check.cu writes on a real GPU and
// reduction_real_compare reads: for each (dtype, op), the operands and what the GPU computed.
// Little-endian throughout (every machine concerned is).
//
//   "MCSIMRED" (8 bytes), uint32 version (1), uint32 record count,
//   uint32 description length, description (that many bytes: GPU name, compute capability,
//   driver and runtime versions; not NUL-terminated),
//   records: uint32 dtype, uint32 op, uint64 count,
//            a[count], b[count], d[count]   (elements of mcsim_dtype_bytes(dtype) bytes),
//   where d[i] = a[i] op b[i] as computed by the GPU, a being the first operand of the PTX
//   instruction (the accumulator in reduceInto's terms).
//
// Plain C++ with stdio only, so that both nvcc and the project's compiler take it.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace mcsim::realcheck {

constexpr char kMagic[8] = {'M', 'C', 'S', 'I', 'M', 'R', 'E', 'D'};
constexpr uint32_t kVersion = 1;

struct Record {
  uint32_t dtype = 0;
  uint32_t op = 0;
  uint64_t count = 0;
  std::vector<uint8_t> a, b, d;  // count * element bytes each
};

inline bool writeAll(std::FILE* f, const void* p, size_t n) { return std::fwrite(p, 1, n, f) == n; }
inline bool readAll(std::FILE* f, void* p, size_t n) { return std::fread(p, 1, n, f) == n; }

inline bool writeFile(const char* path, const std::string& description,
                      const std::vector<Record>& records) {
  std::FILE* f = std::fopen(path, "wb");
  if (f == nullptr) return false;
  const uint32_t head[3] = {kVersion, static_cast<uint32_t>(records.size()),
                            static_cast<uint32_t>(description.size())};
  bool ok = writeAll(f, kMagic, sizeof kMagic) && writeAll(f, head, sizeof head) &&
            writeAll(f, description.data(), description.size());
  for (const Record& r : records) {
    ok = ok && writeAll(f, &r.dtype, 4) && writeAll(f, &r.op, 4) && writeAll(f, &r.count, 8) &&
         writeAll(f, r.a.data(), r.a.size()) && writeAll(f, r.b.data(), r.b.size()) &&
         writeAll(f, r.d.data(), r.d.size());
  }
  return std::fclose(f) == 0 && ok;
}

// elementBytes(dtype) gives the element size (0 for an unknown dtype, which fails the read).
template <typename ElementBytes>
inline bool readFile(const char* path, ElementBytes elementBytes, std::string* description,
                     std::vector<Record>* records, std::string* error) {
  std::FILE* f = std::fopen(path, "rb");
  if (f == nullptr) {
    *error = "cannot open the file";
    return false;
  }
  char magic[8];
  uint32_t head[3];
  bool ok = readAll(f, magic, sizeof magic) && std::memcmp(magic, kMagic, sizeof magic) == 0 &&
            readAll(f, head, sizeof head) && head[0] == kVersion && head[2] < (1u << 16);
  if (!ok) {
    *error = "not a version-1 reduction results file";
    std::fclose(f);
    return false;
  }
  description->assign(head[2], '\0');
  ok = head[2] == 0 || readAll(f, &(*description)[0], head[2]);
  for (uint32_t i = 0; ok && i < head[1]; ++i) {
    Record r;
    ok = readAll(f, &r.dtype, 4) && readAll(f, &r.op, 4) && readAll(f, &r.count, 8);
    const uint64_t size = ok ? elementBytes(r.dtype) : 0;
    ok = ok && size != 0 && r.count <= (uint64_t{1} << 30) / size;
    if (!ok) break;
    r.a.resize(r.count * size);
    r.b.resize(r.count * size);
    r.d.resize(r.count * size);
    ok = readAll(f, r.a.data(), r.a.size()) && readAll(f, r.b.data(), r.b.size()) &&
         readAll(f, r.d.data(), r.d.size());
    if (ok) records->push_back(std::move(r));
  }
  std::fclose(f);
  if (!ok) *error = "truncated or malformed record";
  return ok;
}

}  // namespace mcsim::realcheck
