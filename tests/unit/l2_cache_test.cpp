// The L2 model's bookkeeping (model/l2_cache.h): what a read finds resident, what a write leaves
// dirty, what an eviction writes back, with lines coarser than the accesses that reach them.
#include "model/l2_cache.h"

#include <gtest/gtest.h>

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

}  // namespace
}  // namespace mcsim::model
