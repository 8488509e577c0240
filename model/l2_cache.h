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

#include <cstddef>
#include <cstdint>
#include <map>
#include <vector>

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
  // Moved, never copied: last_ points into index_, whose nodes a move hands over.
  L2Cache(const L2Cache&) = delete;
  L2Cache& operator=(const L2Cache&) = delete;
  L2Cache(L2Cache&&) = default;
  L2Cache& operator=(L2Cache&&) = default;
  explicit L2Cache(const L2Spec& spec) : spec_(spec), capacityLines_(spec.lineBytes ? spec.bytes / spec.lineBytes : 0) {}

  // Touches [offset, offset+bytes) of allocation `alloc`. Writes allocate lines without reading
  // them (bulk writes cover whole lines) and mark them dirty.
  Outcome access(uint64_t alloc, uint64_t offset, uint64_t bytes, bool write);
  // Forgets an allocation's lines (it was freed; its dirty data no longer matters).
  void drop(uint64_t alloc);
  const L2Spec& spec() const { return spec_; }

 private:
  static constexpr uint32_t kNone = ~uint32_t{0};
  // Bit i: part i of the line (lineBytes / 64 bytes from i * lineBytes / 64). The recency order
  // is a list threaded through the lines by index. A rack's 72 caches of about 2,000 lines each
  // are touched once per chunk of every member: kept as nodes in a hash table and a list, their
  // lookups missed the host's caches and cost more per access the more GPUs a node had; in arrays
  // (no node allocated or freed per miss) an NVL72 all-reduce's cache bookkeeping costs the same
  // per access at 8 and at 72 GPUs (docs/benchmarks.md).
  struct Line {
    uint64_t alloc;
    uint64_t line;
    uint64_t held;
    uint64_t dirty;  // within held
    uint32_t newer;  // towards the most recently used; kNone at the front
    uint32_t older;
  };
  // The slot of allocation `alloc`'s line `line` in the index (kNone: not resident), made when
  // missing.
  uint32_t& indexOf(uint64_t alloc, uint64_t line);
  void unlink(uint32_t i);
  void pushFront(uint32_t i);
  L2Spec spec_;
  uint64_t capacityLines_ = 0;
  std::vector<Line> lines_;    // grows up to capacityLines_; a line's index never changes
  std::vector<uint32_t> free_;  // indices of dropped lines, reused first
  uint32_t front_ = kNone;     // most recently used
  uint32_t back_ = kNone;      // least recently used: the next victim
  size_t inUse_ = 0;
  // Per allocation, its lines' places in lines_ by line number (kNone: not resident). Streams
  // walk an allocation line after line, so lookups walk this array in order. The map is only
  // looked up (the last allocation is remembered) and iterated by nothing whose order shows.
  std::map<uint64_t, std::vector<uint32_t>> index_;
  uint64_t lastAlloc_ = 0;
  std::vector<uint32_t>* last_ = nullptr;
};

}  // namespace mcsim::model
