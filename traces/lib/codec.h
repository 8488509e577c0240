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

// What the recorder learns about the function (or CUkernel) a launch runs.
struct FunctionInfo {
  std::string name;    // the kernel's name, or "" when it cannot be told
  // Where the parameter layout came from: "model" (mcsim: the kernel's registered behavioural
  // model), "param_info" (a real driver's cuFuncGetParamInfo / cuKernelGetParamInfo), "library"
  // (the ABI of mcsim's kernel library, include/mcsim/kernels.h), or "" (unknown: flagged).
  std::string layout;
  std::vector<uint64_t> offsets, sizes;  // each parameter's offset (in an `extra` buffer) and size
};

struct RecordOptions {
  uint64_t dataLimit = 16777216;  // host buffers up to this many bytes are recorded in full
  bool outputData = false;     // also record the full data of host buffers the call writes
  bool imagesInFull = false;   // MCSIM_RECORD_IMAGES=full: copy mcsim's kernel library image too
  // The exported symbol a function pointer stands for (cuGetProcAddress), or nullptr.
  const char* (*symbolOf)(void* fn) = nullptr;
  // Fills `out` for the function or kernel handle `f` (`label`: the name it was looked up by, or
  // ""); false when the target cannot tell anything. Makes no state-changing driver call.
  bool (*describeFunction)(uint64_t f, bool isKernel, const std::string& label, FunctionInfo* out) = nullptr;
};

// 64-bit FNV-1a, written as 16 hex digits.
std::string digestHex(const void* data, size_t n);

// Which shareable handle a call exports (`output`: its output, once it succeeded) or imports, told
// the same way in every process of a run: "file:DEV:INO" for a POSIX descriptor (the file it
// refers to), "fabric:DIGEST" for a FABRIC handle's bytes; "" when the call has none. A record
// keeps it ("shared"), so that a replay of several processes hands a descriptor or handle one
// process exports to the process that imports it.
std::string shareableIdentity(const CallDesc& d, const uint64_t* slots, bool output);
// Where that handle sits in the call: the parameter index (its slot) and its handle type; -1 if none.
int shareableParam(const CallDesc& d, const uint64_t* slots, bool output, uint64_t* type);
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

  // Where image files of cuModuleLoad / cuLibraryLoadFromFile are written for the replay ("":
  // nowhere, when a trace is only being checked).
  void setFileDir(std::string dir) { fileDir_ = std::move(dir); }
  bool hasFileDir() const { return !fileDir_.empty(); }
  // Writes `b` to a file named after `name` in the file directory; its path, or "" if none.
  std::string writeFile(const std::string& name, const std::vector<uint8_t>& b);

 private:
  std::deque<std::vector<uint8_t>> blocks_;
  std::string fileDir_;
  int files_ = 0;
};

// A name ("va2+4096", "stream1", "legacy") or raw value back to a live value; false (with
// `problem`) when the name is not bound.
bool resolveValue(const Json& j, const Binder& b, uint64_t* v, std::string* problem);

// Fills `slots` from a record's "args". Returns "" or why the call cannot be replayed as recorded
// (a name nothing bound, a host buffer whose data was not recorded: then `approximate` is set and
// the call is issued with a filler).
std::string decodeInputs(const CallDesc& d, const Json& args, const Binder& b, Arena& arena, uint64_t* slots,
                         bool* approximate);
// After the call: binds the names the record's "out" gave to the values the target returned.
void bindOutputs(const CallDesc& d, const uint64_t* slots, const Json& out, Binder& b);

// Whether the call launches a kernel (it has a launched-function parameter, kLaunchFunc): its
// record names the kernel ("kernel") beside the function handle.
bool isLaunch(const CallDesc& d);

// Names of argument kinds for messages ("device address", ...).
const char* kindName(Kind k);

// The names (with where in the argument they stand, for messages: "" or "parameter 2") that an
// argument of the structured kinds (images, launches) uses.
void structuredNamesUsed(Kind k, const Json& a, std::vector<std::pair<std::string, std::string>>* out);
// Checks the shape of an argument of the structured kinds; "" or the problem.
std::string checkStructured(Kind k, const Json& a);
// A launch's parameters as values only (no layout source, no offsets into `extra`): what two
// recordings of the same launch must agree on, whatever drivers recorded them.
Json launchParamValues(const Json& args);

}  // namespace mcsim::trace
