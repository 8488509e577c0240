// A kernel that spins without being parked, and the kernel that releases it, as PTX text for
// cuModuleLoadData. The spinning kernel (parameters: buf, out, flag) waits for the word at `buf` to
// equal `flag`, writing an iteration counter to `out + 8` on every turn (a waiting loop that writes
// is never parked: docs/ptx.md, "Spin parking"), then copies the word at `buf + 8` to `out`. The
// releasing kernel (parameters: buf, flag) writes 3776 to `buf + 8`, then `flag` to `buf`.
// One thread each is enough. `beforePoll`, lines of PTX put between the counter's store and the
// poll (a fence: a heartbeat made visible before each look), is empty but for the spin hang
// tests. Used by the conformance suite (also built against the real driver) and by the
// multiprocess ranks, under entry names of their own; needs only the standard library.
#pragma once

#include <string>

namespace cutest {

// The value the releasing kernel writes after the flag, which the spinning kernel copies out.
constexpr unsigned long long kUnparkedSpinPayload = 3776;

inline std::string unparkedSpinPtx(const std::string& spinEntry, const std::string& releaseEntry,
                                   const std::string& beforePoll = "") {
  return R"(
.version 8.0
.target sm_90
.address_size 64
.visible .entry )" + spinEntry + R"((.param .u64 pbuf, .param .u64 pout, .param .u64 pflag)
{
  .reg .b64 %rd<8>;
  .reg .pred %p<2>;
  ld.param.u64 %rd1, [pbuf];
  ld.param.u64 %rd2, [pout];
  ld.param.u64 %rd3, [pflag];
  mov.u64 %rd5, 0;
SPIN:
  add.s64 %rd5, %rd5, 1;
  st.volatile.global.u64 [%rd2+8], %rd5;
)" + beforePoll + R"(  ld.volatile.global.u64 %rd4, [%rd1];
  setp.ne.u64 %p1, %rd4, %rd3;
  @%p1 bra SPIN;
  ld.volatile.global.u64 %rd6, [%rd1+8];
  st.global.u64 [%rd2], %rd6;
  ret;
}
.visible .entry )" + releaseEntry + R"((.param .u64 pbuf, .param .u64 pflag)
{
  .reg .b64 %rd<4>;
  ld.param.u64 %rd1, [pbuf];
  ld.param.u64 %rd2, [pflag];
  mov.u64 %rd3, )" + std::to_string(kUnparkedSpinPayload) + R"(;
  st.volatile.global.u64 [%rd1+8], %rd3;
  membar.sys;
  st.volatile.global.u64 [%rd1], %rd2;
  ret;
}
)";
}

}  // namespace cutest
