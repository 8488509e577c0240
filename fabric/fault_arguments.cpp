#include "fabric/fault_arguments.h"

#include <map>
#include <sstream>

namespace mcsim::fabric {

namespace {

std::vector<FaultArgumentSpec> parseSpecs(const char* list) {
  std::vector<FaultArgumentSpec> out;
  std::istringstream in(list);
  for (std::string w; in >> w;) {
    FaultArgumentSpec s;
    const auto colon = w.find(':');
    s.text = colon != std::string::npos && w.substr(colon + 1) == "string";
    s.name = w.substr(0, colon);
    out.push_back(s);
  }
  return out;
}

struct Table {
  std::vector<std::pair<std::string, std::vector<FaultArgumentSpec>>> ordered;
  std::map<std::string, size_t> index;
  Table() {
#define MCSIM_FAULT_ARGUMENTS(entry, names)                     \
  index.emplace(#entry, ordered.size());                        \
  ordered.emplace_back(#entry, parseSpecs(names));
#include "fabric/fault_arguments.def"
#undef MCSIM_FAULT_ARGUMENTS
  }
};

// Leaked on purpose: every driver call under a plan looks its entry up here, and libraries call
// the driver while static destructors run (NCCL's CUDA runtime unloads its modules from
// libnccl.so.2's destructors, after the driver's statics would be gone).
const Table& table() {
  static const Table* t = new Table();
  return *t;
}

std::string describe(const std::vector<FaultArgumentSpec>* specs) {
  std::string out;
  if (specs != nullptr) {
    for (const auto& s : *specs) out += (out.empty() ? "" : " ") + s.name + (s.text ? ":string" : "");
  }
  return "\"" + out + "\"";
}

}  // namespace

const std::vector<FaultArgumentSpec>* faultArgumentsOf(const std::string& entry) {
  const Table& t = table();
  const auto it = t.index.find(entry);
  return it == t.index.end() ? nullptr : &t.ordered[it->second].second;
}

const std::vector<std::pair<std::string, std::vector<FaultArgumentSpec>>>& faultArgumentTable() {
  return table().ordered;
}

bool reportsTableArguments(const std::string& entry, const FaultArgument* args, size_t n, std::string* problem) {
  const std::vector<FaultArgumentSpec>* specs = faultArgumentsOf(entry);
  bool same = n == (specs == nullptr ? 0 : specs->size());
  for (size_t i = 0; same && i < n; ++i) {
    const FaultArgumentSpec& s = (*specs)[i];
    same = s.name == args[i].name && s.text == args[i].isText;
  }
  if (same) return true;
  std::vector<FaultArgumentSpec> reported;
  for (size_t i = 0; i < n; ++i) reported.push_back({args[i].name, args[i].isText});
  *problem = entry + " reports the fault arguments " + describe(&reported) + ", but fabric/fault_arguments.def lists " +
             describe(specs);
  return false;
}

}  // namespace mcsim::fabric
