// mcsim's NVTX injection library (docs/timeline.md): a program's nvtxRangePush / Pop, marks and
// start / end ranges, in the default domain and in its own, drawn on mcsim's timeline.
//
// How an injection library attaches, from the toolkit's NVTX headers (nvtxDetail/nvtxInit.h,
// nvtxTypes.h, nvtxImpl.h): the first NVTX call of a program dlopens the library that
// NVTX_INJECTION64_PATH names and calls its InitializeInjectionNvtx2 with NVTX's export-table
// getter. The callbacks table (NVTX_ETID_CALLBACKS) hands out, per module (CORE, CORE2 ...), an
// array of pointers to the slots NVTX calls through; the library writes its functions into the
// slots it implements, and the rest stay no-ops. A nonzero return says it attached.
#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>  // with NVTX_NO_IMPL: the types and callback ids (nvtxDetail/nvtxTypes.h) only

#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "driver/nvtx_bridge.h"

// The handles NVTX hands the program are pointers to the tool's own objects.
struct nvtxDomainRegistration_st {
  std::string name;
};
struct nvtxStringRegistration_st {
  std::string text;
};

namespace {

// Domains and registered strings live as long as the process (NVTX never frees a string).
std::mutex gRegistryMu;
std::vector<std::unique_ptr<nvtxDomainRegistration_st>> gDomains;
std::vector<std::unique_ptr<nvtxStringRegistration_st>> gStrings;

std::string narrow(const wchar_t* w) {
  std::string s;
  for (; w != nullptr && *w != 0; ++w) s.push_back(*w >= 0x20 && *w < 0x7f ? static_cast<char>(*w) : '?');
  return s;
}

// The message of an event's attributes, whatever its type; "" when it has none.
std::string messageOf(const nvtxEventAttributes_t* a) {
  if (a == nullptr || a->size < offsetof(nvtxEventAttributes_t, message) + sizeof(a->message)) return "";
  switch (a->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII: return a->message.ascii != nullptr ? a->message.ascii : "";
    case NVTX_MESSAGE_TYPE_UNICODE: return narrow(a->message.unicode);
    case NVTX_MESSAGE_TYPE_REGISTERED:
      return a->message.registered != nullptr ? a->message.registered->text : "";
    default: return "";
  }
}

const char* domainName(nvtxDomainHandle_t d) { return d != nullptr ? d->name.c_str() : nullptr; }

// The default domain.
void markEx(const nvtxEventAttributes_t* a) { mcsim_nvtx_mark(nullptr, messageOf(a).c_str()); }
void markA(const char* m) { mcsim_nvtx_mark(nullptr, m); }
void markW(const wchar_t* m) { mcsim_nvtx_mark(nullptr, narrow(m).c_str()); }
nvtxRangeId_t rangeStartEx(const nvtxEventAttributes_t* a) { return mcsim_nvtx_start(nullptr, messageOf(a).c_str()); }
nvtxRangeId_t rangeStartA(const char* m) { return mcsim_nvtx_start(nullptr, m); }
nvtxRangeId_t rangeStartW(const wchar_t* m) { return mcsim_nvtx_start(nullptr, narrow(m).c_str()); }
void rangeEnd(nvtxRangeId_t id) { mcsim_nvtx_end(id); }
int rangePushEx(const nvtxEventAttributes_t* a) { return mcsim_nvtx_push(nullptr, messageOf(a).c_str()); }
int rangePushA(const char* m) { return mcsim_nvtx_push(nullptr, m); }
int rangePushW(const wchar_t* m) { return mcsim_nvtx_push(nullptr, narrow(m).c_str()); }
int rangePop() { return mcsim_nvtx_pop(nullptr); }

// Domains.
void domainMarkEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  mcsim_nvtx_mark(domainName(d), messageOf(a).c_str());
}
nvtxRangeId_t domainRangeStartEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  return mcsim_nvtx_start(domainName(d), messageOf(a).c_str());
}
void domainRangeEnd(nvtxDomainHandle_t, nvtxRangeId_t id) { mcsim_nvtx_end(id); }
int domainRangePushEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  return mcsim_nvtx_push(domainName(d), messageOf(a).c_str());
}
int domainRangePop(nvtxDomainHandle_t d) { return mcsim_nvtx_pop(domainName(d)); }
nvtxStringHandle_t registerString(std::string text) {
  std::lock_guard<std::mutex> lock(gRegistryMu);
  gStrings.push_back(std::make_unique<nvtxStringRegistration_st>(nvtxStringRegistration_st{std::move(text)}));
  return gStrings.back().get();
}
nvtxStringHandle_t domainRegisterStringA(nvtxDomainHandle_t, const char* s) { return registerString(s != nullptr ? s : ""); }
nvtxStringHandle_t domainRegisterStringW(nvtxDomainHandle_t, const wchar_t* s) { return registerString(narrow(s)); }
nvtxDomainHandle_t createDomain(std::string name) {
  std::lock_guard<std::mutex> lock(gRegistryMu);
  gDomains.push_back(std::make_unique<nvtxDomainRegistration_st>(nvtxDomainRegistration_st{std::move(name)}));
  return gDomains.back().get();
}
nvtxDomainHandle_t domainCreateA(const char* name) { return createDomain(name != nullptr ? name : ""); }
nvtxDomainHandle_t domainCreateW(const wchar_t* name) { return createDomain(narrow(name)); }
// A destroyed domain's handle stays valid memory (its ranges may still be open); NVTX forbids
// using it again, and nothing here depends on it being used or not.
void domainDestroy(nvtxDomainHandle_t) {}

