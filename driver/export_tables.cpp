// cuGetExportTable: the private tables the CUDA runtime (libcudart) asks the driver for before it
// makes any public call. Each table is an array of pointers; the runtime finds it by UUID. The
// UUIDs, the slots the runtime calls and their signatures are documented in docs/runtime.md with
// their sources (ZLUDA's public notes, checked against what CUDA 13.0's runtime asks of mcsim and
// what the real driver answers).
#include "driver/export_tables.h"

#include <pthread.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <mutex>
#include <utility>
#include <vector>

#include "driver/context.h"
#include "driver/driver.h"
#include "driver/runtime_integrity.h"

namespace mcsim::driver {

namespace {

using Slot = const void*;

// Slot 0 of most tables is the table's size in bytes.
template <size_t N>
constexpr Slot sizeSlot() {
  return reinterpret_cast<Slot>(N * sizeof(Slot));
}

// ---- Context-local storage: one value per (context, key); a runtime uses its own key. ----

using StorageDestructor = void (*)(CUcontext, void* key, void* value);

struct StorageEntry {
  CUcontext ctx;
  void* key;
  void* value;
  StorageDestructor destructor;
};

struct ContextStorage {
  std::mutex mu;
  std::vector<StorageEntry> entries;  // in the order they were put (destructors run in reverse)
};

ContextStorage& storage() {
  static ContextStorage* s = new ContextStorage();
  return *s;
}

CUresult resolveContext(CUcontext ctx, CUcontext* out) {
  if (ctx != nullptr) {
    if (!knownContext(ctx)) return CUDA_ERROR_INVALID_CONTEXT;
    *out = ctx;
    return CUDA_SUCCESS;
  }
  CUctx_st* current = nullptr;
  MCSIM_TRY(currentContext(&current));
  *out = current;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI storagePut(CUcontext ctx, void* key, void* value, StorageDestructor destructor) {
  if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  CUcontext c = nullptr;
  MCSIM_TRY(resolveContext(ctx, &c));
  std::lock_guard<std::mutex> lock(storage().mu);
  // A key already present keeps its value: the real driver refuses the second put.
  for (const StorageEntry& e : storage().entries) {
    if (e.ctx == c && e.key == key) return CUDA_ERROR_INVALID_HANDLE;
  }
  storage().entries.push_back(StorageEntry{c, key, value, destructor});
  return CUDA_SUCCESS;
}

CUresult CUDAAPI storageDelete(CUcontext ctx, void* key) {
  if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  CUcontext c = nullptr;
  MCSIM_TRY(resolveContext(ctx, &c));
  std::lock_guard<std::mutex> lock(storage().mu);
  auto& v = storage().entries;
  for (auto it = v.begin(); it != v.end(); ++it) {
    if (it->ctx == c && it->key == key) {
      v.erase(it);
      return CUDA_SUCCESS;
    }
  }
  return CUDA_ERROR_INVALID_HANDLE;
}

CUresult CUDAAPI storageGet(void** value, CUcontext ctx, void* key) {
  if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (value == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUcontext c = nullptr;
  MCSIM_TRY(resolveContext(ctx, &c));
  std::lock_guard<std::mutex> lock(storage().mu);
  for (const StorageEntry& e : storage().entries) {
    if (e.ctx == c && e.key == key) {
      *value = e.value;
      return CUDA_SUCCESS;
    }
  }
  return CUDA_ERROR_INVALID_HANDLE;
}

// ---- The runtime interface. ----

CUresult CUDAAPI runtimePrimaryContext(CUcontext* pctx, CUdevice dev) {
  if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (pctx == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!validDevice(dev)) return CUDA_ERROR_INVALID_DEVICE;
  *pctx = primaryContextObject(dev);
  return CUDA_SUCCESS;
}

// ---- Tools hooks: buffers the runtime writes its callback state into; no tool reads them. ----

void* gToolsWords[1024];
unsigned char gToolsBytes[64];

void CUDAAPI toolsWordBuffer(void** ptr, size_t* size) {
  *ptr = gToolsWords;
  *size = sizeof gToolsWords / sizeof gToolsWords[0];
}

void CUDAAPI toolsByteBuffer(void** ptr, size_t* size) {
  *ptr = gToolsBytes;
  *size = sizeof gToolsBytes;
}

// ---- Context checks. ----

// Whether `ctx` (NULL: the current one) wraps another context; mcsim makes no wrapped contexts.
CUresult CUDAAPI contextUnwrap(CUcontext ctx, unsigned* wrapped, CUcontext* unwrapped) {
  if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  if (wrapped == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUcontext c = nullptr;
  MCSIM_TRY(resolveContext(ctx, &c));
  *wrapped = 0;
  (void)unwrapped;
  return CUDA_SUCCESS;
}

// ---- Slots mcsim does not model. ----

// Every slot the real driver fills and mcsim does not model holds one of these, so that a runtime
// that calls one learns which (instead of jumping to NULL). Arguments are ignored.
void reportUnmodelledSlot(const char* table, int slot) {
  std::fprintf(stderr, "mcsim: the CUDA runtime called slot %d of the driver's private %s table, which mcsim does not "
                       "model; it returns CUDA_ERROR_NOT_SUPPORTED\n", slot, table);
}

template <int kTable, int kSlot>
CUresult CUDAAPI unmodelledSlot();

// ---- The tables (docs/runtime.md lists each slot). ----

CUresult CUDAAPI integrityCheck(unsigned runtimeArgument, unsigned long long timestamp, uint8_t* result);

// Whether the runtime must take a slower, checked path for the current context (the runtime
// compares the answer with 1); the real driver answers 0 for ordinary contexts.
int CUDAAPI contextNeedsChecks() { return 0; }

#define MCSIM_UNMODELLED_SLOT(table, slot) reinterpret_cast<Slot>(&unmodelledSlot<table, slot>)

const Slot kRuntimeInterface[13] = {
    sizeSlot<13>(),
    MCSIM_UNMODELLED_SLOT(0, 1),
    reinterpret_cast<Slot>(&runtimePrimaryContext),
    MCSIM_UNMODELLED_SLOT(0, 3),
    MCSIM_UNMODELLED_SLOT(0, 4),
    MCSIM_UNMODELLED_SLOT(0, 5),
    MCSIM_UNMODELLED_SLOT(0, 6),
    MCSIM_UNMODELLED_SLOT(0, 7),
    MCSIM_UNMODELLED_SLOT(0, 8),
    MCSIM_UNMODELLED_SLOT(0, 9),
    nullptr,  // empty in the real driver too
    MCSIM_UNMODELLED_SLOT(0, 11),
    MCSIM_UNMODELLED_SLOT(0, 12),
};

const Slot kToolsCallbackHooks[7] = {
    sizeSlot<7>(),
    MCSIM_UNMODELLED_SLOT(1, 1),
    reinterpret_cast<Slot>(&toolsWordBuffer),
    MCSIM_UNMODELLED_SLOT(1, 3),
    MCSIM_UNMODELLED_SLOT(1, 4),
    MCSIM_UNMODELLED_SLOT(1, 5),
    reinterpret_cast<Slot>(&toolsByteBuffer),
};

const Slot kToolsTls[3] = {sizeSlot<3>(), MCSIM_UNMODELLED_SLOT(2, 1), MCSIM_UNMODELLED_SLOT(2, 2)};

// The context-local storage table has no size slot: its first slot is already a function.
const Slot kContextStorage[6] = {
    reinterpret_cast<Slot>(&storagePut), reinterpret_cast<Slot>(&storageDelete),
    reinterpret_cast<Slot>(&storageGet), nullptr,
    MCSIM_UNMODELLED_SLOT(3, 4),         MCSIM_UNMODELLED_SLOT(3, 5),
};

const Slot kContextChecks[15] = {
    sizeSlot<15>(),
    MCSIM_UNMODELLED_SLOT(4, 1),
    reinterpret_cast<Slot>(&contextUnwrap),
    reinterpret_cast<Slot>(&contextNeedsChecks),
    MCSIM_UNMODELLED_SLOT(4, 4),
    MCSIM_UNMODELLED_SLOT(4, 5),
    MCSIM_UNMODELLED_SLOT(4, 6),
    MCSIM_UNMODELLED_SLOT(4, 7),
    MCSIM_UNMODELLED_SLOT(4, 8),
    MCSIM_UNMODELLED_SLOT(4, 9),
    MCSIM_UNMODELLED_SLOT(4, 10),
    MCSIM_UNMODELLED_SLOT(4, 11),
    MCSIM_UNMODELLED_SLOT(4, 12),
    MCSIM_UNMODELLED_SLOT(4, 13),
    MCSIM_UNMODELLED_SLOT(4, 14),
};

const Slot kIntegrity[3] = {sizeSlot<3>(), reinterpret_cast<Slot>(&integrityCheck), MCSIM_UNMODELLED_SLOT(5, 2)};

struct Table {
  const char* name;
  uint8_t uuid[16];
  const Slot* slots;
};

const Table kTables[] = {
    {"runtime interface",
     {0x6b, 0xd5, 0xfb, 0x6c, 0x5b, 0xf4, 0xe7, 0x4a, 0x89, 0x87, 0xd9, 0x39, 0x12, 0xfd, 0x9d, 0xf9},
     kRuntimeInterface},
    {"tools callback hooks",
     {0xa0, 0x94, 0x79, 0x8c, 0x2e, 0x74, 0x2e, 0x74, 0x93, 0xf2, 0x08, 0x00, 0x20, 0x0c, 0x0a, 0x66},
     kToolsCallbackHooks},
    {"tools TLS",
     {0x42, 0xd8, 0x5a, 0x81, 0x23, 0xf6, 0xcb, 0x47, 0x82, 0x98, 0xf6, 0xe7, 0x8a, 0x3a, 0xec, 0xdc},
     kToolsTls},
    {"context-local storage",
     {0xc6, 0x93, 0x33, 0x6e, 0x11, 0x21, 0xdf, 0x11, 0xa8, 0xc3, 0x68, 0xf3, 0x55, 0xd8, 0x95, 0x93},
     kContextStorage},
    {"context checks",
     {0x26, 0x3e, 0x88, 0x60, 0x7c, 0xd2, 0x61, 0x43, 0x92, 0xf6, 0xbb, 0xd5, 0x00, 0x6d, 0xfa, 0x7e},
     kContextChecks},
    {"integrity check",
     {0xd4, 0x08, 0x20, 0x55, 0xbd, 0xe6, 0x70, 0x4b, 0x8d, 0x34, 0xba, 0x12, 0x3c, 0x66, 0xe1, 0xf2},
     kIntegrity},
};

template <int kTable, int kSlot>
CUresult CUDAAPI unmodelledSlot() {
  static std::once_flag once;
  std::call_once(once, [] { reportUnmodelledSlot(kTables[kTable].name, kSlot); });
  return CUDA_ERROR_NOT_SUPPORTED;
}

// The answer for runtime arguments ending in 0 and 1 is a constant (the real driver's; ZLUDA
// records it too); for the others it is the HMAC (runtime_integrity.h).
constexpr uint8_t kFixedIntegrityAnswer[16] = {0x5c, 0x67, 0xcb, 0x03, 0x1c, 0x18, 0x41, 0x33,
                                               0xe8, 0xd1, 0x4c, 0x1f, 0xaa, 0x83, 0xd3, 0x8e};

CUresult CUDAAPI integrityCheck(unsigned runtimeArgument, unsigned long long timestamp, uint8_t* result) {
  if (result == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (runtimeArgument % 10 < 2) {
    std::memcpy(result, kFixedIntegrityAnswer, 16);
    if (runtimeArgument % 10 == 1) result[7] = 24;
    return CUDA_SUCCESS;
  }
  if (!initialized()) return CUDA_ERROR_NOT_INITIALIZED;
  IntegrityInput in{};
  in.driverVersion = static_cast<uint32_t>(emulatedDriverVersion());
  in.runtimeArgument = runtimeArgument;
  in.processId = static_cast<uint32_t>(getpid());
  in.threadId = static_cast<uint32_t>(pthread_self());  // the low half, as the real driver hashes it
  in.runtimeInterfaceTable = reinterpret_cast<uint64_t>(kRuntimeInterface);
  in.integrityTable = reinterpret_cast<uint64_t>(kIntegrity);
  in.checkFunction = reinterpret_cast<uint64_t>(&integrityCheck);
  in.timestamp = timestamp;
  std::vector<IntegrityDevice> devices;
  for (int d = 0; d < state().deviceCount; ++d) {
    const auto& attr = state().attributes[static_cast<size_t>(d)];
    devices.push_back(IntegrityDevice{deviceUuid(d), static_cast<uint32_t>(attr[CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID]),
                                      static_cast<uint32_t>(attr[CU_DEVICE_ATTRIBUTE_PCI_BUS_ID]),
                                      static_cast<uint32_t>(attr[CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID])});
  }
  integrityHash(in, devices, result);
  return CUDA_SUCCESS;
}

}  // namespace

void runContextStorageDestructors(CUcontext ctx) {
  std::vector<StorageEntry> mine;
  {
    std::lock_guard<std::mutex> lock(storage().mu);
    auto& v = storage().entries;
    for (auto it = v.begin(); it != v.end();) {
      if (it->ctx == ctx) {
        mine.push_back(*it);
        it = v.erase(it);
      } else {
        ++it;
      }
    }
  }
  // Last put, first destroyed, as the real driver does (a later runtime may use an earlier one's
  // state). A deleted entry's destructor never runs.
  for (auto it = mine.rbegin(); it != mine.rend(); ++it) {
    if (it->destructor != nullptr) it->destructor(it->ctx, it->key, it->value);
  }
}

}  // namespace mcsim::driver

using namespace mcsim::driver;

extern "C" CUresult CUDAAPI cuGetExportTable(const void** ppExportTable, const CUuuid* pExportTableId) {
  MCSIM_FAULT_POINT();
  if (ppExportTable == nullptr || pExportTableId == nullptr) return CUDA_ERROR_INVALID_VALUE;
  for (const Table& t : kTables) {
    if (std::memcmp(t.uuid, pExportTableId->bytes, 16) == 0) {
      *ppExportTable = t.slots;
      return CUDA_SUCCESS;
    }
  }
  // Among the unknown: f8cff951-2146-8b4e-b9e2-fb469e7c0dd9, which the runtime asks for first and
  // does without (docs/runtime.md).
  return CUDA_ERROR_INVALID_VALUE;
}
