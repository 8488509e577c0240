#include "model/lazy_region.h"

#include <sys/mman.h>

#include <cstdio>
#include <cstring>

namespace mcsim::model {

std::unique_ptr<LazyRegion> LazyRegion::create(uint64_t bytes) {
  if (bytes == 0) return nullptr;
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                 -1, 0);
  if (p == MAP_FAILED) return nullptr;
  return std::unique_ptr<LazyRegion>(new LazyRegion(static_cast<uint8_t*>(p), bytes));
}

LazyRegion::~LazyRegion() { munmap(data_, size_); }

uint64_t LazyRegion::residentBytes() const {
  // mincore would also count pages that reads mapped to the kernel's shared zero page; the
  // "Anonymous" figure of this mapping in /proc/self/smaps counts only pages really backed.
  FILE* f = std::fopen("/proc/self/smaps", "r");
  if (f == nullptr) return 0;
  const auto begin = reinterpret_cast<unsigned long long>(data_);
  char line[512];
  bool inRegion = false;
  uint64_t kib = 0;
  while (std::fgets(line, sizeof line, f) != nullptr) {
    unsigned long long lo = 0, hi = 0;
    char perms[8] = {0};
    // A mapping's header line: "lo-hi perms offset dev inode path".
    if (std::sscanf(line, "%llx-%llx %7s", &lo, &hi, perms) == 3 && (perms[0] == 'r' || perms[0] == '-')) {
      inRegion = (lo == begin);
      continue;
    }
    unsigned long long v = 0;
    if (inRegion && std::sscanf(line, "Anonymous: %llu kB", &v) == 1) {
      kib = v;
      break;
    }
  }
  std::fclose(f);
  return kib * 1024;
}

}  // namespace mcsim::model
