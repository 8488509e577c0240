// AddressSpace: the bookkeeping behind cuMemAddressReserve/Free, cuMemMap/Unmap, cuMemSetAccess
// and every device-address resolution. A refused call must change nothing (the design's "a call
// that fails changes nothing"), so refusals are checked against a digest of the whole space.
#include "model/address_space.h"

#include <gtest/gtest.h>

#include <vector>

#include "tests/unit/status_printer.h"

namespace mcsim::model {
namespace {

constexpr uint64_t kBase = 0x100000;   // 1 MiB
constexpr uint64_t kSize = 0x1000000;  // 16 MiB
constexpr uint64_t kPage = 0x1000;
constexpr int kDevices = 2;

uint64_t digestOf(const AddressSpace& s) {
  Digest d;
  s.addToDigest(d);
  return d.value();
}

class AddressSpaceTest : public ::testing::Test {
 protected:
  // Reserves `size` bytes at `hint` and fails the test unless it lands exactly there.
  uint64_t reserveAt(uint64_t hint, uint64_t size) {
    uint64_t va = 0;
    EXPECT_EQ(space_.reserve(size, kPage, hint, false, &va), Status::kOk);
    EXPECT_EQ(va, hint);
    return va;
  }
  uint64_t reserve(uint64_t size, uint64_t alignment = kPage, uint64_t hint = 0) {
    uint64_t va = 0;
    EXPECT_EQ(space_.reserve(size, alignment, hint, false, &va), Status::kOk);
    return va;
  }

