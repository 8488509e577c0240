#include "model/float_env.h"

#include <cstdint>
#include <cstring>

#if defined(__x86_64__)
#include <xmmintrin.h>
#define MCSIM_FLOAT_ENV_MXCSR 1
#elif defined(__aarch64__)
#define MCSIM_FLOAT_ENV_AARCH64 1
#else
#include <cfenv>
#endif

namespace mcsim::model {

#if defined(MCSIM_FLOAT_ENV_MXCSR)

// SSE arithmetic (all float and double arithmetic on x86-64) obeys MXCSR alone: bits 0-5 status
// flags, 6 DAZ, 7-12 exception masks, 13-14 rounding control (00 = nearest even), 15 FTZ.
namespace {
constexpr uint32_t kMasks = 0x1f80u;
constexpr uint32_t kDaz = 0x0040u, kRounding = 0x6000u, kFtz = 0x8000u, kFlags = 0x003fu;
}  // namespace

FloatEnvironment::FloatEnvironment() {
  const uint32_t csr = _mm_getcsr();
  std::memcpy(saved_, &csr, sizeof csr);
  _mm_setcsr((csr | kMasks) & ~(kDaz | kRounding | kFtz | kFlags));
}

FloatEnvironment::~FloatEnvironment() {
  uint32_t csr;
  std::memcpy(&csr, saved_, sizeof csr);
  _mm_setcsr(csr);
}

#elif defined(MCSIM_FLOAT_ENV_AARCH64)

// FPCR: bits 8-12 and 15 trap enables, 19 FZ16, 22-23 rounding (00 = nearest even), 24 FZ,
// 25 DN (default NaN: harmless, the reductions choose every NaN they return themselves).
// FPSR holds the cumulative status flags.
namespace {
constexpr uint64_t kTraps = 0x9f00u, kFz16 = 1u << 19, kRounding = 3u << 22, kFz = 1u << 24;

uint64_t getFpcr() {
  uint64_t v;
  asm volatile("mrs %0, fpcr" : "=r"(v));
  return v;
}
uint64_t getFpsr() {
  uint64_t v;
  asm volatile("mrs %0, fpsr" : "=r"(v));
  return v;
}
void setFpcr(uint64_t v) { asm volatile("msr fpcr, %0" : : "r"(v)); }
void setFpsr(uint64_t v) { asm volatile("msr fpsr, %0" : : "r"(v)); }
}  // namespace

FloatEnvironment::FloatEnvironment() {
  const uint64_t fpcr = getFpcr();
  const uint64_t fpsr = getFpsr();
  std::memcpy(saved_, &fpcr, sizeof fpcr);
  std::memcpy(saved_ + sizeof fpcr, &fpsr, sizeof fpsr);
  setFpcr(fpcr & ~(kTraps | kFz16 | kRounding | kFz));
}

FloatEnvironment::~FloatEnvironment() {
  uint64_t fpcr, fpsr;
  std::memcpy(&fpcr, saved_, sizeof fpcr);
  std::memcpy(&fpsr, saved_ + sizeof fpcr, sizeof fpsr);
  setFpcr(fpcr);
  setFpsr(fpsr);
}

#else

// Elsewhere: standard C. It cannot reach a flush-to-zero mode, which such platforms would have
// to add here.
FloatEnvironment::FloatEnvironment() {
  static_assert(sizeof(std::fenv_t) <= sizeof saved_, "fenv_t does not fit");
  std::fenv_t env;
  std::feholdexcept(&env);  // saves, clears the flags, masks the traps
  std::memcpy(saved_, &env, sizeof env);
  std::fesetround(FE_TONEAREST);
}

FloatEnvironment::~FloatEnvironment() {
  std::fenv_t env;
  std::memcpy(&env, saved_, sizeof env);
  std::fesetenv(&env);
}

#endif

}  // namespace mcsim::model
