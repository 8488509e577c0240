// Element-wise reductions with the arithmetic PTX defines, bit for bit: what the switch's
// reduction engine computes for multimem.ld_reduce, what a member's memory computes for
// multimem.red, and what the library's plain reduce kernel computes.
//
// Types and operators follow include/mcsim/kernels.h (mcsim_dtype, mcsim_redop). Floating-point
// add rounds to nearest even in the element's own precision (f16 and bf16 halves of a packed
// word are two independent lanes, each sum rounded to f16 / bf16); subnormals are kept (no
// flush to zero). Integer add wraps. min / max follow PTX: if one operand is NaN the other is
// returned; -0.0 is less than +0.0.
#pragma once

#include <cstdint>

namespace mcsim::model {

// acc[i] = acc[i] op in[i] for `count` elements of `dtype` (unaligned buffers are fine).
// Returns false (and changes nothing) for an unknown dtype or op, or a combination PTX does not
// define for multimem (f64 takes only add).
bool reduceInto(uint32_t dtype, uint32_t op, uint8_t* acc, const uint8_t* in, uint64_t count);

// Whether PTX defines `op` on `dtype` for multimem.ld_reduce (reduceInto's domain).
bool reductionDefined(uint32_t dtype, uint32_t op);

}  // namespace mcsim::model
