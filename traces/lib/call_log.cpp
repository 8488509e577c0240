// The driver call log (call_log.h).
#include "traces/lib/call_log.h"

#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <vector>

#include "model/status.h"
#include "traces/lib/call_desc.h"
#include "traces/lib/results.h"

namespace mcsim::trace {

bool gLogging = false;

namespace {

bool gEveryCall = false;                    // INFO: every call; WARN: failing ones
// By call-table index: its subsystem is logged. A pointer, constant-initialised: the log starts
// from a constructor of another translation unit, before this one's dynamic initialisers run.
const std::vector<bool>* gSelected = nullptr;
thread_local int tDepth = 0;

const char* const kSubsystems[] = {"INIT", "CTX", "MEM", "VMM", "MULTICAST", "STREAM", "LAUNCH", "GRAPH", "IPC", "OTHER"};

bool startsWith(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

// The names of an MCSIM_DEBUG_SUBSYS list, past its leading '^' if any ("" gives none).
std::vector<std::string> subsystemNames(const std::string& spec) {
  std::vector<std::string> names;
  if (spec.empty()) return names;
  for (size_t at = spec[0] == '^' ? 1 : 0; at <= spec.size();) {
    size_t comma = spec.find(',', at);
    if (comma == std::string::npos) comma = spec.size();
    names.push_back(spec.substr(at, comma - at));
    at = comma + 1;
  }
  return names;
}

// One argument as the log shows it: numbers in decimal, addresses and pointers in hex, strings
// quoted.
std::string argText(const ParamDesc& p, uint64_t slot) {
  char text[96];
  if (p.kind == Kind::kStrIn) {
    const char* s = reinterpret_cast<const char*>(static_cast<uintptr_t>(slot));
    if (s == nullptr) return "NULL";
    std::snprintf(text, sizeof text, "\"%.64s\"", s);
    return text;
  }
  switch (p.ctype) {
    case CType::kI32: std::snprintf(text, sizeof text, "%d", static_cast<int32_t>(slot)); break;
    case CType::kU32: std::snprintf(text, sizeof text, "%u", static_cast<uint32_t>(slot)); break;
    case CType::kI64: std::snprintf(text, sizeof text, "%" PRId64, static_cast<int64_t>(slot)); break;
    case CType::kF32: {
      float f;
      const uint32_t bits = static_cast<uint32_t>(slot);
      std::memcpy(&f, &bits, sizeof f);
      std::snprintf(text, sizeof text, "%g", static_cast<double>(f));
      break;
    }
    case CType::kPtr:
      if (slot == 0) return "NULL";
      std::snprintf(text, sizeof text, "0x%" PRIx64, slot);
      break;
    case CType::kU64:
      if (p.kind == Kind::kAddrIn) {
        std::snprintf(text, sizeof text, "0x%" PRIx64, slot);
      } else {
        std::snprintf(text, sizeof text, "%" PRIu64, slot);
      }
      break;
  }
  return text;
}

// What a successful call made, for INFO: the new handle or address it wrote.
std::string outputsText(const CallDesc& c, const uint64_t* slots) {
  std::string out;
  for (int i = 0; i < c.nparams; ++i) {
    const ParamDesc& p = c.params[i];
    const bool made = p.kind == Kind::kHandleNew || p.kind == Kind::kAddrNew || p.kind == Kind::kHandleOut ||
                      p.kind == Kind::kAddrOut;
    if (!made || slots[i] == 0) continue;
    uint64_t v = 0;
    std::memcpy(&v, reinterpret_cast<const void*>(static_cast<uintptr_t>(slots[i])), sizeof v);
    char text[64];
    std::snprintf(text, sizeof text, p.kind == Kind::kAddrNew || p.kind == Kind::kAddrOut ? "%s0x%" PRIx64 : "%s%" PRIu64,
                  out.empty() ? "" : ", ", v);
    out += std::string(p.name) + "=" + text;
  }
  return out;
}

// Results that answer a question rather than fail: NOT_READY (a query of unfinished work), an
// export table or entry point the driver does not have (the CUDA runtime probes for tables it can
// do without, and libraries look up entry points of newer drivers). WARN leaves them out.
bool isAnswer(const std::string& base, CUresult r) {
  if (r == CUDA_ERROR_NOT_READY) return true;
  if (base == "cuGetExportTable") return true;
  return startsWith(base, "cuGetProcAddress") && r == CUDA_ERROR_NOT_FOUND;
}

}  // namespace

const char* subsystemOf(const std::string& b) {
  if (startsWith(b, "cuMulticast")) return "MULTICAST";
  static const char* const kVmm[] = {"cuMemCreate", "cuMemRelease", "cuMemMap", "cuMemUnmap", "cuMemAddressReserve",
                                     "cuMemAddressFree", "cuMemSetAccess", "cuMemGetAccess",
                                     "cuMemExportToShareableHandle", "cuMemImportFromShareableHandle",
                                     "cuMemGetAllocationGranularity", "cuMemGetAllocationPropertiesFromHandle",
                                     "cuMemRetainAllocationHandle"};
  for (const char* v : kVmm) {
    if (b == v) return "VMM";
  }
  if (startsWith(b, "cuMem") || startsWith(b, "cuPointer")) return "MEM";
  if (startsWith(b, "cuIpc")) return "IPC";
  if (startsWith(b, "cuGraph")) return "GRAPH";
  if (startsWith(b, "cuStream") || startsWith(b, "cuEvent") || b == "cuLaunchHostFunc") return "STREAM";
  if (startsWith(b, "cuCtx") || startsWith(b, "cuDevicePrimaryCtx")) return "CTX";
  if (startsWith(b, "cuLaunch") || startsWith(b, "cuModule") || startsWith(b, "cuLibrary") ||
      startsWith(b, "cuFunc") || startsWith(b, "cuKernel") || startsWith(b, "cuLink") || startsWith(b, "cuOccupancy")) {
    return "LAUNCH";
  }
  if (b == "cuInit" || startsWith(b, "cuDevice") || b == "cuDriverGetVersion" || startsWith(b, "cuGetProcAddress") ||
      b == "cuGetExportTable" || startsWith(b, "cuGetError")) {
    return "INIT";
  }
  return "OTHER";
}

bool subsystemSelected(const std::string& spec, const std::string& subsystem) {
  if (spec.empty()) return true;
  bool listed = false;
  for (const std::string& name : subsystemNames(spec)) listed = listed || name == "ALL" || name == subsystem;
  return spec[0] == '^' ? !listed : listed;
}

void startCallLog(const settings::Settings& s) {
  if (s.debug.empty()) return;
  // Names the log does not know are said once; the others still count.
  for (const std::string& name : subsystemNames(s.debugSubsys)) {
    bool known = name == "ALL";
    for (const char* k : kSubsystems) known = known || name == k;
    if (!known) {
      std::fprintf(stderr, "mcsim: MCSIM_DEBUG_SUBSYS: unknown subsystem '%s' (known: ALL", name.c_str());
      for (const char* k : kSubsystems) std::fprintf(stderr, ", %s", k);
      std::fprintf(stderr, ")\n");
    }
  }
  auto* selected = new std::vector<bool>(callCount(), false);  // kept for the process's life
  for (size_t i = 0; i < callCount(); ++i) {
    (*selected)[i] = subsystemSelected(s.debugSubsys, subsystemOf(callTable()[i].base));
  }
  gSelected = selected;
  gEveryCall = s.debug == "INFO";
  gLogging = true;
  gExplainFailures = true;
}

CallLog::CallLog(int call, const uint64_t* slots) : call_(call), slots_(slots), outermost_(tDepth == 0) {
  ++tDepth;
  if (outermost_ && gLogging) clearFailureReason();
}

CallLog::~CallLog() { --tDepth; }

CUresult CallLog::finish(CUresult r) {
  // Kept by every wrapper that records, logging or not.
  if (!gLogging || !outermost_ || !(*gSelected)[static_cast<size_t>(call_)]) return r;
  const CallDesc& c = callTable()[call_];
  const bool failed = r != CUDA_SUCCESS && !isAnswer(c.base, r);
  if (!failed && !gEveryCall) return r;
  std::string line = c.symbol;
  line += "(";
  for (int i = 0; i < c.nparams && c.params != nullptr; ++i) {
    if (i > 0) line += ", ";
    line += std::string(c.params[i].name) + "=" + argText(c.params[i], slots_[i]);
  }
  line += ") = " + resultName(r);
  const std::string why = takeFailureReason();
  if (failed && !why.empty()) line += ": " + why;
  if (r == CUDA_SUCCESS && c.params != nullptr) {
    const std::string made = outputsText(c, slots_);
    if (!made.empty()) line += " -> " + made;
  }
  std::fprintf(stderr, "mcsim[%d] %s %s\n", static_cast<int>(::getpid()), failed ? "WARN" : "INFO", line.c_str());
  return r;
}

}  // namespace mcsim::trace
