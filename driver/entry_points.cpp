// cuGetProcAddress and cuGetProcAddress_v2: table-driven resolution of versioned entry points.
#include <cuda.h>
#include <cudaTypedefs.h>

#include <cstring>
#include <type_traits>
#include <vector>

#include "driver/driver.h"
#include "driver/unmodelled.h"
#include "mcsim/cuda_multicast_v2.h"

// The table names exact symbols, older variants included.
#include "driver/abi_names.h"


// Declaring every symbol through the header's own function-pointer type makes the compiler
// check the table: a symbol whose signature is not the variant's is a conflicting declaration.
#define MCSIM_ENTRY(name, ver, symbol, pfn) extern "C" std::remove_pointer_t<pfn> symbol;
#include "driver/entry_points.def"
#undef MCSIM_ENTRY

namespace {

struct Entry {
  const char* name;
  int version;
  bool perThread;  // a _ptds / _ptsz variant
  void* fn;
};

constexpr bool endsWith(const char* s, const char* tail) {
  size_t n = 0, m = 0;
  while (s[n] != '\0') ++n;
  while (tail[m] != '\0') ++m;
  if (m > n) return false;
  for (size_t i = 0; i < m; ++i) {
    if (s[n - m + i] != tail[i]) return false;
  }
  return true;
}

const Entry kEntries[] = {
#define MCSIM_ENTRY(name, ver, symbol, pfn) \
  {#name, ver, endsWith(#pfn, "_ptds") || endsWith(#pfn, "_ptsz"), reinterpret_cast<void*>(&symbol)},
#include "driver/entry_points.def"
#undef MCSIM_ENTRY
};

// The functions mcsim does not model (unmodelled.h), as entries; those of version 0 are exported
// but not resolvable.
const std::vector<Entry>& unmodelledTable() {
  // Leaked on purpose: cuGetProcAddress may be called while static destructors run.
  static const std::vector<Entry>* table = new std::vector<Entry>([] {
    std::vector<Entry> t;
    size_t n = 0;
    const mcsim::driver::UnmodelledEntry* u = mcsim::driver::unmodelledEntries(&n);
    for (size_t i = 0; i < n; ++i) {
      if (u[i].version == 0) continue;
      t.push_back(Entry{u[i].name, u[i].version,
                        endsWith(u[i].symbol, "_ptds") || endsWith(u[i].symbol, "_ptsz"), u[i].fn});
    }
    return t;
  }());
  return *table;
}

// Looks `symbol` up. Returns the variant or nullptr, and says why in `status`.
const Entry* lookup(const char* symbol, int cudaVersion, bool perThread, CUdriverProcAddressQueryResult* status) {
  const int driverVersion = mcsim::driver::emulatedDriverVersion();
  const Entry* plain = nullptr;
  const Entry* threaded = nullptr;
  bool exists = false;
  auto consider = [&](const Entry& e) {
    // A variant newer than the emulated driver does not exist in that driver at all.
    if (e.version > driverVersion || std::strcmp(e.name, symbol) != 0) return;
    exists = true;
    if (e.version > cudaVersion) return;
    const Entry*& best = e.perThread ? threaded : plain;
    if (best == nullptr || e.version > best->version) best = &e;
  };
  for (const Entry& e : kEntries) consider(e);
  for (const Entry& e : unmodelledTable()) consider(e);
  const Entry* chosen = (perThread && threaded != nullptr) ? threaded : plain;
  *status = chosen != nullptr ? CU_GET_PROC_ADDRESS_SUCCESS
            : exists          ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
                              : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
  return chosen;
}

// Checks the arguments both entry points share. A negative version asks for the newest variant
// (as the real driver takes it); a version above the driver's is refused.
CUresult checkArguments(const char* symbol, void** pfn, int* cudaVersion, cuuint64_t flags) {
  if (symbol == nullptr || pfn == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const cuuint64_t known = CU_GET_PROC_ADDRESS_LEGACY_STREAM | CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM;
  if ((flags & ~known) != 0) return CUDA_ERROR_INVALID_VALUE;
  const int driverVersion = mcsim::driver::emulatedDriverVersion();
  if (*cudaVersion > driverVersion) return CUDA_ERROR_INVALID_VALUE;
  if (*cudaVersion < 0) *cudaVersion = driverVersion;
  return CUDA_SUCCESS;
}

// DEFAULT means legacy here: mcsim's own code is not compiled for the per-thread stream.
bool perThread(cuuint64_t flags) { return (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0; }

}  // namespace

extern "C" {

// A symbol that is not found is a success with a NULL pointer and the reason in symbolStatus,
// as the reference documents and the real driver does.
CUresult CUDAAPI cuGetProcAddress_v2(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags,
                                     CUdriverProcAddressQueryResult* symbolStatus) {
  MCSIM_FAULT_POINT_ARGS({"symbol", symbol}, {"cudaVersion", cudaVersion}, {"flags", flags});
  MCSIM_TRY(checkArguments(symbol, pfn, &cudaVersion, flags));
  CUdriverProcAddressQueryResult status;
  const Entry* e = lookup(symbol, cudaVersion, perThread(flags), &status);
  *pfn = e != nullptr ? e->fn : nullptr;
  if (symbolStatus != nullptr) *symbolStatus = status;
  return CUDA_SUCCESS;
}

// The CUDA 11.3 form has no status: a symbol not found is CUDA_ERROR_NOT_FOUND, *pfn untouched.
CUresult CUDAAPI cuGetProcAddress(const char* symbol, void** pfn, int cudaVersion, cuuint64_t flags) {
  MCSIM_FAULT_POINT_ARGS({"symbol", symbol}, {"cudaVersion", cudaVersion}, {"flags", flags});
  MCSIM_TRY(checkArguments(symbol, pfn, &cudaVersion, flags));
  CUdriverProcAddressQueryResult status;
  const Entry* e = lookup(symbol, cudaVersion, perThread(flags), &status);
  if (e == nullptr) return CUDA_ERROR_NOT_FOUND;
  *pfn = e->fn;
  return CUDA_SUCCESS;
}

}  // extern "C"
