// TEMP stub: f32/u32 add only
#include "model/reduction.h"
#include <cstring>
namespace mcsim::model {
bool reductionDefined(uint32_t dtype, uint32_t op) { return dtype <= 6 && op <= 2 && !(dtype == 3 && op != 0); }
bool reduceInto(uint32_t dtype, uint32_t op, uint8_t* acc, const uint8_t* in, uint64_t count) {
  if (!reductionDefined(dtype, op)) return false;
  for (uint64_t i = 0; i < count; ++i) {
    if (dtype == 0) { float a, b; std::memcpy(&a, acc + 4*i, 4); std::memcpy(&b, in + 4*i, 4); a += b; std::memcpy(acc + 4*i, &a, 4); }
    else if (dtype == 4 || dtype == 5) { uint32_t a, b; std::memcpy(&a, acc + 4*i, 4); std::memcpy(&b, in + 4*i, 4); a += b; std::memcpy(acc + 4*i, &a, 4); }
  }
  return true;
}
}
