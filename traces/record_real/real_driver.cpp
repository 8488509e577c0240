// The recording libcuda.so.1 for real GPUs (build/lib/record-real/libcuda.so.1): the same
// generated wrappers as mcsim's library, forwarding to the real driver, which it loads by full
// path (MCSIM_REAL_LIBCUDA, or the first of the usual install paths that is not this library).
//
// Safety on shared machines (../../docs/traces.md): the library makes no driver call of its own
// (loading the real library and looking symbols up calls nothing), and it refuses every
// cuMulticast* call, and withholds cuMulticast* function pointers, unless MCSIM_REAL_MULTICAST=1.
#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "traces/lib/wrapper_prologue.h"

namespace mcsim::trace {
namespace {

// Filled before main from the real library; nullptr where it lacks the symbol.
void* gForward[512];

bool gMulticastAllowed = false;

CUresult missingEntry(int i) {
  std::fprintf(stderr, "mcsim record: the real driver has no %s\n", callTable()[i].symbol);
  return CUDA_ERROR_NOT_FOUND;
}

CUresult refuseMulticast(int i) {
  std::fprintf(stderr, "mcsim record: refusing %s on a real driver (set MCSIM_REAL_MULTICAST=1 to allow it)\n",
               callTable()[i].symbol);
  return CUDA_ERROR_NOT_PERMITTED;
}

}  // namespace
}  // namespace mcsim::trace

#define MCSIM_TRACE_DECLARE(sym, pfn)
#define MCSIM_TRACE_PRELUDE(i) \
  if (__builtin_expect(::mcsim::trace::gForward[i] == nullptr, 0)) return ::mcsim::trace::missingEntry(i);
#define MCSIM_TRACE_MULTICAST_GUARD(i) \
  if (!::mcsim::trace::gMulticastAllowed) return ::mcsim::trace::refuseMulticast(i);
#define MCSIM_TRACE_FORWARD(sym, pfn, i) reinterpret_cast<pfn>(::mcsim::trace::gForward[i])

#include "trace_wrappers.inc"

namespace {

std::string realPath(const char* p) {
  char buf[PATH_MAX];
  return ::realpath(p, buf) != nullptr ? std::string(buf) : std::string();
}

// The real driver: MCSIM_REAL_LIBCUDA, or the usual places, never this library itself.
void* openRealDriver() {
  Dl_info self{};
  ::dladdr(reinterpret_cast<void*>(&openRealDriver), &self);
  const std::string me = self.dli_fname != nullptr ? realPath(self.dli_fname) : std::string();
  const char* configured = std::getenv("MCSIM_REAL_LIBCUDA");
  const char* candidates[] = {"/usr/lib/x86_64-linux-gnu/libcuda.so.1", "/usr/lib64/libcuda.so.1",
                              "/usr/local/nvidia/lib64/libcuda.so.1", "/usr/lib/wsl/lib/libcuda.so.1",
                              "/usr/local/cuda/compat/libcuda.so.1"};
  std::string tried;
  for (const char* c : candidates) {
    const char* path = configured != nullptr ? configured : c;
    const std::string resolved = realPath(path);
    tried += std::string(tried.empty() ? "" : ", ") + path;
    if (!resolved.empty() && resolved != me) {
      if (void* h = ::dlopen(resolved.c_str(), RTLD_NOW | RTLD_LOCAL)) return h;
      std::fprintf(stderr, "mcsim record: cannot load %s: %s\n", resolved.c_str(), ::dlerror());
    }
    if (configured != nullptr) break;
  }
  std::fprintf(stderr, "mcsim record: no real libcuda.so.1 found (tried %s); set MCSIM_REAL_LIBCUDA\n", tried.c_str());
  return nullptr;
}

__attribute__((constructor)) void startRealRecording() {
  using namespace mcsim::trace;
  const char* mc = std::getenv("MCSIM_REAL_MULTICAST");
  gMulticastAllowed = mc != nullptr && std::strcmp(mc, "1") == 0;
  static_assert(sizeof(kWrapperTable) / sizeof(kWrapperTable[0]) <= sizeof(gForward) / sizeof(gForward[0]),
                "gForward is too small for the call table");
  // The library behind this one must not record as well (it does when it is mcsim's own, as in
  // the tests): it loads with MCSIM_RECORD unset, which is then put back for child processes.
  const char* record = std::getenv("MCSIM_RECORD");
  const std::string recordPath = record != nullptr ? record : "";
  if (record != nullptr) ::unsetenv("MCSIM_RECORD");
  void* real = openRealDriver();
  if (record != nullptr) ::setenv("MCSIM_RECORD", recordPath.c_str(), 1);
  if (real != nullptr) {
    for (size_t i = 0; i < callCount(); ++i) gForward[i] = ::dlsym(real, callTable()[i].symbol);
  }
  startRecorder(Target{"real", nullptr, kWrapperTable, gForward});
}

}  // namespace