  AddressSpace space_{kBase, kSize, kDevices};
};

// ---- reserve ---------------------------------------------------------------------------------

TEST_F(AddressSpaceTest, ReserveHonoursFreeHint) {
  const uint64_t hint = kBase + 0x80000;
  EXPECT_EQ(reserve(0x4000, kPage, hint), hint);
  ASSERT_NE(space_.reservationContaining(hint), nullptr);
  EXPECT_EQ(space_.reservationContaining(hint)->size, 0x4000u);
  EXPECT_FALSE(space_.reservationContaining(hint)->internal);
}

TEST_F(AddressSpaceTest, ReserveIgnoresOccupiedHintAndTakesLowestFit) {
  reserveAt(kBase, 0x4000);
  // The hint overlaps the first reservation: it is only a hint, so the lowest fit is used.
  EXPECT_EQ(reserve(0x2000, kPage, kBase + 0x1000), kBase + 0x4000);
  // A hint whose range runs into a reservation is just as occupied.
  reserveAt(kBase + 0x10000, 0x1000);
  EXPECT_EQ(reserve(0x2000, kPage, kBase + 0xf000), kBase + 0x6000);
}

TEST_F(AddressSpaceTest, ReserveIgnoresMisalignedHint) {
  EXPECT_EQ(reserve(0x1000, 0x10000, kBase + 0x1000), kBase);
}

TEST_F(AddressSpaceTest, ReserveIgnoresHintOutsideTheSpace) {
  EXPECT_EQ(reserve(0x1000, kPage, kBase + kSize), kBase);
  // Aligned and inside, but the range would run past the end of the space.
  EXPECT_EQ(reserve(0x2000, kPage, kBase + kSize - 0x1000), kBase + 0x1000);
}

TEST_F(AddressSpaceTest, ReserveAligns) {
  // kBase is 1 MiB aligned but not 2 MiB aligned: the first fit must move up.
  const uint64_t a = reserve(0x1000, 0x200000);
  EXPECT_EQ(a % 0x200000, 0u);
  EXPECT_EQ(a, 0x200000u);
  // The hole below `a` is used by a request that fits it.
  const uint64_t b = reserve(0x1000, 0x10000);
  EXPECT_EQ(b, kBase);
  // After a reservation that ends unaligned, the next fit starts at the next boundary.
  const uint64_t c = reserve(0x1000, 0x100000);
  EXPECT_EQ(c % 0x100000, 0u);
  EXPECT_EQ(c, 0x300000u);
}

TEST_F(AddressSpaceTest, FirstFitFillsHolesDeterministically) {
  const uint64_t a = reserve(0x1000);
  const uint64_t b = reserve(0x1000);
  const uint64_t c = reserve(0x1000);
  EXPECT_EQ(a, kBase);
  EXPECT_EQ(b, kBase + 0x1000);
  EXPECT_EQ(c, kBase + 0x2000);
  ASSERT_EQ(space_.free(b, 0x1000), Status::kOk);
  // Too big for the hole: goes after c. Then a small one fills the hole.
  EXPECT_EQ(reserve(0x2000), kBase + 0x3000);
  EXPECT_EQ(reserve(0x800, 0x800), kBase + 0x1000);
  EXPECT_EQ(reserve(0x800, 0x800), kBase + 0x1800);
  EXPECT_EQ(reserve(0x1000), kBase + 0x5000);
}

TEST_F(AddressSpaceTest, SameSequenceGivesSameAddresses) {
  AddressSpace other(kBase, kSize, kDevices);
  std::vector<uint64_t> mine, theirs;
  for (AddressSpace* s : {&space_, &other}) {
    auto& out = s == &space_ ? mine : theirs;
    uint64_t va = 0;
    for (uint64_t size : {0x3000u, 0x1000u, 0x5000u}) {
      ASSERT_EQ(s->reserve(size, kPage, 0, false, &va), Status::kOk);
      out.push_back(va);
    }
    ASSERT_EQ(s->free(out[1], 0x1000), Status::kOk);
    ASSERT_EQ(s->reserve(0x1000, kPage, 0, true, &va), Status::kOk);
    out.push_back(va);
  }
  EXPECT_EQ(mine, theirs);
  EXPECT_EQ(digestOf(space_), digestOf(other));
}

TEST_F(AddressSpaceTest, ReserveRefusesBadArgumentsAndExhaustion) {
  uint64_t va = 0;
  EXPECT_EQ(space_.reserve(0, kPage, 0, false, &va), Status::kInvalidValue);
  EXPECT_EQ(space_.reserve(0x1000, 0x3000, 0, false, &va), Status::kInvalidValue);
  EXPECT_EQ(space_.reserve(0x1000, 0, 0, false, &va), Status::kInvalidValue);
  EXPECT_EQ(space_.reserve(kSize + kPage, kPage, 0, false, &va), Status::kOutOfMemory);
  EXPECT_EQ(space_.reservationCount(), 0u);
  EXPECT_EQ(reserve(kSize), kBase);
  EXPECT_EQ(space_.reserve(kPage, kPage, 0, false, &va), Status::kOutOfMemory);
}

// ---- free ------------------------------------------------------------------------------------

TEST_F(AddressSpaceTest, FreeRequiresTheExactReservation) {
  const uint64_t a = reserve(0x4000);
  const uint64_t before = digestOf(space_);
  EXPECT_EQ(space_.free(a, 0x2000), Status::kInvalidValue);
  EXPECT_EQ(space_.free(a, 0x8000), Status::kInvalidValue);
  EXPECT_EQ(space_.free(a + 0x1000, 0x3000), Status::kInvalidValue);
  EXPECT_EQ(space_.free(a + 0x4000, 0x1000), Status::kInvalidValue);
  EXPECT_EQ(digestOf(space_), before);
  EXPECT_EQ(space_.free(a, 0x4000), Status::kOk);
  EXPECT_EQ(space_.reservationCount(), 0u);
  EXPECT_EQ(space_.free(a, 0x4000), Status::kInvalidValue);  // already freed
}

TEST_F(AddressSpaceTest, FreeRefusesWhileMappingsRemain) {
  const uint64_t a = reserve(0x4000);
  ASSERT_EQ(space_.map(a + 0x3000, 0x1000, 7, 0), Status::kOk);  // the last page only
  const uint64_t before = digestOf(space_);
  EXPECT_EQ(space_.free(a, 0x4000), Status::kInvalidValue);
  EXPECT_EQ(digestOf(space_), before);
  ASSERT_EQ(space_.unmap(a + 0x3000, 0x1000, nullptr), Status::kOk);
  EXPECT_EQ(space_.free(a, 0x4000), Status::kOk);
}

TEST_F(AddressSpaceTest, FreeIgnoresMappingsOfTheNextReservation) {
  const uint64_t a = reserveAt(kBase, 0x2000);
  const uint64_t b = reserveAt(kBase + 0x2000, 0x2000);
  ASSERT_EQ(space_.map(b, 0x1000, 7, 0), Status::kOk);
  EXPECT_EQ(space_.free(a, 0x2000), Status::kOk);
  EXPECT_EQ(space_.mappingCount(), 1u);
}

// ---- map -------------------------------------------------------------------------------------

TEST_F(AddressSpaceTest, MapInsideOneReservation) {
  const uint64_t a = reserve(0x4000);
  EXPECT_EQ(space_.map(a + 0x1000, 0x2000, 42, 0x5000), Status::kOk);
  const Mapping* m = space_.mappingContaining(a + 0x2fff);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->va, a + 0x1000);
  EXPECT_EQ(m->size, 0x2000u);
  EXPECT_EQ(m->alloc, 42u);
  EXPECT_EQ(m->allocOffset, 0x5000u);
  // A new mapping grants no device anything until setAccess.
  ASSERT_EQ(m->access.size(), static_cast<size_t>(kDevices));
  EXPECT_EQ(m->access[0], Access::kNone);
  EXPECT_EQ(space_.mappingContaining(a + 0x3000), nullptr);
  EXPECT_EQ(space_.mappingContaining(a + 0xfff), nullptr);
}

// The driver's own memory (cuMemAlloc, pools, opened IPC memory) is mapped readable and writable
// by the devices named, in the same step; a device out of range refuses the whole mapping.
TEST_F(AddressSpaceTest, MapGrantsTheNamedDevicesReadWrite) {
  const uint64_t a = reserve(0x4000);
  EXPECT_EQ(space_.map(a, 0x2000, 7, 0, {1}), Status::kOk);
  const Mapping* m = space_.mappingContaining(a);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->access[0], Access::kNone);
  EXPECT_EQ(m->access[1], Access::kReadWrite);
  std::vector<Segment> out;
  EXPECT_EQ(space_.resolve(a, 0x2000, 1, Access::kReadWrite, &out), Status::kOk);
  EXPECT_EQ(space_.resolve(a, 0x2000, 0, Access::kRead, &out), Status::kIllegalAddress);
  const uint64_t before = digestOf(space_);
  EXPECT_EQ(space_.map(a + 0x2000, 0x1000, 8, 0, {0, kDevices}), Status::kInvalidValue);
  EXPECT_EQ(space_.map(a + 0x2000, 0x1000, 8, 0, {-1}), Status::kInvalidValue);
  EXPECT_EQ(digestOf(space_), before);
  EXPECT_EQ(space_.mappingContaining(a + 0x2000), nullptr);
}

