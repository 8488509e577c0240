// The runtime integrity hash (driver/runtime_integrity.h): MD2 against RFC 1319's test suite, and
// the whole HMAC against the worked example ZLUDA publishes for a real driver's answer. On a real
// H100 the same code matched the driver's answers (tools/dev/real_export_tables.cpp,
// docs/runtime.md).
#include "driver/runtime_integrity.h"

#include <gtest/gtest.h>

#include <cstring>
#include <iomanip>
#include <sstream>
#include <string>

namespace {

using mcsim::driver::IntegrityDevice;
using mcsim::driver::IntegrityInput;

std::string hex(const uint8_t* p, size_t n) {
  std::ostringstream out;
  for (size_t i = 0; i < n; ++i) out << std::hex << std::setw(2) << std::setfill('0') << static_cast<int>(p[i]);
  return out.str();
}

std::string md2Hex(const std::string& text) {
  uint8_t d[16];
  mcsim::driver::md2(reinterpret_cast<const uint8_t*>(text.data()), text.size(), d);
  return hex(d, 16);
}

TEST(RuntimeIntegrity, Md2MatchesRfc1319TestSuite) {
  EXPECT_EQ("8350e5a3e24c153df2275c9f80692773", md2Hex(""));
  EXPECT_EQ("32ec01ec4a6dac72c0ab96fb34c0b5d1", md2Hex("a"));
  EXPECT_EQ("da853b0d3f88d99b30283a69e6ded6bb", md2Hex("abc"));
  EXPECT_EQ("ab4f496bfb2a530b219ff33031fe06b0", md2Hex("message digest"));
  EXPECT_EQ("4e8ddff3650292ab5a4108c3aa47940b", md2Hex("abcdefghijklmnopqrstuvwxyz"));
  EXPECT_EQ("da33def2a42df13975352846c30338cd",
            md2Hex("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"));
  EXPECT_EQ("d5976f79d83d3a0dc9806c3c66f3efd8",
            md2Hex("12345678901234567890123456789012345678901234567890123456789012345678901234567890"));
}

// ZLUDA's zluda_dark_api crate, test anti_zluda_hash_impl_sample: a real driver's answer for one
// device, with the inputs it hashed.
TEST(RuntimeIntegrity, HashMatchesPublishedDriverAnswer) {
  IntegrityInput in{};
  in.driverVersion = 12020;
  in.runtimeArgument = 0x2B4A;
  in.processId = 0x4D08;
  in.threadId = 0x2B78;
  in.runtimeInterfaceTable = 0x00007FF8C80717F0ull;
  in.integrityTable = 0x00007FF8C825E4B0ull;
  in.checkFunction = 0x00007FF8C7DD0AD0ull;
  in.timestamp = 0x64A365EEull;
  IntegrityDevice dev{};
  const uint8_t uuid[16] = {0x67, 0x22, 0xCB, 0xCF, 0xC6, 0x61, 0xF2, 0x92,
                            0x74, 0xD6, 0xED, 0x23, 0x2A, 0x32, 0x13, 0x1C};
  std::memcpy(dev.uuid.bytes, uuid, 16);
  dev.pciDomain = 0;
  dev.pciBus = 4;
  dev.pciDevice = 0;
  uint8_t out[16];
  mcsim::driver::integrityHash(in, {dev}, out);
  // 0xEAF1313342BFCD84A7C34628F214707A as a little-endian 128-bit number.
  EXPECT_EQ("7a7014f22846c3a784cdbf423331f1ea", hex(out, 16));
  // Every input counts: another thread gives another answer.
  in.threadId += 1;
  uint8_t other[16];
  mcsim::driver::integrityHash(in, {dev}, other);
  EXPECT_NE(hex(out, 16), hex(other, 16));
}

}  // namespace
