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
#include <vector>

#include "settings/settings.h"
#include "traces/lib/wrapper_prologue.h"

namespace mcsim::trace {
namespace {

// Filled before main from the real library; nullptr where it lacks the symbol.
void* gForward[512];

// Pure queries the recorder itself makes to name a launch's function and read its parameter
// layout (CUDA 12.3 / 12.4 and later; nullptr on older drivers).
using GetName = CUresult(CUDAAPI*)(const char**, void*);
using GetParamInfo = CUresult(CUDAAPI*)(void*, size_t, size_t*, size_t*);
GetName gFuncGetName = nullptr, gKernelGetName = nullptr;
GetParamInfo gFuncGetParamInfo = nullptr, gKernelGetParamInfo = nullptr;
bool gWarnedLayout = false;

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

// The launch's function as the real driver describes it: its name (the label it was looked up by,
// else cuFuncGetName / cuKernelGetName) and its parameters (cuFuncGetParamInfo /
// cuKernelGetParamInfo, read until the driver says there are no more). Queries only.
bool describeRealFunction(uint64_t f, bool isKernel, const std::string& label, FunctionInfo* out) {
  void* h = reinterpret_cast<void*>(static_cast<uintptr_t>(f));
  out->name = label;
  if (out->name.empty()) {
    const char* name = nullptr;
    const GetName get = isKernel ? gKernelGetName : gFuncGetName;
    if (get != nullptr && get(&name, h) == CUDA_SUCCESS && name != nullptr) out->name = name;
  }
  const GetParamInfo info = isKernel ? gKernelGetParamInfo : gFuncGetParamInfo;
  size_t offset = 0, size = 0;
  // A driver may export the query without answering it (mcsim's libcuda.so.1 exports every real
  // function, unmodelled ones returning CUDA_ERROR_NOT_SUPPORTED): that is no query.
  const CUresult first = info != nullptr ? info(h, 0, &offset, &size) : CUDA_ERROR_NOT_SUPPORTED;
  if (first != CUDA_ERROR_NOT_SUPPORTED) {
    std::vector<uint64_t> offsets, sizes;
    for (size_t i = 0; i < 1024; ++i) {
      if (i > 0) offset = size = 0;
      if ((i == 0 ? first : info(h, i, &offset, &size)) != CUDA_SUCCESS) break;
      offsets.push_back(offset);
      sizes.push_back(size);
    }
    // A kernel without parameters answers the first index with an error too: an empty layout.
    out->layout = "param_info";
    out->offsets = std::move(offsets);
    out->sizes = std::move(sizes);
    return true;
  }
  if (!gWarnedLayout) {
    gWarnedLayout = true;
    std::fprintf(stderr, "mcsim record: the real driver has no working %s, so the parameters of launches of kernels other than "
                 "mcsim's kernel library are recorded without their values (flagged layout \"unknown\")\n",
                 isKernel ? "cuKernelGetParamInfo" : "cuFuncGetParamInfo");
  }
  return true;
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

// The real driver: MCSIM_REAL_LIBCUDA (`configuredPath`), or the usual places, never this library
// itself.
void* openRealDriver(const std::string& configuredPath) {
  Dl_info self{};
  ::dladdr(reinterpret_cast<void*>(&openRealDriver), &self);
  const std::string me = self.dli_fname != nullptr ? realPath(self.dli_fname) : std::string();
  const char* configured = configuredPath.empty() ? nullptr : configuredPath.c_str();
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
  // This library has no cuInit of its own to check the settings at: they are checked as it loads.
  const mcsim::settings::Settings settings = mcsim::settings::fromEnvironment();
  gMulticastAllowed = settings.realMulticast;
  static_assert(sizeof(kWrapperTable) / sizeof(kWrapperTable[0]) <= sizeof(gForward) / sizeof(gForward[0]),
                "gForward is too small for the call table");
  // The library behind this one must not record as well (it does when it is mcsim's own, as in
  // the tests): it loads with MCSIM_RECORD unset, which is then put back for child processes.
  const std::string& record = settings.record;
  if (!record.empty()) ::unsetenv("MCSIM_RECORD");
  void* real = openRealDriver(settings.realLibcuda);
  if (!record.empty()) ::setenv("MCSIM_RECORD", record.c_str(), 1);
  if (real != nullptr) {
    for (size_t i = 0; i < callCount(); ++i) gForward[i] = ::dlsym(real, callTable()[i].symbol);
    gFuncGetName = reinterpret_cast<GetName>(::dlsym(real, "cuFuncGetName"));
    gKernelGetName = reinterpret_cast<GetName>(::dlsym(real, "cuKernelGetName"));
    gFuncGetParamInfo = reinterpret_cast<GetParamInfo>(::dlsym(real, "cuFuncGetParamInfo"));
    gKernelGetParamInfo = reinterpret_cast<GetParamInfo>(::dlsym(real, "cuKernelGetParamInfo"));
  }
  startRecorder(Target{"real", nullptr, kWrapperTable, gForward, &describeRealFunction}, settings);
}

}  // namespace
