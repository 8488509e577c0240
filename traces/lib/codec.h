// Arguments to trace JSON and back. The recorder turns a call's slots into the record's "args"
// (before the call) and "out" (after it, when it succeeded); the replayer turns "args" into slots
// for the target driver and binds the names in "out" to what the target returned.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "traces/lib/call_desc.h"
#include "traces/lib/ids.h"

namespace mcsim::trace {

using Json = nlohmann::ordered_json;

struct RecordOptions {
  uint64_t dataLimit = 65536;  // host buffers up to this many bytes are recorded in full
  bool outputData = false;     // also record the full data of host buffers the call writes
  // The exported symbol a function pointer stands for (cuGetProcAddress), or nullptr.
  const char* (*symbolOf)(void* fn) = nullptr;
};

// 64-bit FNV-1a, written as 16 hex digits.
std::string digestHex(const void* data, size_t n);
std::string toHex(const void* data, size_t n);
bool fromHex(const std::string& hex, std::vector<uint8_t>* out);
// Host buffer data is base64 (RFC 4648, with padding): a third smaller than hex.
std::string toBase64(const void* data, size_t n);
bool fromBase64(const std::string& text, std::vector<uint8_t>* out);

// Recorder side.
void encodeInputs(const CallDesc& d, const uint64_t* slots, const Names& names, const RecordOptions& o, Json* args);
void encodeOutputs(const CallDesc& d, const uint64_t* slots, Names& names, const RecordOptions& o, Json* out);

// Replayer side: live values bound to the trace's names.
class Binder {
 public:
  void bind(const std::string& name, uint64_t v) { values_[name] = v; }
  bool lookup(const std::string& name, uint64_t* v) const;
  void bindBlob(const std::string& name, std::vector<uint8_t> b) { blobs_[name] = std::move(b); }
  // The size of a host region the replay allocated, so that data written into it is bounded.
  void bindSize(const std::string& name, uint64_t size) { sizes_[name] = size; }
  // Whether [name+offset, +n) lies inside a host region this replay allocated.
  bool fits(const std::string& name, uint64_t offset, uint64_t n) const {
    auto it = sizes_.find(name);
    return it != sizes_.end() && offset <= it->second && n <= it->second - offset;
  }
  const std::vector<uint8_t>* blob(const std::string& name) const;

 private:
  std::map<std::string, uint64_t> values_;
  std::map<std::string, std::vector<uint8_t>> blobs_;
  std::map<std::string, uint64_t> sizes_;
};

// Memory the replayer hands to a call; kept for the whole replay, since an asynchronous copy may
// read or write its host buffer after the call returns.
class Arena {
 public:
  void* bytes(size_t n);  // zeroed
  void* copy(const std::vector<uint8_t>& b);

 private:
  std::deque<std::vector<uint8_t>> blocks_;
};

// Fills `slots` from a record's "args". Returns "" or why the call cannot be replayed as recorded
// (a name nothing bound, a host buffer whose data was not recorded: then `approximate` is set and
// the call is issued with a filler).
std::string decodeInputs(const CallDesc& d, const Json& args, const Binder& b, Arena& arena, uint64_t* slots,
                         bool* approximate);
// After the call: binds the names the record's "out" gave to the values the target returned.
void bindOutputs(const CallDesc& d, const uint64_t* slots, const Json& out, Binder& b);

// Names of argument kinds for messages ("device address", ...).
const char* kindName(Kind k);

}  // namespace mcsim::trace
