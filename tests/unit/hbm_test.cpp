// HBM stacks: how an access's bytes spread over the stacks (address interleave), whatever its
// alignment and length, checked against counting the bytes one by one.
#include <gtest/gtest.h>

#include <vector>

#include "model/hbm.h"

namespace {

using mcsim::model::Hbm;
using mcsim::model::HbmSpec;

TEST(Hbm, EveryByteGoesToTheStackItsAddressSelects) {
  for (int stacks : {1, 3, 5, 6, 8}) {
    for (uint64_t block : {256u, 4096u}) {
      HbmSpec spec;
      spec.stacks = stacks;
      spec.bytesPerSecond = 1e12;
      spec.interleaveBytes = block;
      Hbm hbm(spec, {});
      std::vector<uint64_t> want(static_cast<size_t>(stacks), 0);
      // Unaligned starts and lengths under, at and over one round of the interleave.
      for (uint64_t addr : {uint64_t{0}, uint64_t{7}, block - 1, 3 * block + 5}) {
        for (uint64_t bytes : {uint64_t{1}, block, block * stacks, block * stacks + 3, 5 * block * stacks - 11}) {
          hbm.access(0, addr, bytes, nullptr);
          for (uint64_t a = addr; a < addr + bytes; ++a) ++want[(a / block) % static_cast<uint64_t>(stacks)];
        }
      }
      for (int i = 0; i < stacks; ++i) {
        EXPECT_EQ(hbm.stacks()[static_cast<size_t>(i)].bytesServed(), want[static_cast<size_t>(i)])
            << stacks << " stacks, " << block << "-byte blocks, stack " << i;
      }
    }
  }
}

TEST(Hbm, AnAccessEndsWhenItsBusiestStackIsDoneThenPaysTheLatency) {
  HbmSpec spec;
  spec.stacks = 2;
  spec.bytesPerSecond = 2e12;  // 1 byte per ps per stack
  spec.interleaveBytes = 4096;
  spec.latencyPs = 100;
  Hbm hbm(spec, {});
  // 4096 + 100 bytes: stack 0 gets 4096, stack 1 gets 100.
  EXPECT_EQ(hbm.access(1000, 0, 4196, nullptr), 1000u + 4096u + 100u);
}

}  // namespace
