#include "fabric/work_slice.h"

#include <cxxabi.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include <nlohmann/json.hpp>

#include "fabric/node_model.h"

namespace mcsim::fabric {

namespace {

// Where one side of a copy is, as a reader of the timeline names it.
std::string placeOf(const MemoryRef& m) {
  if (m.device) return "GPU " + std::to_string(m.gpu);
  return m.pageable ? "host (pageable)" : "host (pinned)";
}

std::string copyName(const MemoryRef& src, const MemoryRef& dst) {
  if (!src.device && !dst.device) return "copy HtoH";
  if (!src.device) return "copy HtoD";
  if (!dst.device) return "copy DtoH";
  if (src.gpu != dst.gpu) return "copy PtoP";
  return "copy DtoD";
}

// A kernel's parameter bytes as the 8-byte little-endian words they mostly are (pointers, sizes),
// the last one padded with zeros.
nlohmann::json parameterWords(const std::vector<uint8_t>& params) {
  nlohmann::json words = nlohmann::json::array();
  for (size_t i = 0; i < params.size(); i += 8) {
    uint64_t w = 0;
    std::memcpy(&w, params.data() + i, std::min<size_t>(8, params.size() - i));
    char text[24];
    std::snprintf(text, sizeof text, "0x%" PRIx64, w);
    words.push_back(text);
  }
  return words;
}

// A kernel's name as its source spells it (`rt_scale(float*, float, int)`), as profilers show it;
// the symbol itself when it is not a C++ one.
std::string demangled(const std::string& symbol) {
  int status = 0;
  char* text = abi::__cxa_demangle(symbol.c_str(), nullptr, nullptr, &status);
  std::string name = status == 0 && text != nullptr ? text : symbol;
  std::free(text);
  return name;
}

}  // namespace

model::SliceDetail describeWork(const DeviceOp& op, const DeviceWork& w) {
  model::SliceDetail d;
  d.flowIn = op.flowId;
  nlohmann::json args = nlohmann::json::object();
  switch (op.kind) {
    case DeviceOp::Kind::kKernel: {
      d.category = "kernel";
      if (demangled(op.label) != op.label) args["symbol"] = op.label;
      args["grid"] = {op.gridX, op.gridY, op.gridZ};
      args["block"] = {op.blockX, op.blockY, op.blockZ};
      if (op.dynamicShared != 0) args["dynamic shared bytes"] = op.dynamicShared;
      if (op.ptxModule != 0) {
        args["runs"] = "PTX";
        args["parameters (8-byte words)"] = parameterWords(op.params);
      } else {
        uint64_t bytes = 0;
        for (const ResolvedStep& s : w.steps) bytes += s.bytes;
        args["runs"] = "behavioural model";
        args["steps"] = w.steps.size();
        args["bytes"] = bytes;
      }
      break;
    }
    case DeviceOp::Kind::kCopy:
      d.category = "copy";
      args["bytes"] = op.bytes;
      if (!w.pieces.empty()) {
        args["from"] = placeOf(w.pieces.front().src);
        args["to"] = placeOf(w.pieces.front().dst);
      }
      break;
    case DeviceOp::Kind::kFill:
      d.category = "memset";
      args["bytes"] = op.count * op.elementBytes;
      args["element bytes"] = op.elementBytes;
      args["value"] = op.value;
      break;
    case DeviceOp::Kind::kWaitValue:
    case DeviceOp::Kind::kMarker:
      d.category = "stream operation";
      break;
  }
  d.argsJson = args.empty() ? std::string() : args.dump();
  return d;
}

WorkSlice::WorkSlice(const DeviceWork& w, uint64_t startPs) {
  model::Timeline* t = model::Timeline::active();
  if (t == nullptr || w.stream.empty() || w.slice.category.empty()) return;
  std::string name = w.label;
  if (w.kind == DeviceWork::Kind::kCopy && !w.pieces.empty()) name = copyName(w.pieces.front().src, w.pieces.front().dst);
  if (w.kind == DeviceWork::Kind::kKernel) name = demangled(name);
  if (name.empty()) return;  // an event's marker: nothing to show
  track_ = t->track("GPU " + std::to_string(w.engineGpu), "stream " + w.stream);
  token_ = track_.open(startPs, name, w.slice);
}

void WorkSlice::close(uint64_t endPs, const std::string& moreArgs) {
  if (token_ != 0) track_.close(token_, endPs, moreArgs);
  token_ = 0;
}

}  // namespace mcsim::fabric