TEST_F(AddressSpaceTest, MapRefusesOverlapWithAlreadyMapped) {
  const uint64_t a = reserve(0x8000);
  ASSERT_EQ(space_.map(a + 0x2000, 0x2000, 1, 0), Status::kOk);
  const uint64_t before = digestOf(space_);
  EXPECT_EQ(space_.map(a + 0x2000, 0x2000, 2, 0), Status::kAlreadyMapped);  // same range
  EXPECT_EQ(space_.map(a + 0x1000, 0x2000, 2, 0), Status::kAlreadyMapped);  // runs into it
  EXPECT_EQ(space_.map(a + 0x3000, 0x2000, 2, 0), Status::kAlreadyMapped);  // starts inside it
  EXPECT_EQ(space_.map(a, 0x8000, 2, 0), Status::kAlreadyMapped);           // covers it
  EXPECT_EQ(digestOf(space_), before);
  // Touching but not overlapping is fine on both sides.
  EXPECT_EQ(space_.map(a + 0x1000, 0x1000, 3, 0), Status::kOk);
  EXPECT_EQ(space_.map(a + 0x4000, 0x1000, 4, 0), Status::kOk);
  EXPECT_EQ(space_.mappingCount(), 3u);
}

TEST_F(AddressSpaceTest, MapMayRunPastItsReservation) {
  // The real driver maps a range whose first byte is reserved even when it runs on past the end
  // of the reservation, into a neighbouring reservation or into unreserved space
  // (docs/real-driver: vmm.map.past_end_of_reservation, vmm.map.spanning_two_reservations).
  const uint64_t a = reserveAt(kBase, 0x2000);
  reserveAt(kBase + 0x2000, 0x2000);
  EXPECT_EQ(space_.map(a + 0x1000, 0x2000, 1, 0), Status::kOk);   // into the neighbour
  EXPECT_EQ(space_.map(a + 0x3000, 0x3000, 2, 0), Status::kOk);   // into unreserved space
  EXPECT_EQ(space_.mappingCount(), 2u);
  ASSERT_NE(space_.mappingContaining(a + 0x5fff), nullptr);
  EXPECT_EQ(space_.mappingContaining(a + 0x5fff)->alloc, 2u);
}

