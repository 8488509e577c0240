// The L2 model's bookkeeping (model/l2_cache.h): what a read finds resident, what a write leaves
// dirty, what an eviction writes back, with lines coarser than the accesses that reach them.
#include "model/l2_cache.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <list>
#include <map>
#include <random>

namespace mcsim::model {
namespace {

constexpr uint64_t kLine = 65536;

L2Cache cacheOf(uint64_t lines) {
  L2Spec spec;
  spec.bytes = lines * kLine;
  spec.lineBytes = kLine;
  return L2Cache(spec);
}

TEST(L2Cache, ARereadIsServedByTheL2) {
  L2Cache l2 = cacheOf(4);
  L2Cache::Outcome o = l2.access(1, 0, 2 * kLine, false);
  EXPECT_EQ(o.missBytes, 2 * kLine);
  EXPECT_EQ(o.hitBytes, 0u);
  o = l2.access(1, 0, 2 * kLine, false);
  EXPECT_EQ(o.hitBytes, 2 * kLine);
  EXPECT_EQ(o.missBytes, 0u);
}

// A stream that reaches a line in pieces (a kernel's slices, GPUs reading their slices of a
// buffer) misses for every piece: the parts of a line (1 KiB of a 64 KiB line) not read yet are
// not resident because other parts are.
TEST(L2Cache, PartsOfALineNotReadYetMiss) {
  L2Cache l2 = cacheOf(4);
  EXPECT_EQ(l2.access(1, 0, 1024, false).missBytes, 1024u);
  L2Cache::Outcome o = l2.access(1, 1024, 3072, false);
  EXPECT_EQ(o.missBytes, 3072u);
  EXPECT_EQ(o.hitBytes, 0u);
  // Straddling what the line holds: the held parts hit, the rest misses.
  o = l2.access(1, 3072, 2048, false);
  EXPECT_EQ(o.hitBytes, 1024u);
  EXPECT_EQ(o.missBytes, 1024u);
  // Pieces apart from each other, in any order, are each held.
  EXPECT_EQ(l2.access(1, 40960, 8192, false).missBytes, 8192u);
  EXPECT_EQ(l2.access(1, 16384, 8192, false).missBytes, 8192u);
  EXPECT_EQ(l2.access(1, 40960, 8192, false).hitBytes, 8192u);
  EXPECT_EQ(l2.access(1, 0, 5120, false).hitBytes, 5120u);
  // A part reached partly counts as held whole.
  EXPECT_EQ(l2.access(1, 60000, 10, false).missBytes, 10u);
  EXPECT_EQ(l2.access(1, 59392, 1024, false).hitBytes, 1024u);
}

// Writes land in the L2; an evicted line writes back its dirty parts only.
TEST(L2Cache, EvictionWritesBackTheDirtyParts) {
  L2Cache l2 = cacheOf(2);
  L2Cache::Outcome o = l2.access(1, 0, 4096, true);
  EXPECT_EQ(o.hitBytes, 4096u);
  EXPECT_EQ(o.writebackBytes, 0u);
  EXPECT_EQ(l2.access(1, 4096, 4096, false).missBytes, 4096u);  // clean parts beside the dirty ones
  EXPECT_EQ(l2.access(1, 0, 8192, false).hitBytes, 8192u);
  EXPECT_EQ(l2.access(1, 32768, 2048, true).hitBytes, 2048u);   // dirty parts apart from the others
  EXPECT_EQ(l2.access(2, 0, kLine, false).writebackBytes, 0u);  // a second line: no eviction yet
  // A third line evicts the least recently used, allocation 1's, whose 6 KiB of dirty parts go out.
  EXPECT_EQ(l2.access(3, 0, kLine, false).writebackBytes, 6144u);
  EXPECT_EQ(l2.access(1, 0, 4096, false).missBytes, 4096u);
}

TEST(L2Cache, ForgottenAllocationsWriteNothingBack) {
  L2Cache l2 = cacheOf(1);
  l2.access(1, 0, kLine, true);
  l2.drop(1);
  EXPECT_EQ(l2.access(2, 0, kLine, false).writebackBytes, 0u);
}

// The rule written out plainly (a list in recency order, each line's parts one by one) against
// the cache's compact arrays, over a long random mix of reads, writes and drops across many
// allocations, with lines of 4 KiB so evictions and index growth happen often: every outcome the
// same.
class PlainL2 {
 public:
  PlainL2(uint64_t lines, uint64_t lineBytes) : lines_(lines), lb_(lineBytes) {}
  L2Cache::Outcome access(uint64_t alloc, uint64_t offset, uint64_t bytes, bool write) {
    L2Cache::Outcome out;
    const uint64_t part = lb_ / 64;
    for (uint64_t b = offset; b < offset + bytes; ++b) {
      const uint64_t line = b / lb_;
      auto it = std::find_if(lru_.begin(), lru_.end(), [&](const Entry& e) { return e.alloc == alloc && e.line == line; });
      if (it == lru_.end()) {
        if (lru_.size() >= lines_) {
          out.writebackBytes += static_cast<uint64_t>(__builtin_popcountll(lru_.back().dirty)) * part;
          lru_.pop_back();
        }
        lru_.push_front(Entry{alloc, line, 0, 0});
      } else {
        lru_.splice(lru_.begin(), lru_, it);
      }
      Entry& e = lru_.front();
      const uint64_t bit = uint64_t{1} << ((b % lb_) / part);
      // A part this access reached before, at a lower byte, is already held: count it as the
      // access first found it (the cache decides per part, not per byte).
      const bool seenThisAccess = b > offset && (b - 1) / part == b / part && (b - 1) / lb_ == line;
      const bool heldBefore = seenThisAccess ? firstFound_ : (e.held & bit) != 0;
      if (!seenThisAccess) firstFound_ = heldBefore;
      if (write || heldBefore) ++out.hitBytes;
      else ++out.missBytes;
      e.held |= bit;
      if (write) e.dirty |= bit;
    }
    return out;
  }
  void drop(uint64_t alloc) {
    lru_.remove_if([&](const Entry& e) { return e.alloc == alloc; });
  }

