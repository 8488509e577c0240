// The generated table of entry points (traces/gen_wrappers.py -> trace_calls.inc).
#include "traces/lib/call_desc.h"

#include <cudaTypedefs.h>

#include <algorithm>
#include <string>
#include <vector>

#include "driver/abi_names.h"
#include "mcsim/cuda_multicast_v2.h"


namespace mcsim::trace {
namespace {
#include "trace_calls.inc"

// Symbols sorted by name, for findCall.
const std::vector<std::pair<std::string_view, int>>& sortedSymbols() {
  static const std::vector<std::pair<std::string_view, int>> v = [] {
    std::vector<std::pair<std::string_view, int>> out;
    for (size_t i = 0; i < sizeof(kCallTable) / sizeof(kCallTable[0]); ++i) {
      out.emplace_back(kCallTable[i].symbol, static_cast<int>(i));
    }
    std::sort(out.begin(), out.end());
    return out;
  }();
  return v;
}
}  // namespace

const CallDesc* callTable() { return kCallTable; }
size_t callCount() { return sizeof(kCallTable) / sizeof(kCallTable[0]); }

int findCall(std::string_view symbol) {
  const auto& v = sortedSymbols();
  auto it = std::lower_bound(v.begin(), v.end(), std::make_pair(symbol, -1));
  return (it != v.end() && it->first == symbol) ? it->second : -1;
}

}  // namespace mcsim::trace
