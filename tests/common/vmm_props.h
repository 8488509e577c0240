// The VMM descriptors tests build again and again: pinned memory on a device, read-write access
// for a device, and the properties of a multicast object. Needs only cuda.h, so that the conformance suite can use it against the
// real driver too.
#pragma once

#include <cuda.h>

#include <cstring>

namespace cutest {

inline CUmemAllocationProp devicePinned(int dev, unsigned handleTypes = 0) {
  CUmemAllocationProp p;
  std::memset(&p, 0, sizeof p);
  p.type = CU_MEM_ALLOCATION_TYPE_PINNED;
  p.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  p.location.id = dev;
  p.requestedHandleTypes = static_cast<CUmemAllocationHandleType>(handleTypes);
  return p;
}

inline CUmemAccessDesc readWrite(int dev) {
  CUmemAccessDesc d;
  std::memset(&d, 0, sizeof d);
  d.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  d.location.id = dev;
  d.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
  return d;
}

// A multicast object for a team of `numDevices`, `size` bytes, exportable as `handleTypes`.
inline CUmulticastObjectProp mcProp(unsigned numDevices, size_t size, unsigned long long handleTypes = 0) {
  CUmulticastObjectProp p;
  std::memset(&p, 0, sizeof p);
  p.numDevices = numDevices;
  p.size = size;
  p.handleTypes = handleTypes;
  p.flags = 0;
  return p;
}

}  // namespace cutest