// Writes `fn` into slot `id` of a module's table of `size` slots.
template <typename Fn>
void install(NvtxFunctionTable table, unsigned size, unsigned id, Fn fn) {
  if (table != nullptr && id < size && table[id] != nullptr) *table[id] = reinterpret_cast<NvtxFunctionPointer>(fn);
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t getTable) {
  if (getTable == nullptr || mcsim_nvtx_attach(MCSIM_NVTX_BRIDGE_VERSION) == 0) return 0;
  const auto* callbacks = static_cast<const NvtxExportTableCallbacks*>(getTable(NVTX_ETID_CALLBACKS));
  if (callbacks == nullptr || callbacks->struct_size < sizeof(NvtxExportTableCallbacks) ||
      callbacks->GetModuleFunctionTable == nullptr) {
    return 0;
  }
  NvtxFunctionTable core = nullptr;
  unsigned coreSize = 0;
  if (callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &core, &coreSize) == 0) return 0;
  install(core, coreSize, NVTX_CBID_CORE_MarkEx, markEx);
  install(core, coreSize, NVTX_CBID_CORE_MarkA, markA);
  install(core, coreSize, NVTX_CBID_CORE_MarkW, markW);
  install(core, coreSize, NVTX_CBID_CORE_RangeStartEx, rangeStartEx);
  install(core, coreSize, NVTX_CBID_CORE_RangeStartA, rangeStartA);
  install(core, coreSize, NVTX_CBID_CORE_RangeStartW, rangeStartW);
  install(core, coreSize, NVTX_CBID_CORE_RangeEnd, rangeEnd);
  install(core, coreSize, NVTX_CBID_CORE_RangePushEx, rangePushEx);
  install(core, coreSize, NVTX_CBID_CORE_RangePushA, rangePushA);
  install(core, coreSize, NVTX_CBID_CORE_RangePushW, rangePushW);
  install(core, coreSize, NVTX_CBID_CORE_RangePop, rangePop);
  NvtxFunctionTable core2 = nullptr;
  unsigned core2Size = 0;
  if (callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &core2, &core2Size) != 0) {
    install(core2, core2Size, NVTX_CBID_CORE2_DomainMarkEx, domainMarkEx);
    install(core2, core2Size, NVTX_CBID_CORE2_DomainRangeStartEx, domainRangeStartEx);
    install(core2, core2Size, NVTX_CBID_CORE2_DomainRangeEnd, domainRangeEnd);
    install(core2, core2Size, NVTX_CBID_CORE2_DomainRangePushEx, domainRangePushEx);
    install(core2, core2Size, NVTX_CBID_CORE2_DomainRangePop, domainRangePop);
    install(core2, core2Size, NVTX_CBID_CORE2_DomainRegisterStringA, domainRegisterStringA);
    install(core2, core2Size, NVTX_CBID_CORE2_DomainRegisterStringW, domainRegisterStringW);
    install(core2, core2Size, NVTX_CBID_CORE2_DomainCreateA, domainCreateA);
    install(core2, core2Size, NVTX_CBID_CORE2_DomainCreateW, domainCreateW);
    install(core2, core2Size, NVTX_CBID_CORE2_DomainDestroy, domainDestroy);
  }
  return 1;
}