 private:
  struct Entry {
    uint64_t alloc, line, held, dirty;
  };
  uint64_t lines_, lb_;
  std::list<Entry> lru_;
  bool firstFound_ = false;
};

TEST(L2Cache, AgreesWithThePlainRuleOverARandomMix) {
  constexpr uint64_t kSmallLine = 4096;
  constexpr uint64_t kLines = 37;
  L2Spec spec;
  spec.bytes = kLines * kSmallLine;
  spec.lineBytes = kSmallLine;
  L2Cache l2(spec);
  PlainL2 plain(kLines, kSmallLine);
  std::mt19937_64 rng(20261129);
  uint64_t hits = 0, writebacks = 0;
  for (int n = 0; n < 20000; ++n) {
    const uint64_t alloc = 1 + rng() % 9;
    if (rng() % 100 == 0) {
      l2.drop(alloc);
      plain.drop(alloc);
      continue;
    }
    const uint64_t offset = rng() % (12 * kSmallLine);
    const uint64_t bytes = 1 + rng() % (rng() % 4 == 0 ? 3 * kSmallLine : 300);
    const bool write = rng() % 3 == 0;
    const L2Cache::Outcome a = l2.access(alloc, offset, bytes, write);
    const L2Cache::Outcome b = plain.access(alloc, offset, bytes, write);
    ASSERT_EQ(a.hitBytes, b.hitBytes) << "access " << n;
    ASSERT_EQ(a.missBytes, b.missBytes) << "access " << n;
    ASSERT_EQ(a.writebackBytes, b.writebackBytes) << "access " << n;
    hits += a.hitBytes;
    writebacks += a.writebackBytes;
  }
  // The mix reaches every outcome often.
  EXPECT_GT(hits, 100000u);
  EXPECT_GT(writebacks, 100000u);
}

}  // namespace
}  // namespace mcsim::model