TEST_F(AddressSpaceTest, MapRefusesOutsideAnyReservationEmptyAndPastTheSpace) {
  const uint64_t a = reserve(0x2000);
  const uint64_t before = digestOf(space_);
  EXPECT_EQ(space_.map(a + 0x2000, 0x1000, 1, 0), Status::kInvalidValue);  // first byte unreserved
  EXPECT_EQ(space_.map(a - 0x1000, 0x2000, 1, 0), Status::kInvalidValue);  // starts before it
  EXPECT_EQ(space_.map(a, 0, 1, 0), Status::kInvalidValue);
  EXPECT_EQ(space_.map(a, kSize + kPage, 1, 0), Status::kInvalidValue);    // past the space's end
  EXPECT_EQ(space_.map(a, UINT64_MAX, 1, 0), Status::kInvalidValue);       // wraps around
  EXPECT_EQ(digestOf(space_), before);
  EXPECT_EQ(space_.mappingCount(), 0u);
}

TEST_F(AddressSpaceTest, SpaceHeldByAMappingIsNotReservedAgain) {
  // A mapping that ran past its reservation holds that space: neither a hint nor first fit may
  // hand it out.
  const uint64_t a = reserveAt(kBase, 0x2000);
  ASSERT_EQ(space_.map(a, 0x4000, 1, 0), Status::kOk);
  EXPECT_EQ(reserve(0x1000, kPage, kBase + 0x2000), kBase + 0x4000);
  EXPECT_EQ(reserve(0x1000), kBase + 0x5000);
}

// ---- unmap -----------------------------------------------------------------------------------

class UnmapTest : public AddressSpaceTest {
 protected:
  void SetUp() override {
    r_ = reserve(0x10000);
    // [0x0000, 0x2000) alloc 1, [0x2000, 0x3000) alloc 2, hole, [0x5000, 0x6000) alloc 3.
    ASSERT_EQ(space_.map(r_, 0x2000, 1, 0), Status::kOk);
    ASSERT_EQ(space_.map(r_ + 0x2000, 0x1000, 2, 0), Status::kOk);
    ASSERT_EQ(space_.map(r_ + 0x5000, 0x1000, 3, 0), Status::kOk);
  }
  // Expects `unmap` to be refused and to leave the space exactly as it was.
  void expectRefused(uint64_t va, uint64_t size) {
    const uint64_t before = digestOf(space_);
    std::vector<Mapping> removed;
    EXPECT_EQ(space_.unmap(va, size, &removed), Status::kInvalidValue);
    EXPECT_TRUE(removed.empty());
    EXPECT_EQ(digestOf(space_), before);
    EXPECT_EQ(space_.mappingCount(), 3u);
  }
  uint64_t r_ = 0;
};

