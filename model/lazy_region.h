// Host memory standing in for simulated physical memory.
//
// The region is an anonymous MAP_NORESERVE mapping: the kernel allocates a page only when it is
// first written (reads of untouched pages see the shared zero page), so reserving and mapping
// many GiB of simulated memory costs address space, not memory. Destroying the region unmaps it,
// which gives every touched page back at once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace mcsim::model {

class LazyRegion {
 public:
  // nullptr when the host refuses the address space.
  static std::unique_ptr<LazyRegion> create(uint64_t bytes);
  ~LazyRegion();
  LazyRegion(const LazyRegion&) = delete;
  LazyRegion& operator=(const LazyRegion&) = delete;

  uint8_t* data() const { return data_; }
  uint64_t size() const { return size_; }
  // Bytes the host has actually backed (counted with mincore); for tests and reports.
  uint64_t residentBytes() const;

 private:
  LazyRegion(uint8_t* data, uint64_t size) : data_(data), size_(size) {}
  uint8_t* data_;
  uint64_t size_;
};

}  // namespace mcsim::model
