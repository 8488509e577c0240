// The number a program stored in an enumeration-typed field of an argument struct
// (CUDA_MEMCPY3D::srcMemoryType, CUstreamBatchMemOpParams::operation, ...). A program may store
// any number there; reading the field as the enumeration is undefined when the number lies outside
// the enumerators' range, so it is read as the number it is, and judged as such.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

namespace mcsim::driver {

template <typename E>
inline uint32_t enumField(const E& field) {
  static_assert(std::is_enum_v<E> && sizeof(E) == sizeof(uint32_t), "a 4-byte enumeration");
  uint32_t v = 0;
  std::memcpy(&v, &field, sizeof v);
  return v;
}

}  // namespace mcsim::driver
