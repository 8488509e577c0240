// How the executor reaches global memory: an abstract interface, resolved at access time.
//
// The executor owns the memory that belongs to a block or thread (shared, local, param) and to
// the module (its .global and .const variables); everything else a kernel addresses is global
// memory, reached through GlobalMemory. An implementation resolves a virtual address when the
// access happens (not when the launch is submitted) into a window of host bytes: the node
// implements it over its AddressSpace (mapping -> allocation) and the allocation's LazyRegion,
// checking the device's access rights; FlatMemory below is a self-contained one over a few host
// buffers, for programs and tests that run kernels without a node.
//
// The executor resolves at most once per address window per warp instruction and never keeps a
// window past the instruction, so a mapping that changes between two instructions is seen.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace mcsim::ptx {

enum class AccessKind : uint8_t { kRead, kWrite, kAtomic };

// Contiguous host bytes standing for [va, va + size) of the simulated address space.
struct MemoryWindow {
  uint64_t va = 0;
  uint64_t size = 0;
  uint8_t* host = nullptr;
};

enum class MemoryError : uint8_t {
  kNone,
  kUnmapped,   // no mapping at the address (CUDA_ERROR_ILLEGAL_ADDRESS)
  kNoAccess,   // mapped, but the device may not access it this way (also ILLEGAL_ADDRESS)
};

class GlobalMemory {
 public:
  virtual ~GlobalMemory() = default;
  // The window holding `va`, valid for an access of `kind` by `device`, resolved now. A window
  // may be smaller than the mapping (an implementation may cut it at any boundary); the
  // executor asks again for bytes past its end.
  virtual MemoryError resolve(uint64_t va, AccessKind kind, int device, MemoryWindow* out) = 0;
  // After accesses through a window `resolve` gave: `bytes` were moved through it (summed over
  // lanes, for one warp instruction or fewer), for a memory that times or counts traffic.
  virtual void accessed(const MemoryWindow& window, AccessKind kind, uint64_t bytes) {
    (void)window;
    (void)kind;
    (void)bytes;
  }
};

// Global memory made of host buffers placed at chosen virtual addresses; every device may read
// and write all of it.
class FlatMemory : public GlobalMemory {
 public:
  // Places `size` zeroed bytes at the lowest free address >= `base` aligned to 256; returns it.
  uint64_t allocate(uint64_t size);
  uint8_t* host(uint64_t va);  // nullptr when unmapped
  MemoryError resolve(uint64_t va, AccessKind kind, int device, MemoryWindow* out) override;

 private:
  static constexpr uint64_t kBase = 0x7f0000000000ull;
  std::map<uint64_t, std::vector<uint8_t>> buffers_;  // keyed by va
  uint64_t next_ = kBase;
};

}  // namespace mcsim::ptx
