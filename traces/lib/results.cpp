#include "traces/lib/results.h"

#include <cstring>

namespace mcsim::trace {

namespace {
struct Named {
  CUresult code;
  const char* name;
};
const Named kResults[] = {
#define MCSIM_RESULT(name, text) {name, #name},
#include "driver/results.def"
#undef MCSIM_RESULT
};
constexpr const char* kUnknownPrefix = "CUDA_RESULT_";
}  // namespace

std::string resultName(CUresult r) {
  for (const Named& n : kResults) {
    if (n.code == r) return n.name;
  }
  return kUnknownPrefix + std::to_string(static_cast<int>(r));
}

bool resultByName(const std::string& name, CUresult* out) {
  for (const Named& n : kResults) {
    if (name == n.name) return *out = n.code, true;
  }
  const size_t len = std::strlen(kUnknownPrefix);
  if (name.compare(0, len, kUnknownPrefix) == 0 && name.size() > len && name.size() < len + 10 &&
      name.find_first_not_of("0123456789", len) == std::string::npos) {
    *out = static_cast<CUresult>(std::stoi(name.substr(len)));
    return true;
  }
  return false;
}

}  // namespace mcsim::trace
