// The value the CUDA runtime's integrity check expects from the driver (docs/runtime.md,
// "The integrity check"): an HMAC-MD2 under a fixed 16-byte key over what both sides know.
#pragma once

#include <cuda.h>

#include <cstddef>
#include <cstdint>
#include <vector>

namespace mcsim::driver {

// One device's part of the hashed message, in the order the message lays it out.
struct IntegrityDevice {
  CUuuid uuid;
  uint32_t pciDomain;
  uint32_t pciBus;
  uint32_t pciDevice;
};

// Everything the hash covers besides the devices: the driver's version, the runtime's argument,
// the calling process and thread, the addresses of the runtime-interface table, of the integrity
// table and of the check function itself, and the runtime's timestamp.
struct IntegrityInput {
  uint32_t driverVersion;
  uint32_t runtimeArgument;
  uint32_t processId;
  uint32_t threadId;
  uint64_t runtimeInterfaceTable;
  uint64_t integrityTable;
  uint64_t checkFunction;
  uint64_t timestamp;
};

// MD2 (RFC 1319, with the published erratum to the checksum step) of `n` bytes.
void md2(const uint8_t* data, size_t n, uint8_t digest[16]);

// The 16 bytes the runtime compares: HMAC-MD2 (RFC 2104 with MD2's 16-byte block) of the message
// built from `in` and `devices`.
void integrityHash(const IntegrityInput& in, const std::vector<IntegrityDevice>& devices, uint8_t out[16]);

}  // namespace mcsim::driver
