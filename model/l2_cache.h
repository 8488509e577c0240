// A GPU's L2 cache, as far as bulk transfers notice it: which lines are resident, least recently
// used first out, write-back. A read of resident data is served by the L2 instead of HBM; a write
// lands in the L2 and reaches HBM only when its line is evicted. Repeating a copy whose source and
// destination together fit in the L2 therefore runs at L2 speed, as measured on real H200s
// (docs/model.md), while a larger one streams through HBM.
//
// Lines are `lineBytes` of one physical allocation; the model's lines are much coarser than the
// hardware's 128-byte lines, which keeps the bookkeeping small. So that this coarseness does not
// turn into hits, a line remembers which of its 64 parts it holds and which of them are dirty: a
// read of parts the line does not hold misses even when other parts are resident, and only dirty
// parts are written back. (A part an access reaches only partly counts as held, or dirty, whole.)
// (A stream that reaches a line in pieces, as kernels' slices and unaligned chunks do, would
// otherwise find most of each line "resident" after its first piece: a vector add read 39% of
// its input from the L2 before 2026-11-29.)
#pragma once

#include <cstdint>
#include <list>
#include <unordered_map>

namespace mcsim::model {

struct L2Spec {
  uint64_t bytes = 0;
  double bytesPerSecond = 0;  // sustained, reads and writes together
  uint64_t lineBytes = 65536;
  uint64_t latencyPs = 0;
};

class L2Cache {
 public:
  struct Outcome {
    uint64_t hitBytes = 0;        // served by the L2
    uint64_t missBytes = 0;       // reads that must come from HBM
    uint64_t writebackBytes = 0;  // dirty lines evicted to make room: HBM writes
  };
  L2Cache() = default;
  explicit L2Cache(const L2Spec& spec) : spec_(spec), capacityLines_(spec.lineBytes ? spec.bytes / spec.lineBytes : 0) {}

  // Touches [offset, offset+bytes) of allocation `alloc`. Writes allocate lines without reading
  // them (bulk writes cover whole lines) and mark them dirty.
  Outcome access(uint64_t alloc, uint64_t offset, uint64_t bytes, bool write);
  // Forgets an allocation's lines (it was freed; its dirty data no longer matters).
  void drop(uint64_t alloc);
  const L2Spec& spec() const { return spec_; }

 private:
  // Bit i: part i of the line (lineBytes / 64 bytes from i * lineBytes / 64).
  struct Line {
    uint64_t key;
    uint64_t held;
    uint64_t dirty;  // within held
  };
  // Lines of one allocation stay below 2^32 (256 TiB at 64 KiB lines).
  static uint64_t key(uint64_t alloc, uint64_t line) { return (alloc << 32) | line; }
  L2Spec spec_;
  uint64_t capacityLines_ = 0;
  std::list<Line> lru_;  // front: most recently used
  // Lookup only; nothing iterates it, so its order never shows.
  std::unordered_map<uint64_t, std::list<Line>::iterator> index_;
};

}  // namespace mcsim::model
