// LazyRegion: simulated device memory costs host memory only where it has been written, so an
// 8 x 80 GB node fits on a laptop. residentBytes() is what the node reports in its stats.
#include "model/lazy_region.h"
#include "tests/common/zero_page.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <string>

namespace mcsim::model {
namespace {

constexpr uint64_t kGiB = uint64_t{1} << 30;
constexpr uint64_t kHugePage = uint64_t{2} << 20;

uint64_t pageSize() { return static_cast<uint64_t>(sysconf(_SC_PAGESIZE)); }

// With transparent huge pages in "always" mode the kernel may back a first write with a whole
// 2 MiB page; the region's accounting is then right at huge-page granularity. Otherwise a write
// backs exactly the pages it touches.
uint64_t backingUnit() {
  std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string mode;
  std::getline(f, mode);
  return mode.find("[always]") != std::string::npos ? kHugePage : pageSize();
}

TEST(LazyRegion, OneGiBRegionIsNotResidentUntilWritten) {
  auto r = LazyRegion::create(kGiB);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->size(), kGiB);
  EXPECT_EQ(r->residentBytes(), 0u);
}

TEST(LazyRegion, WritingThreePagesMakesAboutThreePagesResident) {
  auto r = LazyRegion::create(kGiB);
  ASSERT_NE(r, nullptr);
  // Three pages far apart, so that no two share a huge page either.
  for (uint64_t at : {uint64_t{0}, 100 * kHugePage, 300 * kHugePage + 5 * pageSize()}) {
    r->data()[at + 7] = 0x5a;
  }
  const uint64_t resident = r->residentBytes();
  EXPECT_GE(resident, 3 * pageSize());
  EXPECT_LE(resident, 3 * backingUnit());
  EXPECT_EQ(r->data()[100 * kHugePage + 7], 0x5a);
}

// Reading untouched memory is served by the kernel's shared zero page, which backs nothing, so it
// adds no resident bytes: residentBytes() counts the mapping's anonymous pages (/proc/self/smaps),
// not the present ones (mincore would count zero-page reads). Where the host kernel backs reads
// with pages of their own, reads do cost memory and these tests do not apply.
#define SKIP_UNLESS_ZERO_PAGE_READS()                                                              \
  if (!mctest::kernelServesReadsFromTheZeroPage())                                                 \
  GTEST_SKIP() << "this host's kernel backs reads of untouched memory with pages of their own "   \
                  "(no shared zero page), so reads are resident memory here"

TEST(LazyRegion, ReadingDoesNotMakeItResident) {
  SKIP_UNLESS_ZERO_PAGE_READS();
  auto r = LazyRegion::create(kGiB);
  ASSERT_NE(r, nullptr);
  // Read one byte in each of the first 1024 pages: untouched memory reads as zeros and is
  // served by the kernel's shared zero page, which backs nothing.
  unsigned sum = 0;
  for (uint64_t i = 0; i < 1024; ++i) sum += static_cast<volatile uint8_t*>(r->data())[i * pageSize()];
  EXPECT_EQ(sum, 0u);
  EXPECT_EQ(r->residentBytes(), 0u);
}

TEST(LazyRegion, ReadingNextToAWrittenPageDoesNotAddResidency) {
  SKIP_UNLESS_ZERO_PAGE_READS();
  auto r = LazyRegion::create(kGiB);
  ASSERT_NE(r, nullptr);
  const uint64_t far = 200 * kHugePage;
  r->data()[far] = 1;
  const uint64_t afterWrite = r->residentBytes();
  unsigned sum = 0;
  for (uint64_t i = 0; i < 256; ++i) sum += static_cast<volatile uint8_t*>(r->data())[i * pageSize()];
  EXPECT_EQ(sum, 0u);
  EXPECT_EQ(r->residentBytes(), afterWrite);
}

TEST(LazyRegion, ZeroBytesIsRefused) { EXPECT_EQ(LazyRegion::create(0), nullptr); }

}  // namespace
}  // namespace mcsim::model
