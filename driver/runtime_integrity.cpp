// The runtime's integrity hash (docs/runtime.md says where each fact comes from).
#include "driver/runtime_integrity.h"

#include <cstring>

namespace mcsim::driver {

namespace {

// RFC 1319's substitution table, built from the digits of pi.
constexpr uint8_t kPiSubst[256] = {
    41,  46,  67,  201, 162, 216, 124, 1,   61,  54,  84,  161, 236, 240, 6,   19,  98,  167, 5,   243, 192, 199,
    115, 140, 152, 147, 43,  217, 188, 76,  130, 202, 30,  155, 87,  60,  253, 212, 224, 22,  103, 66,  111, 24,
    138, 23,  229, 18,  190, 78,  196, 214, 218, 158, 222, 73,  160, 251, 245, 142, 187, 47,  238, 122, 169, 104,
    121, 145, 21,  178, 7,   63,  148, 194, 16,  137, 11,  34,  95,  33,  128, 127, 93,  154, 90,  144, 50,  39,
    53,  62,  204, 231, 191, 247, 151, 3,   255, 25,  48,  179, 72,  165, 181, 209, 215, 94,  146, 42,  172, 86,
    170, 198, 79,  184, 56,  210, 150, 164, 125, 182, 118, 252, 107, 226, 156, 116, 4,   241, 69,  157, 112, 89,
    100, 113, 135, 32,  134, 91,  207, 101, 230, 45,  168, 2,   27,  96,  37,  173, 174, 176, 185, 246, 28,  70,
    97,  105, 52,  64,  126, 15,  85,  71,  163, 35,  221, 81,  175, 58,  195, 92,  249, 206, 186, 197, 234, 38,
    44,  83,  13,  110, 133, 40,  132, 9,   211, 223, 205, 244, 65,  129, 77,  82,  106, 220, 55,  200, 108, 193,
    171, 250, 36,  225, 123, 8,   12,  189, 177, 74,  120, 136, 149, 139, 227, 99,  232, 109, 233, 203, 213, 254,
    59,  0,   29,  57,  242, 239, 183, 14,  102, 88,  208, 228, 166, 119, 114, 248, 235, 117, 75,  10,  49,  68,
    80,  180, 143, 237, 31,  26,  219, 153, 141, 51,  159, 17,  131, 20,
};

// The HMAC key the runtime and the driver share. ZLUDA's zluda_dark_api crate recovers it from the
// driver (its anti_zluda_hash_impl_part1 de-obfuscates these 16 bytes).
constexpr uint8_t kKey[16] = {0x14, 0x6a, 0xdd, 0xae, 0x53, 0xa9, 0xa7, 0x52,
                              0xaa, 0x08, 0x41, 0x36, 0x0b, 0xf5, 0x5a, 0x9f};

class Md2 {
 public:
  void update(const uint8_t* p, size_t n) {
    for (size_t i = 0; i < n; ++i) {
      block_[fill_++] = p[i];
      if (fill_ == 16) {
        processBlock();
        fill_ = 0;
      }
    }
  }
  void finish(uint8_t digest[16]) {
    const uint8_t pad = static_cast<uint8_t>(16 - fill_);
    uint8_t padding[16];
    std::memset(padding, pad, sizeof padding);
    update(padding, pad);
    uint8_t checksum[16];
    std::memcpy(checksum, checksum_, 16);
    update(checksum, 16);
    std::memcpy(digest, state_, 16);
  }

 private:
  void processBlock() {
    for (int j = 0; j < 16; ++j) {
      state_[16 + j] = block_[j];
      state_[32 + j] = static_cast<uint8_t>(state_[16 + j] ^ state_[j]);
      checksum_[j] ^= kPiSubst[block_[j] ^ last_];
      last_ = checksum_[j];
    }
    uint8_t t = 0;
    for (int round = 0; round < 18; ++round) {
      for (uint8_t& x : state_) t = x ^= kPiSubst[t];
      t = static_cast<uint8_t>(t + round);
    }
  }
  uint8_t state_[48] = {};
  uint8_t checksum_[16] = {};
  uint8_t last_ = 0;
  uint8_t block_[16] = {};
  size_t fill_ = 0;
};

template <typename T>
void append(std::vector<uint8_t>* out, T value) {
  const auto* p = reinterpret_cast<const uint8_t*>(&value);
  out->insert(out->end(), p, p + sizeof value);
}

}  // namespace

void md2(const uint8_t* data, size_t n, uint8_t digest[16]) {
  Md2 h;
  h.update(data, n);
  h.finish(digest);
}

void integrityHash(const IntegrityInput& in, const std::vector<IntegrityDevice>& devices, uint8_t out[16]) {
  std::vector<uint8_t> message;
  append(&message, in.driverVersion);
  append(&message, in.runtimeArgument);
  append(&message, in.processId);
  append(&message, in.threadId);
  append(&message, in.runtimeInterfaceTable);
  append(&message, in.integrityTable);
  append(&message, in.checkFunction);
  append(&message, in.timestamp);
  for (const IntegrityDevice& d : devices) {
    message.insert(message.end(), reinterpret_cast<const uint8_t*>(d.uuid.bytes),
                   reinterpret_cast<const uint8_t*>(d.uuid.bytes) + 16);
    append(&message, d.pciDomain);
    append(&message, d.pciBus);
    append(&message, d.pciDevice);
  }
  uint8_t pad[16];
  uint8_t inner[16];
  Md2 h;
  for (int i = 0; i < 16; ++i) pad[i] = kKey[i] ^ 0x36;
  h.update(pad, 16);
  h.update(message.data(), message.size());
  h.finish(inner);
  Md2 outer;
  for (int i = 0; i < 16; ++i) pad[i] = kKey[i] ^ 0x5c;
  outer.update(pad, 16);
  outer.update(inner, 16);
  outer.finish(out);
}

}  // namespace mcsim::driver
