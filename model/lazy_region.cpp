#include "model/lazy_region.h"

#include <sys/mman.h>
#include <unistd.h>

#include <vector>

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
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  const uint64_t pages = (size_ + page - 1) / page;
  std::vector<unsigned char> vec(pages);
  if (mincore(data_, size_, vec.data()) != 0) return 0;
  uint64_t n = 0;
  for (unsigned char v : vec) n += (v & 1u);
  return n * page;
}

}  // namespace mcsim::model
