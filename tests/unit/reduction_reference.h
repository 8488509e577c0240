// Slow references for the reduction arithmetic (model/reduction.cpp), written independently of it:
//
//  - referenceAdd: IEEE addition with round-to-nearest-even for any binary format, by exact
//    integer arithmetic. Every finite value of a format is an integer multiple of its smallest
//    subnormal, so a sum is an exact (big) integer number of those units; rounding it to the
//    format is then integer shifting. No floating-point operation anywhere, so neither the host's
//    float unit nor its environment takes part.
//  - referenceMinMax: PTX's min / max pseudo-code (PTX ISA 9.7.3.11 / 9.7.4.7) transcribed, on
//    values decoded to double (every f16, bf16 and f32 value is a double exactly).
//
// NaN results follow mcsim's choices (canonical 0x7fffffff / 0x7fff; f64 keeps a NaN input's
// payload, the second operand's first, as a real H100 does, and gives 0xfff8000000000000 for
// inf - inf).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

namespace mcsim::test {

// A binary interchange-style format: `fracBits` stored fraction bits, `expBits` exponent bits.
struct Format {
  int expBits;
  int fracBits;
  uint64_t canonicalNaN;  // for f64: the NaN of an invalid operation
  bool keepsPayload;      // f64: a NaN input's payload survives (made quiet)

  int precision() const { return fracBits + 1; }
  uint64_t signBit() const { return uint64_t{1} << (expBits + fracBits); }
  uint64_t expMax() const { return (uint64_t{1} << expBits) - 1; }
  uint64_t fracMask() const { return (uint64_t{1} << fracBits) - 1; }
  uint64_t expOf(uint64_t v) const { return (v >> fracBits) & expMax(); }
  bool isNaN(uint64_t v) const { return expOf(v) == expMax() && (v & fracMask()) != 0; }
  bool isInf(uint64_t v) const { return expOf(v) == expMax() && (v & fracMask()) == 0; }
  bool negative(uint64_t v) const { return (v & signBit()) != 0; }
};

inline const Format kF16{5, 10, 0x7fff, false};
inline const Format kBf16{8, 7, 0x7fff, false};
inline const Format kF32{8, 23, 0x7fffffff, false};
inline const Format kF64{11, 52, 0xfff8000000000000ull, true};

// Unsigned big integer, 32-bit limbs, least significant first; just what rounding needs.
class BigUint {
 public:
  BigUint() = default;
  // m * 2^shift
  static BigUint shifted(uint64_t m, unsigned shift) {
    BigUint r;
    r.limbs_.assign(shift / 32 + 4, 0);
    const unsigned s = shift % 32;
    const unsigned base = shift / 32;
    // m << s spans up to three limbs.
    const uint64_t lo = m << s, hi = s == 0 ? 0 : m >> (64 - s);
    r.limbs_[base] = static_cast<uint32_t>(lo);
    r.limbs_[base + 1] = static_cast<uint32_t>(lo >> 32);
    r.limbs_[base + 2] = static_cast<uint32_t>(hi);
    r.trim();
    return r;
  }
  bool zero() const { return limbs_.empty(); }
  int compare(const BigUint& o) const {
    if (limbs_.size() != o.limbs_.size()) return limbs_.size() < o.limbs_.size() ? -1 : 1;
    for (size_t i = limbs_.size(); i-- > 0;) {
      if (limbs_[i] != o.limbs_[i]) return limbs_[i] < o.limbs_[i] ? -1 : 1;
    }
    return 0;
  }
  BigUint plus(const BigUint& o) const {
    BigUint r;
    r.limbs_.assign(std::max(limbs_.size(), o.limbs_.size()) + 1, 0);
    uint64_t carry = 0;
    for (size_t i = 0; i < r.limbs_.size(); ++i) {
      carry += uint64_t{limb(i)} + o.limb(i);
      r.limbs_[i] = static_cast<uint32_t>(carry);
      carry >>= 32;
    }
    r.trim();
    return r;
  }
  // this - o, for this >= o.
  BigUint minus(const BigUint& o) const {
    BigUint r;
    r.limbs_.assign(limbs_.size(), 0);
    int64_t borrow = 0;
    for (size_t i = 0; i < limbs_.size(); ++i) {
      int64_t d = int64_t{limbs_[i]} - o.limb(i) - borrow;
      borrow = d < 0 ? 1 : 0;
      r.limbs_[i] = static_cast<uint32_t>(d + (borrow << 32));
    }
    r.trim();
    return r;
  }
  unsigned bitLength() const {
    if (limbs_.empty()) return 0;
    unsigned top = 32;
    while (!(limbs_.back() >> (top - 1) & 1)) --top;
    return static_cast<unsigned>(32 * (limbs_.size() - 1)) + top;
  }
  bool bit(unsigned i) const { return (limb(i / 32) >> (i % 32)) & 1; }
  // Bits [lo, lo + 64) as an integer.
  uint64_t bits64(unsigned lo) const {
    uint64_t v = 0;
    for (unsigned i = 0; i < 64; ++i) v |= uint64_t{bit(lo + i)} << i;
    return v;
  }
  bool anyBelow(unsigned n) const {  // any of bits [0, n) set
    for (unsigned i = 0; i < n; ++i) {
      if (bit(i)) return true;
    }
    return false;
  }