TEST_F(UnmapTest, PartialMappingIsRefused) {
  expectRefused(r_, 0x1000);            // first half of a mapping
  expectRefused(r_ + 0x1000, 0x1000);   // second half
  expectRefused(r_ + 0x1000, 0x2000);   // half of one, all of the next
  expectRefused(r_, 0x2800);            // one whole, part of the next
  expectRefused(r_ + 0x4000, 0x1800);   // a hole, then part of a mapping
}

TEST_F(UnmapTest, EmptyOrWrappingRangeIsRefused) {
  expectRefused(r_, 0);
  expectRefused(r_, UINT64_MAX);
}

TEST_F(UnmapTest, FirstByteNeitherReservedNorMappedIsRefused) {
  expectRefused(r_ + 0x10000, 0x1000);  // just past the reservation
  expectRefused(kBase + kSize, 0x1000);
}

TEST_F(UnmapTest, TwoAdjacentWholeMappingsUnmapTogether) {
  std::vector<Mapping> removed;
  ASSERT_EQ(space_.unmap(r_, 0x3000, &removed), Status::kOk);
  ASSERT_EQ(removed.size(), 2u);
  EXPECT_EQ(removed[0].alloc, 1u);  // in address order
  EXPECT_EQ(removed[1].alloc, 2u);
  EXPECT_EQ(space_.mappingCount(), 1u);
  EXPECT_EQ(space_.mappingContaining(r_), nullptr);
  EXPECT_NE(space_.mappingContaining(r_ + 0x5000), nullptr);
}

TEST_F(UnmapTest, UnmappedStretchesInsideTheRangeAreFine) {
  // Like the real driver (vmm.unmap.mapping_plus_unmapped_tail, vmm.unmap.unmapped_reserved):
  // holes inside the range are allowed; only a mapping partly inside is refused.
  std::vector<Mapping> removed;
  ASSERT_EQ(space_.unmap(r_ + 0x2000, 0x4000, &removed), Status::kOk);
  ASSERT_EQ(removed.size(), 2u);
  EXPECT_EQ(removed[0].alloc, 2u);
  EXPECT_EQ(removed[1].alloc, 3u);
  EXPECT_EQ(space_.mappingCount(), 1u);
}

TEST_F(UnmapTest, ReservedButUnmappedRangeUnmapsNothing) {
  const uint64_t before = digestOf(space_);
  std::vector<Mapping> removed;
  EXPECT_EQ(space_.unmap(r_ + 0x3000, 0x2000, &removed), Status::kOk);
  EXPECT_TRUE(removed.empty());
  EXPECT_EQ(digestOf(space_), before);
}

TEST_F(UnmapTest, OneWholeMappingUnmaps) {
  std::vector<Mapping> removed;
  ASSERT_EQ(space_.unmap(r_ + 0x5000, 0x1000, &removed), Status::kOk);
  ASSERT_EQ(removed.size(), 1u);
  EXPECT_EQ(removed[0].alloc, 3u);
  EXPECT_EQ(space_.mappingCount(), 2u);
}

TEST_F(AddressSpaceTest, UnmapRemovesAMappingThatRanPastItsReservation) {
  const uint64_t a = reserveAt(kBase, 0x1000);
  ASSERT_EQ(space_.map(a, 0x1000, 1, 0), Status::kOk);
  // This mapping's first byte is reserved; the rest runs into unreserved space.
  const uint64_t b = reserveAt(kBase + 0x1000, 0x1000);
  ASSERT_EQ(space_.map(b, 0x3000, 2, 0), Status::kOk);
  ASSERT_EQ(space_.free(a, 0x1000), Status::kInvalidValue);  // still holds mapping 1
  std::vector<Mapping> removed;
  EXPECT_EQ(space_.unmap(b, 0x3000, &removed), Status::kOk);
  ASSERT_EQ(removed.size(), 1u);
  EXPECT_EQ(removed[0].alloc, 2u);
}

