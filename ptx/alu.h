// The per-lane arithmetic of the executor: integer, bit, floating-point, comparison, selection
// and conversion instructions, computed for the lanes of a warp at once. Pure functions of their
// operands: no memory, no control flow (ptx/executor.cpp does those).
//
// Registers hold bit patterns in 64-bit lanes; an instruction of type T reads the low bits of its
// operands and produces its result zero-extended from T's width (the executor narrows or
// sign-extends it for the destination register).
//
// Floating point is IEEE-exact: the host computes in the rounding mode the instruction names
// (fesetround around the lanes; this file is compiled with -frounding-math so that the compiler
// keeps the order), .ftz flushes subnormal inputs and results to zero of the same sign, .sat
// clamps to [0, 1] with NaN to +0, and an f32 result that is NaN is the canonical NaN
// 0x7fffffff (PTX ISA, "Floating-Point Instructions"). It assumes the host's environment is
// round-to-nearest without FTZ/DAZ, as model::FloatEnvironment makes it.
#pragma once

#include <cstdint>

#include "ptx/ir.h"

namespace mcsim::ptx {

// Whether compute() implements `op` (the executor handles the others itself).
bool isAluOp(Op op);

// For the lanes in `mask`: dst[lane] = the result of `in` applied to src[0..][lane], where src[i]
// is the row of values of source operand i (the instruction's operands after its destinations).
// dst2 receives setp's second predicate (the complement), when setp names one.
void compute(const Instruction& in, uint32_t mask, const uint64_t* const* src, uint64_t* dst, uint64_t* dst2);

// fp8 (the OCP 8-bit formats PTX names .e4m3 and .e5m2): e4m3 has a 4-bit exponent of bias 7 and
// 3 fraction bits, no infinity, NaN 0x7f/0xff, largest finite 448; e5m2 is IEEE-like (5-bit exponent
// of bias 15, 2 fraction bits, infinity 0x7c, NaN above it), largest finite 57344. `v`'s low byte to
// its exact value; and a value rounded to nearest even, NaN to 0x7f. Beyond the largest finite value:
// with `satfinite` (cvt's .satfinite) that value with the sign; without, what rounding without
// bounds gives, an overflow: infinity for e5m2 and NaN (S.1111.111) for e4m3, which has no infinity.
double fp8ToDouble(uint32_t v, bool e4m3);
uint32_t doubleToFp8(double x, bool e4m3, bool satfinite);

// Atomic read-modify-write: the value atom/red `in` stores over `old`, given operand b (and c for
// cas).
uint64_t atomicResult(const Instruction& in, uint64_t old, uint64_t b, uint64_t c);

}  // namespace mcsim::ptx