 private:
  uint32_t limb(size_t i) const { return i < limbs_.size() ? limbs_[i] : 0; }
  void trim() {
    while (!limbs_.empty() && limbs_.back() == 0) limbs_.pop_back();
  }
  std::vector<uint32_t> limbs_;
};

// |v| in units of the format's smallest subnormal.
inline BigUint unitsOf(const Format& f, uint64_t v) {
  const uint64_t e = f.expOf(v), frac = v & f.fracMask();
  if (e == 0) return BigUint::shifted(frac, 0);
  return BigUint::shifted(frac | (uint64_t{1} << f.fracBits), static_cast<unsigned>(e - 1));
}

// Rounds sign * units to the format, to nearest even, overflowing to infinity.
inline uint64_t roundUnits(const Format& f, bool negative, const BigUint& units) {
  const uint64_t sign = negative ? f.signBit() : 0;
  const unsigned p = static_cast<unsigned>(f.precision());
  const unsigned length = units.bitLength();
  const unsigned k = length > p ? length - p : 0;  // bits that do not fit
  uint64_t q = units.bits64(k) & ((uint64_t{1} << p) - 1);
  if (k > 0 && units.bit(k - 1)) {  // at least half an ulp dropped
    const bool moreThanHalf = units.anyBelow(k - 1);
    if (moreThanHalf || (q & 1)) ++q;
  }
  uint64_t shift = k;
  if (q == uint64_t{1} << p) {  // rounding carried into a new binade
    q >>= 1;
    ++shift;
  }
  if (shift == 0 && q < (uint64_t{1} << (p - 1))) return sign | q;  // subnormal or zero
  const uint64_t e = shift + 1;
  if (e >= f.expMax()) return sign | (f.expMax() << f.fracBits);  // infinity
  return sign | (e << f.fracBits) | (q & f.fracMask());
}

inline uint64_t referenceAdd(const Format& f, uint64_t a, uint64_t b) {
  if (f.isNaN(a) || f.isNaN(b)) {
    if (!f.keepsPayload) return f.canonicalNaN;
    const uint64_t quiet = uint64_t{1} << (f.fracBits - 1);
    return f.isNaN(b) ? b | quiet : a | quiet;
  }
  if (f.isInf(a) && f.isInf(b)) return f.negative(a) == f.negative(b) ? a : f.canonicalNaN;
  if (f.isInf(a)) return a;
  if (f.isInf(b)) return b;
  const BigUint x = unitsOf(f, a), y = unitsOf(f, b);
  const bool na = f.negative(a), nb = f.negative(b);
  if (na == nb) {
    const BigUint s = x.plus(y);
    // An exact zero sum of two same-signed values: both are zeros, and keep their sign.
    return roundUnits(f, na, s);
  }
  const int c = x.compare(y);
  if (c == 0) return 0;  // x + (-x) = +0 when rounding to nearest
  return c > 0 ? roundUnits(f, na, x.minus(y)) : roundUnits(f, nb, y.minus(x));
}

// The exact value as a double (f16, bf16 and f32 fit; so does every finite f64).
inline double referenceValue(const Format& f, uint64_t v) {
  const uint64_t e = f.expOf(v), frac = v & f.fracMask();
  const int bias = static_cast<int>((uint64_t{1} << (f.expBits - 1)) - 1);
  double m = e == 0 ? std::ldexp(static_cast<double>(frac), 1 - bias - f.fracBits)
                    : std::ldexp(static_cast<double>(frac | (uint64_t{1} << f.fracBits)),
                                 static_cast<int>(e) - bias - f.fracBits);
  if (f.isInf(v)) m = HUGE_VAL;
  return f.negative(v) ? -m : m;
}

// PTX min / max without .NaN:
//   if (isNaN(x) && isNaN(y)) z = NaN; else if (isNaN(x)) z = y; else if (isNaN(y)) z = x;
//   else z = (x < y) ? x : y;   // min; -0.0 < +0.0 here
inline uint64_t referenceMinMax(const Format& f, bool max, uint64_t a, uint64_t b) {
  if (f.isNaN(a) && f.isNaN(b)) return f.canonicalNaN;
  if (f.isNaN(a)) return b;
  if (f.isNaN(b)) return a;
  const double x = referenceValue(f, a), y = referenceValue(f, b);
  if (x != y) return (x < y) != max ? a : b;
  // Equal values: the same pattern, or +0 and -0, of which min takes -0 and max +0.
  const bool aFirst = f.negative(a) != max;
  return aFirst ? a : b;
}

}  // namespace mcsim::test