// ---- setAccess -------------------------------------------------------------------------------

TEST_F(UnmapTest, SetAccessOnFullyMappedRangeAppliesToEveryMapping) {
  ASSERT_EQ(space_.setAccess(r_, 0x3000, 1, Access::kReadWrite), Status::kOk);
  EXPECT_EQ(space_.mappingContaining(r_)->access[1], Access::kReadWrite);
  EXPECT_EQ(space_.mappingContaining(r_ + 0x2000)->access[1], Access::kReadWrite);
  EXPECT_EQ(space_.mappingContaining(r_)->access[0], Access::kNone);  // other device untouched
  EXPECT_EQ(space_.mappingContaining(r_ + 0x5000)->access[1], Access::kNone);
}

TEST_F(UnmapTest, SetAccessOnPartOfAMappingIsRefused) {
  // The real driver refuses a range that covers a mapping only in part
  // (vmm.setaccess.first_half_of_mapping).
  const uint64_t before = digestOf(space_);
  EXPECT_EQ(space_.setAccess(r_, 0x1000, 0, Access::kRead), Status::kInvalidValue);
  EXPECT_EQ(space_.setAccess(r_ + 0x800, 0x800, 0, Access::kRead), Status::kInvalidValue);
  EXPECT_EQ(space_.setAccess(r_ + 0x1000, 0x2000, 0, Access::kRead), Status::kInvalidValue);
  EXPECT_EQ(space_.setAccess(r_, 0x2800, 0, Access::kRead), Status::kInvalidValue);
  EXPECT_EQ(digestOf(space_), before);
}

TEST_F(UnmapTest, SetAccessIsAllOrNothing) {
  const uint64_t before = digestOf(space_);
  // Mapping 2 is covered, then the hole: nothing may change, not even mapping 2's rights.
  EXPECT_EQ(space_.setAccess(r_ + 0x2000, 0x4000, 0, Access::kReadWrite), Status::kInvalidValue);
  EXPECT_EQ(space_.setAccess(r_, 0x7000, 0, Access::kReadWrite), Status::kInvalidValue);
  EXPECT_EQ(space_.setAccess(r_ + 0x3000, 0x1000, 0, Access::kReadWrite), Status::kInvalidValue);
  EXPECT_EQ(space_.setAccess(r_, 0x1000, kDevices, Access::kReadWrite), Status::kInvalidValue);
  EXPECT_EQ(space_.setAccess(r_, 0x1000, -1, Access::kReadWrite), Status::kInvalidValue);
  EXPECT_EQ(space_.setAccess(r_, 0, 0, Access::kReadWrite), Status::kInvalidValue);
  EXPECT_EQ(space_.setAccess(r_, UINT64_MAX, 0, Access::kReadWrite), Status::kInvalidValue);
  EXPECT_EQ(digestOf(space_), before);
  EXPECT_EQ(space_.mappingContaining(r_ + 0x2000)->access[0], Access::kNone);
}

// ---- resolve ---------------------------------------------------------------------------------

TEST_F(UnmapTest, ResolveSplitsAcrossMappings) {
  std::vector<Segment> segs;
  // Device -1: no access check (the node's own bookkeeping walks).
  ASSERT_EQ(space_.resolve(r_ + 0x1800, 0x1000, -1, Access::kRead, &segs), Status::kOk);
  ASSERT_EQ(segs.size(), 2u);
  EXPECT_EQ(segs[0].alloc, 1u);
  EXPECT_EQ(segs[0].allocOffset, 0x1800u);
  EXPECT_EQ(segs[0].len, 0x800u);
  EXPECT_EQ(segs[1].alloc, 2u);
  EXPECT_EQ(segs[1].allocOffset, 0u);
  EXPECT_EQ(segs[1].len, 0x800u);
}

