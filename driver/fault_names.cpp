// The cuda.h names a fault plan may use: the CUresults of `return` rules, and the constants of
// argument filters (`handleTypes&CU_MEM_HANDLE_TYPE_FABRIC`, `attribute=CU_DEVICE_ATTRIBUTE_...`).
// The plan parser (fabric/) knows no cuda.h; the driver resolves the names when it installs a plan,
// so a misspelt one is refused with the rule's file and line, like any other plan error.
#include <cuda.h>

#include <cstdint>
#include <map>
#include <set>
#include <string>

#include "driver/cuda_names.h"
#include "fabric/json_source.h"

namespace mcsim::driver {

namespace {

#define MCSIM_NAMED(c) {#c, static_cast<uint64_t>(c)}

const std::map<std::string, uint64_t>& constants() {
  static const std::map<std::string, uint64_t> table = [] {
    std::map<std::string, uint64_t> t = {
        MCSIM_NAMED(CU_MEM_HANDLE_TYPE_NONE),
        MCSIM_NAMED(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR),
        MCSIM_NAMED(CU_MEM_HANDLE_TYPE_WIN32),
        MCSIM_NAMED(CU_MEM_HANDLE_TYPE_WIN32_KMT),
        MCSIM_NAMED(CU_MEM_HANDLE_TYPE_FABRIC),
        MCSIM_NAMED(CU_MEM_ALLOC_GRANULARITY_MINIMUM),
        MCSIM_NAMED(CU_MEM_ALLOC_GRANULARITY_RECOMMENDED),
        MCSIM_NAMED(CU_MULTICAST_GRANULARITY_MINIMUM),
        MCSIM_NAMED(CU_MULTICAST_GRANULARITY_RECOMMENDED),
        MCSIM_NAMED(CU_DEVICE_P2P_ATTRIBUTE_PERFORMANCE_RANK),
        MCSIM_NAMED(CU_DEVICE_P2P_ATTRIBUTE_ACCESS_SUPPORTED),
        MCSIM_NAMED(CU_DEVICE_P2P_ATTRIBUTE_NATIVE_ATOMIC_SUPPORTED),
        MCSIM_NAMED(CU_DEVICE_P2P_ATTRIBUTE_CUDA_ARRAY_ACCESS_SUPPORTED),
        MCSIM_NAMED(CU_GET_PROC_ADDRESS_DEFAULT),
        MCSIM_NAMED(CU_GET_PROC_ADDRESS_LEGACY_STREAM),
        MCSIM_NAMED(CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM),
        MCSIM_NAMED(CU_CTX_SCHED_AUTO),
        MCSIM_NAMED(CU_CTX_SCHED_SPIN),
        MCSIM_NAMED(CU_CTX_SCHED_YIELD),
        MCSIM_NAMED(CU_CTX_SCHED_BLOCKING_SYNC),
        MCSIM_NAMED(CU_CTX_MAP_HOST),
        MCSIM_NAMED(CU_CTX_LMEM_RESIZE_TO_MAX),
    };
#define MCSIM_DEVICE_ATTRIBUTE(name) t.emplace("CU_DEVICE_ATTRIBUTE_" #name, static_cast<uint64_t>(CU_DEVICE_ATTRIBUTE_##name));
#include "driver/device_attributes.def"
#undef MCSIM_DEVICE_ATTRIBUTE
    return t;
  }();
  return table;
}

#undef MCSIM_NAMED

// A constant of an argument filter: a cuda.h constant above, or a CUresult (cuGetErrorName's
// `error`).
bool constantByName(const std::string& name, uint64_t* value) {
  const auto& t = constants();
  if (const auto it = t.find(name); it != t.end()) {
    *value = it->second;
    return true;
  }
  CUresult r = CUDA_SUCCESS;
  if (!resultByName(name, &r)) return false;
  *value = static_cast<uint64_t>(r);
  return true;
}

// The base names of the driver's entry points (entry_points.def): what a rule's point may name.
const std::set<std::string>& entryPointNames() {
  static const std::set<std::string> names = {
#define MCSIM_ENTRY(name, ver, symbol, pfn) #name,
#include "driver/entry_points.def"
#undef MCSIM_ENTRY
  };
  return names;
}

// Whether a rule's point names an entry point (or, as a prefix, at least one).
bool namesAnEntryPoint(const fabric::FaultRule& r) {
  const std::set<std::string>& names = entryPointNames();
  if (!r.prefix) return names.count(r.entry) != 0;
  const auto it = names.lower_bound(r.entry);
  return it != names.end() && it->compare(0, r.entry.size(), r.entry) == 0;
}

}  // namespace

void resolveFaultPlanNames(std::vector<fabric::FaultRule>* rules) {
  for (fabric::FaultRule& r : *rules) {
    if (r.point == fabric::FaultPointKind::kEntryPoint && !namesAnEntryPoint(r)) {
      throw fabric::InputError(r.file, r.line, "'" + r.entry + (r.prefix ? "*" : "") +
                                                   "' is no driver entry point mcsim has (in '" + r.text + "')");
    }
    CUresult code;
    if (r.action == fabric::FaultActionKind::kReturn && !resultByName(r.result, &code)) {
      throw fabric::InputError(r.file, r.line, "'" + r.result + "' is no CUresult name (in '" + r.text + "')");
    }
    for (fabric::ArgFilter& f : r.args) {
      if (f.text) continue;
      for (fabric::ArgValue& v : f.values) {
        if (v.symbol.empty()) continue;
        if (!constantByName(v.symbol, &v.number)) {
          throw fabric::InputError(r.file, r.line, "'" + v.symbol + "' in the filter on '" + f.name +
                                                       "' is no cuda.h constant mcsim knows (handle types, granularity "
                                                       "options, device and P2P attributes, CUresults, ...; or give "
                                                       "the number) (in '" + r.text + "')");
        }
      }
      if (f.op == fabric::ArgOp::kBits && f.values[0].number == 0) {
        throw fabric::InputError(r.file, r.line, "'" + f.values[0].symbol + "' is 0, and & takes a non-zero mask (in '" +
                                                     r.text + "')");
      }
    }
  }
}

}  // namespace mcsim::driver