TEST_F(AddressSpaceTest, ResolveAddsTheMappingsAllocationOffset) {
  const uint64_t a = reserve(0x4000);
  ASSERT_EQ(space_.map(a, 0x4000, 9, 0x10000), Status::kOk);
  std::vector<Segment> segs;
  ASSERT_EQ(space_.resolve(a + 0x123, 0x10, -1, Access::kRead, &segs), Status::kOk);
  ASSERT_EQ(segs.size(), 1u);
  EXPECT_EQ(segs[0].allocOffset, 0x10123u);
  EXPECT_EQ(segs[0].len, 0x10u);
}

TEST_F(UnmapTest, ResolveFailsOnHoles) {
  std::vector<Segment> segs;
  EXPECT_EQ(space_.resolve(r_ + 0x2800, 0x1000, -1, Access::kRead, &segs), Status::kIllegalAddress);
  segs.clear();
  EXPECT_EQ(space_.resolve(r_ + 0x3000, 1, -1, Access::kRead, &segs), Status::kIllegalAddress);
  segs.clear();
  EXPECT_EQ(space_.resolve(kBase + kSize, 1, -1, Access::kRead, &segs), Status::kIllegalAddress);
  segs.clear();
  EXPECT_EQ(space_.resolve(r_, UINT64_MAX, -1, Access::kRead, &segs), Status::kIllegalAddress);
}

TEST_F(UnmapTest, ResolveFailsWithoutAccessRights) {
  std::vector<Segment> segs;
  EXPECT_EQ(space_.resolve(r_, 0x10, 0, Access::kRead, &segs), Status::kIllegalAddress);
  ASSERT_EQ(space_.setAccess(r_, 0x2000, 0, Access::kRead), Status::kOk);
  segs.clear();
  EXPECT_EQ(space_.resolve(r_, 0x10, 0, Access::kRead, &segs), Status::kOk);
  segs.clear();
  // Read rights do not allow a write.
  EXPECT_EQ(space_.resolve(r_, 0x10, 0, Access::kReadWrite, &segs), Status::kIllegalAddress);
  segs.clear();
  // Device 1 was granted nothing.
  EXPECT_EQ(space_.resolve(r_, 0x10, 1, Access::kRead, &segs), Status::kIllegalAddress);
  segs.clear();
  // Rights must hold on every mapping crossed: mapping 2 grants device 0 nothing.
  EXPECT_EQ(space_.resolve(r_ + 0x1800, 0x1000, 0, Access::kRead, &segs), Status::kIllegalAddress);
  ASSERT_EQ(space_.setAccess(r_, 0x3000, 0, Access::kReadWrite), Status::kOk);
  segs.clear();
  EXPECT_EQ(space_.resolve(r_ + 0x1800, 0x1000, 0, Access::kReadWrite, &segs), Status::kOk);
  EXPECT_EQ(segs.size(), 2u);
}

// ---- digest ----------------------------------------------------------------------------------

TEST_F(AddressSpaceTest, DigestSeesEveryKindOfChange) {
  const uint64_t empty = digestOf(space_);
  const uint64_t a = reserve(0x4000);
  const uint64_t reserved = digestOf(space_);
  EXPECT_NE(reserved, empty);
  ASSERT_EQ(space_.map(a, 0x4000, 1, 0), Status::kOk);
  const uint64_t mapped = digestOf(space_);
  EXPECT_NE(mapped, reserved);
  ASSERT_EQ(space_.setAccess(a, 0x4000, 1, Access::kRead), Status::kOk);
  EXPECT_NE(digestOf(space_), mapped);
  ASSERT_EQ(space_.unmap(a, 0x4000, nullptr), Status::kOk);
  EXPECT_EQ(digestOf(space_), reserved);
  ASSERT_EQ(space_.free(a, 0x4000), Status::kOk);
  EXPECT_EQ(digestOf(space_), empty);
}

}  // namespace
}  // namespace mcsim::model
