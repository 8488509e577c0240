#include "traces/lib/codec_kernels.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "traces/lib/image.h"
#include "traces/lib/kernel_abi.h"

namespace mcsim::trace {

namespace {

constexpr uint64_t kMaxParams = 1024;      // parameters of one launch (CUDA allows 32 KiB of them)
constexpr uint64_t kMaxParamBytes = 32768; // one parameter, and an `extra` buffer
constexpr uint64_t kMaxOptions = 64;
constexpr uint64_t kMaxAttrs = 64;
constexpr uint64_t kMaxExtraPairs = 64;
constexpr size_t kScratch = 4096;
constexpr uint32_t kFatbinWrapperMagic = 0x466243B1u;

std::string hexValue(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

Json rawJson(uint64_t v) { return Json{{"raw", hexValue(v)}}; }

void* ptr(uint64_t v) { return reinterpret_cast<void*>(static_cast<uintptr_t>(v)); }
uint64_t slot(const void* p) { return static_cast<uint64_t>(reinterpret_cast<uintptr_t>(p)); }

// ---- names inside structured values

Json deviceAddress(uint64_t v, const Names& names) {
  if (v == 0) return 0;
  const std::string n = names.address(false, v);
  return n.empty() ? rawJson(v) : Json(n);
}

Json handleName(HandleKind k, uint64_t v, const Names& names) {
  if (k == HandleKind::kStream && v <= 2) return v == 0 ? Json() : Json(v == 1 ? "legacy" : "per_thread");
  if (v == 0) return Json();
  const std::string n = names.handle(k, v);
  return n.empty() ? rawJson(v) : Json(n);
}

// The value a recorded name or raw value stands for in the replay (0 with `problem` if unbound).
uint64_t value(const Json& j, const Binder& b, std::string* problem) {
  uint64_t v = 0;
  if (!resolveValue(j, b, &v, problem)) return 0;
  return v;
}

void addName(const Json& v, const std::string& where, std::vector<std::pair<std::string, std::string>>* out) {
  if (!v.is_string()) return;
  const std::string s = v.get<std::string>();
  if (s == "legacy" || s == "per_thread") return;
  if (auto p = parseName(s)) out->emplace_back(p->base, where);
}

bool isName(const Json& v) {
  if (v.is_null() || v.is_number_integer()) return true;
  if (v.is_object() && v.size() == 1 && v.contains("raw") && v.at("raw").is_string()) return true;
  if (!v.is_string()) return false;
  const std::string s = v.get<std::string>();
  return s == "legacy" || s == "per_thread" || parseName(s).has_value();
}

bool isUnsigned(const Json& j) { return j.is_number_unsigned() || (j.is_number_integer() && j.get<int64_t>() >= 0); }

uint64_t u64(const Json& j, const char* key) {
  const Json& v = j.at(key);
  if (!isUnsigned(v)) throw std::runtime_error(std::string(key) + " must be a number");
  return v.get<uint64_t>();
}

// ---- images

Json imageJson(const ImageBytes& img, const RecordOptions& o) {
  Json j{{"format", img.format}};
  if (img.format == "fatbin_wrapper") j["wrapper_version"] = img.wrapperVersion;
  j["bytes"] = img.bytes.size();
  const std::string digest = digestHex(img.bytes.data(), img.bytes.size());
  j["digest"] = digest;
  const ImageBytes& lib = kernelLibraryRead();
  if (!o.imagesInFull && lib.readable && img.bytes.size() == lib.bytes.size() && digest == kernelLibraryDigest()) {
    j["library"] = kKernelLibraryName;  // mcsim's own kernel library: named, not copied
  } else {
    j["data"] = toBase64(img.bytes.data(), img.bytes.size());
  }
  return j;
}

// The recorded image's bytes, or the replaying build's kernel library for a "library" reference.
bool imageBytes(const Json& a, std::vector<uint8_t>* out) {
  if (a.contains("library")) {
    if (a.at("library") != kKernelLibraryName) return false;
    *out = kernelLibraryRead().bytes;
    return true;
  }
  if (!a.contains("data") || !a.at("data").is_string()) return false;
  return fromBase64(a.at("data").get<std::string>(), out);
}

std::string checkImageFields(const Json& a) {
  if (!a.contains("format") || !a.at("format").is_string()) return "an image needs its \"format\"";
  if (!a.contains("bytes") || !isUnsigned(a.at("bytes")) || a.at("bytes").get<uint64_t>() > kMaxTraceImageBytes) {
    return "an image needs \"bytes\" (at most 1 GiB)";
  }
  if (!a.contains("digest") || !a.at("digest").is_string()) return "an image needs its \"digest\"";
  if (a.contains("library")) {
    return a.at("library") == kKernelLibraryName ? "" : "unknown image library " + a.at("library").dump();
  }
  std::vector<uint8_t> b;
  if (!a.contains("data") || !a.at("data").is_string() || !fromBase64(a.at("data").get<std::string>(), &b) ||
      b.size() != a.at("bytes").get<uint64_t>()) {
    return "image data is not base64 of 'bytes' bytes";
  }
  if (a.at("format") == "fatbin_wrapper" && (!a.contains("wrapper_version") || !a.at("wrapper_version").is_number_integer())) {
    return "a fatbin wrapper needs its \"wrapper_version\"";
  }
  return "";
}

// ---- kernel parameters

enum class Typed { kUnknown, kAddress, kNumber };

uint64_t littleEndian(const uint8_t* p, size_t n) {
  uint64_t v = 0;
  std::memcpy(&v, p, std::min<size_t>(n, 8));
  return v;
}

// One parameter's bytes. An 8-byte value is an address when the kernel's ABI says so, or (ABI
// unknown) when it falls inside a region the trace knows; longer parameters are scanned for such
// addresses in each aligned 8-byte word.
Json paramValue(const uint8_t* p, uint64_t size, Typed typed, const Names& names) {
  Json j{{"size", size}};
  if (size == 8 && typed != Typed::kNumber) {
    const uint64_t v = littleEndian(p, 8);
    if (typed == Typed::kAddress || (v != 0 && !names.address(false, v).empty())) {
      j["addr"] = deviceAddress(v, names);
      return j;
    }
  }
  if (size == 1 || size == 2 || size == 4 || size == 8) {
    j["value"] = littleEndian(p, static_cast<size_t>(size));
    return j;
  }
  std::vector<uint8_t> bytes(p, p + size);
  Json addrs = Json::object();
  if (typed != Typed::kNumber) {
    for (uint64_t off = 0; off + 8 <= size; off += 8) {
      const uint64_t v = littleEndian(p + off, 8);
      if (v == 0) continue;
      const std::string n = names.address(false, v);
      if (n.empty()) continue;
      addrs[std::to_string(off)] = n;
      std::memset(bytes.data() + off, 0, 8);
    }
  }
  j["hex"] = toHex(bytes.data(), bytes.size());
  if (!addrs.empty()) j["addrs"] = std::move(addrs);
  return j;
}

std::string checkParam(const Json& p, bool withOffset) {
  if (!p.is_object() || !p.contains("size") || !isUnsigned(p.at("size")) || p.at("size").get<uint64_t>() > kMaxParamBytes) {
    return "a kernel parameter needs its \"size\" (at most 32768)";
  }
  if (withOffset && (!p.contains("offset") || !isUnsigned(p.at("offset")) || p.at("offset").get<uint64_t>() > kMaxParamBytes)) {
    return "a parameter of an extra buffer needs its \"offset\"";
  }
  const uint64_t size = p.at("size").get<uint64_t>();
  if (p.contains("unreadable") || p.contains("null")) return "";
  if (p.contains("addr")) return size == 8 && isName(p.at("addr")) ? "" : "\"addr\" must be a device address of an 8-byte parameter";
  if (p.contains("value")) {
    return isUnsigned(p.at("value")) && (size == 1 || size == 2 || size == 4 || size == 8) ? "" : "\"value\" must be a number of 1, 2, 4 or 8 bytes";
  }
  if (p.contains("hex")) {
    std::vector<uint8_t> b;
    if (!p.at("hex").is_string() || !fromHex(p.at("hex").get<std::string>(), &b) || b.size() != size) {
      return "\"hex\" must hold 'size' bytes";
    }
    if (p.contains("addrs")) {
      if (!p.at("addrs").is_object()) return "\"addrs\" must be an object";
      for (const auto& [off, name] : p.at("addrs").items()) {
        char* end = nullptr;
        const unsigned long long o = std::strtoull(off.c_str(), &end, 10);
        if (off.empty() || *end != '\0' || o + 8 > size || !isName(name)) return "\"addrs\" must map offsets inside the parameter to addresses";
      }
    }
    return "";
  }
  return "a kernel parameter needs \"value\", \"addr\" or \"hex\"";
}

// The parameter's bytes in the replay, into `dst` (size bytes).
void paramInto(const Json& p, uint8_t* dst, const Binder& b, std::string* problem) {
  const uint64_t size = p.at("size").get<uint64_t>();
  if (p.contains("addr")) {
    const uint64_t v = value(p.at("addr"), b, problem);
    std::memcpy(dst, &v, 8);
  } else if (p.contains("value")) {
    const uint64_t v = p.at("value").get<uint64_t>();
    std::memcpy(dst, &v, static_cast<size_t>(size));
  } else if (p.contains("hex")) {
    std::vector<uint8_t> bytes;
    fromHex(p.at("hex").get<std::string>(), &bytes);
    if (!bytes.empty()) std::memcpy(dst, bytes.data(), std::min<size_t>(bytes.size(), static_cast<size_t>(size)));
    if (p.contains("addrs")) {
      for (const auto& [off, name] : p.at("addrs").items()) {
        const uint64_t o = std::stoull(off);
        if (o + 8 > size) continue;
        const uint64_t v = value(name, b, problem);
        std::memcpy(dst + o, &v, 8);
      }
    }
  }
}

void paramNames(const Json& p, const std::string& where, std::vector<std::pair<std::string, std::string>>* out) {
  if (!p.is_object()) return;
  if (p.contains("addr")) addName(p.at("addr"), where, out);
  if (p.contains("addrs") && p.at("addrs").is_object()) {
    for (const auto& [off, name] : p.at("addrs").items()) addName(name, where + " at byte " + off, out);
  }
}

// The ABI types of `info`'s parameters when it is a library kernel with the library's layout.
std::vector<Typed> typesOf(const FunctionInfo& info) {
  std::vector<Typed> t(info.sizes.size(), Typed::kUnknown);
  const std::vector<AbiParam>* abi = libraryKernelAbi(info.name);
  if (abi == nullptr || abi->size() != info.sizes.size()) return t;
  for (size_t i = 0; i < abi->size(); ++i) {
    if ((*abi)[i].size != info.sizes[i]) return std::vector<Typed>(info.sizes.size(), Typed::kUnknown);
  }
  for (size_t i = 0; i < abi->size(); ++i) t[i] = (*abi)[i].address ? Typed::kAddress : Typed::kNumber;
  return t;
}

// ---- options

bool pointerOption(bool library, uint64_t id) {
  if (library) return id == CU_LIBRARY_HOST_UNIVERSAL_FUNCTION_AND_DATA_TABLE;
  switch (id) {
    case CU_JIT_INFO_LOG_BUFFER:
    case CU_JIT_ERROR_LOG_BUFFER:
    case CU_JIT_GLOBAL_SYMBOL_NAMES:
    case CU_JIT_GLOBAL_SYMBOL_ADDRESSES:
    case CU_JIT_REFERENCED_KERNEL_NAMES:
    case CU_JIT_REFERENCED_VARIABLE_NAMES: return true;
    default: return false;
  }
}

// ---- launch attributes

// The attributes whose value starts with a handle or an address (named like any other).
enum class AttrHead { kNone, kEvent, kAddress };

AttrHead attrHead(uint64_t id) {
  switch (id) {
    case CU_LAUNCH_ATTRIBUTE_ACCESS_POLICY_WINDOW: return AttrHead::kAddress;
    case CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_EVENT:
    case CU_LAUNCH_ATTRIBUTE_LAUNCH_COMPLETION_EVENT: return AttrHead::kEvent;
    default: return AttrHead::kNone;
  }
}

// Hex of the 64-byte value without its trailing zero bytes ("01" for cooperative = 1).
std::string trimmedHex(const uint8_t* p, size_t n) {
  while (n > 0 && p[n - 1] == 0) --n;
  return toHex(p, n);
}

const char* const kConfigDims[] = {"gridDimX", "gridDimY", "gridDimZ", "blockDimX", "blockDimY", "blockDimZ", "sharedMemBytes"};

}  // namespace

// ---------------------------------------------------------------------------------------------
// Recorder side

Json encodeImage(uint64_t image, const RecordOptions& o) {
  if (image == 0) return Json();
  const ImageBytes img = readImageAt(image);
  if (!img.readable) return Json{{"unreadable", true}};
  return imageJson(img, o);
}

Json encodeImageFile(uint64_t path, const RecordOptions& o) {
  if (path == 0) return Json();
  // The path as the program passed it (C string, read safely, printable ASCII only).
  std::string p;
  char c = 0;
  for (uint64_t at = path; p.size() < 4096 && safeRead(at, &c, 1) && c != '\0'; ++at) {
    const auto u = static_cast<unsigned char>(c);
    p.push_back(u >= 0x20 && u < 0x7f ? c : '?');
  }
  const ImageBytes img = readImageFile(p);
  if (!img.readable) {
    std::error_code ec;
    return Json{{"path", p}, {std::filesystem::exists(p, ec) ? "unreadable" : "missing", true}};
  }
  Json j{{"path", p}};
  const Json fields = imageJson(img, o);
  for (const auto& [k, v] : fields.items()) j[k] = v;
  return j;
}

Json encodeOptions(bool library, uint64_t count, uint64_t options, uint64_t values) {
  if (options == 0 && values == 0) return Json();
  if (count > kMaxOptions) return Json{{"raw_ptr", "nonnull"}};
  Json ids = Json::array(), vals = Json::array();
  for (uint64_t i = 0; i < count; ++i) {
    int32_t id = 0;
    uint64_t v = 0;
    const bool idOk = options != 0 && safeRead(options + 4 * i, &id, 4);
    const bool vOk = values != 0 && safeRead(values + 8 * i, &v, 8);
    ids.push_back(idOk ? Json(id) : Json());
    if (!vOk) {
      vals.push_back(Json());
    } else if (idOk && pointerOption(library, static_cast<uint64_t>(id))) {
      vals.push_back(v == 0 ? Json(Json{{"pointer", nullptr}}) : Json{{"pointer", "nonnull"}});
    } else {
      vals.push_back(v);
    }
  }
  return Json{{"options", options == 0 ? Json() : ids}, {"values", values == 0 ? Json() : vals}};
}

Json encodeLaunchFunc(uint64_t f, const Names& names, const RecordOptions& o, FunctionInfo* info) {
  *info = FunctionInfo{};
  if (f == 0) return Json();
  const bool isKernel = names.handle(HandleKind::kFunction, f).empty() && !names.handle(HandleKind::kKernel, f).empty();
  const HandleKind k = isKernel ? HandleKind::kKernel : HandleKind::kFunction;
  const std::string label = names.label(k, f);
  if (o.describeFunction == nullptr || !o.describeFunction(f, isKernel, label, info)) info->name = label;
  if (info->name.empty()) info->name = label;
  // A driver that cannot tell the layout: mcsim's library kernels have a documented one.
  if (info->layout.empty()) {
    if (const std::vector<AbiParam>* abi = libraryKernelAbi(info->name)) {
      info->layout = "library";
      info->sizes.clear();
      for (const AbiParam& p : *abi) info->sizes.push_back(p.size);
      info->offsets = packedOffsets(info->sizes);
    }
  }
  const std::string n = names.handle(k, f);
  return n.empty() ? rawJson(f) : Json(n);
}

Json encodeKernelParams(const FunctionInfo& info, uint64_t kernelParams, const Names& names) {
  if (kernelParams == 0) return Json();
  if (info.layout.empty() || info.sizes.size() > kMaxParams) return Json{{"layout", "unknown"}};
  const std::vector<Typed> types = typesOf(info);
  Json params = Json::array();
  std::vector<uint8_t> buf;
  for (size_t i = 0; i < info.sizes.size(); ++i) {
    const uint64_t size = info.sizes[i];
    uint64_t at = 0;
    if (size > kMaxParamBytes || !safeRead(kernelParams + 8 * i, &at, 8)) {
      params.push_back(Json{{"size", size}, {"unreadable", true}});
      continue;
    }
    if (at == 0) {
      params.push_back(Json{{"size", size}, {"null", true}});
      continue;
    }
    buf.assign(static_cast<size_t>(size), 0);
    if (!safeRead(at, buf.data(), buf.size())) {
      params.push_back(Json{{"size", size}, {"unreadable", true}});
      continue;
    }
    params.push_back(paramValue(buf.data(), size, types[i], names));
  }
  return Json{{"layout", info.layout}, {"params", std::move(params)}};
}

Json encodeKernelExtra(const FunctionInfo& info, uint64_t extra, const Names& names) {
  if (extra == 0) return Json();
  uint64_t buffer = 0, bytes = 0;
  bool havePointer = false, haveSize = false, others = false, ended = false;
  for (uint64_t i = 0; i < kMaxExtraPairs && !ended; ++i) {
    uint64_t key = 0, val = 0;
    if (!safeRead(extra + 16 * i, &key, 8)) return Json{{"unreadable", true}};
    if (key == CU_LAUNCH_PARAM_END_AS_INT) {
      ended = true;
      break;
    }
    if (!safeRead(extra + 16 * i + 8, &val, 8)) return Json{{"unreadable", true}};
    if (key == CU_LAUNCH_PARAM_BUFFER_POINTER_AS_INT) {
      havePointer = true;
      buffer = val;
    } else if (key == CU_LAUNCH_PARAM_BUFFER_SIZE_AS_INT) {
      haveSize = val != 0 && safeRead(val, &bytes, 8);
    } else {
      others = true;
    }
  }
  if (!ended) return Json{{"unreadable", true}};
  Json j{{"layout", info.layout.empty() ? std::string("unknown") : info.layout}};
  j["buffer_bytes"] = haveSize ? Json(bytes) : Json();
  if (!havePointer || buffer == 0) j["buffer"] = nullptr;
  if (others) j["other_entries"] = true;
  if (!havePointer || buffer == 0) return j;
  if (info.layout.empty()) {
    // No layout: the buffer as a whole (when its size is known), addresses found by value.
    if (!haveSize || bytes > kMaxParamBytes) return j;
    std::vector<uint8_t> raw(static_cast<size_t>(bytes));
    if (!safeRead(buffer, raw.data(), raw.size())) {
      j["unreadable"] = true;
      return j;
    }
    Json v = paramValue(raw.data(), bytes, Typed::kUnknown, names);
    for (const char* k : {"value", "addr", "hex", "addrs"}) {
      if (v.contains(k)) j[k] = v.at(k);
    }
    return j;
  }
  const std::vector<Typed> types = typesOf(info);
  Json params = Json::array();
  std::vector<uint8_t> buf;
  for (size_t i = 0; i < info.sizes.size() && i < kMaxParams; ++i) {
    const uint64_t off = info.offsets[i], size = info.sizes[i];
    // Parameters past the buffer's end are not there (the driver refuses such a launch).
    if (size > kMaxParamBytes || off > kMaxParamBytes || (haveSize && off + size > bytes)) break;
    buf.assign(static_cast<size_t>(size), 0);
    Json p;
    if (!safeRead(buffer + off, buf.data(), buf.size())) {
      p = Json{{"size", size}, {"unreadable", true}};
    } else {
      p = paramValue(buf.data(), size, types[i], names);
    }
    Json withOffset{{"offset", off}};
    for (auto& [k, v] : p.items()) withOffset[k] = v;
    params.push_back(std::move(withOffset));
  }
  j["params"] = std::move(params);
  return j;
}

Json encodeLaunchConfig(uint64_t config, const Names& names) {
  if (config == 0) return Json();
  CUlaunchConfig c;
  if (!safeRead(config, &c, sizeof c)) return Json{{"unreadable", true}};
  const unsigned dims[] = {c.gridDimX, c.gridDimY, c.gridDimZ, c.blockDimX, c.blockDimY, c.blockDimZ, c.sharedMemBytes};
  Json j = Json::object();
  for (size_t i = 0; i < 7; ++i) j[kConfigDims[i]] = dims[i];
  j["hStream"] = handleName(HandleKind::kStream, slot(c.hStream), names);
  if (c.attrs == nullptr) {
    j["attrs"] = nullptr;
  } else if (c.numAttrs > kMaxAttrs) {
    j["attrs"] = Json{{"raw_ptr", "nonnull"}};
  } else {
    Json attrs = Json::array();
    for (unsigned i = 0; i < c.numAttrs; ++i) {
      CUlaunchAttribute a;
      if (!safeRead(slot(c.attrs) + sizeof a * i, &a, sizeof a)) {
        attrs.push_back(Json{{"unreadable", true}});
        continue;
      }
      uint8_t v[sizeof a.value];
      std::memcpy(v, &a.value, sizeof v);
      Json e{{"id", static_cast<int>(a.id)}};
      const AttrHead head = attrHead(static_cast<uint64_t>(a.id));
      if (head != AttrHead::kNone) {
        uint64_t first = 0;
        std::memcpy(&first, v, 8);
        std::memset(v, 0, 8);
        e[head == AttrHead::kEvent ? "event" : "addr"] =
            head == AttrHead::kEvent ? handleName(HandleKind::kEvent, first, names) : deviceAddress(first, names);
      }
      e["value"] = trimmedHex(v, sizeof v);
      attrs.push_back(std::move(e));
    }
    j["attrs"] = std::move(attrs);
  }
  j["numAttrs"] = c.numAttrs;
  return j;
}

Json encodeHandleArray(HandleKind k, uint64_t array, uint64_t count, Names& names) {
  Json v = Json::array();
  for (uint64_t i = 0; i < count && i < 4096; ++i) {
    uint64_t h = 0;
    if (!safeRead(array + 8 * i, &h, 8)) break;
    v.push_back(h == 0 ? Json() : Json(names.outHandle(k, h, false)));
  }
  return v;
}

// ---------------------------------------------------------------------------------------------
// Replayer side

uint64_t decodeImage(const Json& a, Arena& arena, bool* approximate) {
  if (a.is_null()) return 0;
  std::vector<uint8_t> bytes;
  if (a.contains("unreadable") || a.contains("raw_ptr") || !imageBytes(a, &bytes)) {
    *approximate = true;
    return slot(arena.bytes(kScratch));
  }
  if (a.value("format", std::string()) == "fatbin_wrapper") {
    // The program passed a __fatBinC_Wrapper_t: so does the replay, pointing at the fatbin.
    const void* fatbin = a.contains("library") ? kernelLibraryImage() : arena.copy(bytes);
    auto* w = static_cast<uint8_t*>(arena.bytes(24));
    const int32_t magic = static_cast<int32_t>(kFatbinWrapperMagic), version = a.at("wrapper_version").get<int32_t>();
    std::memcpy(w, &magic, 4);
    std::memcpy(w + 4, &version, 4);
    std::memcpy(w + 8, &fatbin, sizeof fatbin);
    return slot(w);
  }
  if (a.contains("library")) return slot(kernelLibraryImage());
  return slot(arena.copy(bytes));
}

uint64_t decodeImageFile(const Json& a, Arena& arena, bool* approximate) {
  if (a.is_null()) return 0;
  const std::string path = a.at("path").get<std::string>();
  auto pathSlot = [&](const std::string& p) {
    return slot(arena.copy(std::vector<uint8_t>(p.c_str(), p.c_str() + p.size() + 1)));
  };
  if (a.contains("missing")) return pathSlot(path);  // the recorded program's file was not there either
  std::vector<uint8_t> bytes;
  if (!arena.hasFileDir()) return pathSlot(path);  // only checking the trace: no file is touched
  if (a.contains("unreadable") || !imageBytes(a, &bytes)) {
    *approximate = true;
    return pathSlot(path);
  }
  if (a.contains("library") && !bytes.empty() && bytes.back() == 0 && a.value("format", std::string()) == "text") {
    bytes.pop_back();  // a text file holds no NUL
  }
  // The same file, if it is still there with the same bytes; else the recorded bytes in a file.
  const ImageBytes there = readImageFile(path);
  if (there.readable && there.bytes == bytes) return pathSlot(path);
  const std::string written = arena.writeFile(std::filesystem::path(path).filename().string(), bytes);
  if (written.empty()) {
    *approximate = true;
    return pathSlot(path);
  }
  return pathSlot(written);
}

uint64_t optionsRecorded(const Json& a) {
  if (a.is_null()) return UINT64_MAX;  // no array: the driver reads none
  if (a.contains("raw_ptr")) return kScratch / 8;
  const Json& ids = a.at("options");
  const Json& vals = a.at("values");
  // Arrays the record leaves out (null) are passed as NULL, which the driver does not read.
  const uint64_t n = std::max(ids.is_array() ? ids.size() : 0, vals.is_array() ? vals.size() : 0);
  return (ids.is_array() || vals.is_array()) ? n : UINT64_MAX;
}

void decodeOptions(const Json& a, Arena& arena, uint64_t* options, uint64_t* values) {
  *options = *values = 0;
  if (a.is_null()) return;
  if (a.contains("raw_ptr")) {
    *options = slot(arena.bytes(kScratch));
    *values = slot(arena.bytes(kScratch));
    return;
  }
  const Json& ids = a.at("options");
  const Json& vals = a.at("values");
  const size_t n = std::max(ids.is_array() ? ids.size() : 0, vals.is_array() ? vals.size() : 0);
  if (ids.is_array()) {
    auto* o = static_cast<int32_t*>(arena.bytes(4 * std::max<size_t>(n, 1)));
    for (size_t i = 0; i < ids.size(); ++i) o[i] = ids[i].is_number() ? ids[i].get<int32_t>() : 0;
    *options = slot(o);
  }
  if (vals.is_array()) {
    auto* v = static_cast<uint64_t*>(arena.bytes(8 * std::max<size_t>(n, 1)));
    for (size_t i = 0; i < vals.size(); ++i) {
      if (vals[i].is_object()) {
        // A pointer-valued option (log buffers, symbol tables): a zeroed buffer of the size its
        // companion option gives (log buffers), or a scratch page.
        size_t room = kScratch;
        const int32_t id = ids.is_array() && i < ids.size() && ids[i].is_number() ? ids[i].get<int32_t>() : -1;
        const int32_t sizeId = id == CU_JIT_INFO_LOG_BUFFER ? CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES
                               : id == CU_JIT_ERROR_LOG_BUFFER ? CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES : -1;
        for (size_t k = 0; sizeId >= 0 && ids.is_array() && k < ids.size() && k < vals.size(); ++k) {
          if (ids[k].is_number() && ids[k].get<int32_t>() == sizeId && vals[k].is_number()) {
            room = static_cast<size_t>(std::min<uint64_t>(vals[k].get<uint64_t>(), 1u << 20));
          }
        }
        v[i] = vals[i].at("pointer").is_null() ? 0 : slot(arena.bytes(room));
      } else if (vals[i].is_number()) {
        v[i] = vals[i].get<uint64_t>();
      }
    }
    *values = slot(v);
  }
}

uint64_t decodeKernelParams(const Json& a, const Binder& b, Arena& arena, bool* approximate, std::string* problem) {
  if (a.is_null()) return 0;
  if (a.contains("raw_ptr") || !a.contains("params")) {
    // The layout was not known: pointers to zeroed scratch stand in for the parameters.
    *approximate = true;
    auto* ptrs = static_cast<void**>(arena.bytes(sizeof(void*) * 64));
    for (size_t i = 0; i < 64; ++i) ptrs[i] = arena.bytes(kScratch);
    return slot(ptrs);
  }
  const Json& params = a.at("params");
  auto* ptrs = static_cast<void**>(arena.bytes(sizeof(void*) * std::max<size_t>(params.size(), 1)));
  for (size_t i = 0; i < params.size(); ++i) {
    const Json& p = params[i];
    if (p.contains("null")) {
      ptrs[i] = nullptr;
      continue;
    }
    if (p.contains("unreadable")) {
      *approximate = true;
      ptrs[i] = nullptr;
      continue;
    }
    auto* dst = static_cast<uint8_t*>(arena.bytes(static_cast<size_t>(std::max<uint64_t>(u64(p, "size"), 8))));
    paramInto(p, dst, b, problem);
    ptrs[i] = dst;
  }
  return slot(ptrs);
}

uint64_t decodeKernelExtra(const Json& a, const Binder& b, Arena& arena, bool* approximate, std::string* problem) {
  if (a.is_null()) return 0;
  if (a.contains("raw_ptr") || a.contains("unreadable") || a.contains("other_entries")) *approximate = true;
  if (a.contains("raw_ptr") || (a.contains("unreadable") && !a.contains("layout"))) {
    return slot(arena.bytes(kScratch));  // zeroes: an empty list (CU_LAUNCH_PARAM_END)
  }
  const bool sized = a.contains("buffer_bytes") && !a.at("buffer_bytes").is_null();
  uint64_t bytes = sized ? u64(a, "buffer_bytes") : 0;
  if (bytes > kMaxParamBytes) throw std::runtime_error("an extra buffer of " + std::to_string(bytes) + " bytes");
  if (a.contains("params")) {
    for (const Json& p : a.at("params")) bytes = std::max(bytes, u64(p, "offset") + u64(p, "size"));
  }
  auto* buf = static_cast<uint8_t*>(arena.bytes(static_cast<size_t>(std::max<uint64_t>(bytes, 8))));
  if (a.contains("params")) {
    for (const Json& p : a.at("params")) {
      if (p.contains("unreadable")) {
        *approximate = true;
        continue;
      }
      paramInto(p, buf + u64(p, "offset"), b, problem);
    }
  } else if (a.contains("hex") || a.contains("value") || a.contains("addr")) {
    Json whole = a;
    whole["size"] = bytes;
    paramInto(whole, buf, b, problem);
  } else if (!a.contains("buffer")) {
    *approximate = true;  // no layout and no size: the buffer's contents are not in the trace
  }
  auto* size = static_cast<uint64_t*>(arena.bytes(8));
  *size = bytes;
  auto* list = static_cast<void**>(arena.bytes(sizeof(void*) * 6));
  size_t k = 0;
  if (!a.contains("buffer")) {
    list[k++] = CU_LAUNCH_PARAM_BUFFER_POINTER;
    list[k++] = buf;
  }
  if (sized) {
    list[k++] = CU_LAUNCH_PARAM_BUFFER_SIZE;
    list[k++] = size;
  }
  list[k] = CU_LAUNCH_PARAM_END;
  return slot(list);
}

uint64_t decodeLaunchConfig(const Json& a, const Binder& b, Arena& arena, std::string* problem) {
  if (a.is_null()) return 0;
  auto* c = static_cast<CUlaunchConfig*>(arena.bytes(sizeof(CUlaunchConfig)));
  if (a.contains("unreadable")) return slot(c);
  unsigned* dims[] = {&c->gridDimX, &c->gridDimY, &c->gridDimZ, &c->blockDimX, &c->blockDimY, &c->blockDimZ, &c->sharedMemBytes};
  for (size_t i = 0; i < 7; ++i) *dims[i] = a.at(kConfigDims[i]).get<unsigned>();
  c->hStream = static_cast<CUstream>(ptr(value(a.at("hStream"), b, problem)));
  c->numAttrs = a.at("numAttrs").get<unsigned>();
  const Json& attrs = a.at("attrs");
  // The driver reads numAttrs attributes: never more than the replay gives it.
  const uint64_t room = attrs.is_object() ? kScratch / sizeof(CUlaunchAttribute) : attrs.is_array() ? attrs.size() : 0;
  if (c->numAttrs > room && !attrs.is_null()) {
    throw std::runtime_error("numAttrs is " + std::to_string(c->numAttrs) + " but the config holds " + std::to_string(room) +
                             " attributes in the trace");
  }
  if (attrs.is_object()) {
    c->attrs = static_cast<CUlaunchAttribute*>(arena.bytes(kScratch));
  } else if (attrs.is_array()) {
    auto* list = static_cast<CUlaunchAttribute*>(arena.bytes(sizeof(CUlaunchAttribute) * std::max<size_t>(attrs.size(), 1)));
    for (size_t i = 0; i < attrs.size(); ++i) {
      const Json& e = attrs[i];
      if (e.contains("unreadable")) continue;
      list[i].id = static_cast<CUlaunchAttributeID>(e.at("id").get<int>());
      std::vector<uint8_t> v;
      if (!fromHex(e.at("value").get<std::string>(), &v) || v.size() > sizeof list[i].value) {
        throw std::runtime_error("an attribute value is not hex of at most 64 bytes");
      }
      if (!v.empty()) std::memcpy(&list[i].value, v.data(), v.size());
      const char* head = e.contains("event") ? "event" : e.contains("addr") ? "addr" : nullptr;
      if (head != nullptr) {
        const uint64_t first = value(e.at(head), b, problem);
        std::memcpy(&list[i].value, &first, 8);
      }
    }
    c->attrs = list;
  }
  return slot(c);
}

uint64_t handleArrayRoom(uint64_t count, Arena& arena) {
  if (count > 4096) throw std::runtime_error("an array of " + std::to_string(count) + " handles");
  return slot(arena.bytes(static_cast<size_t>(8 * std::max<uint64_t>(count, 2))));
}

void bindHandleArray(const Json& out, uint64_t array, uint64_t count, Binder& b) {
  if (!out.is_array()) return;
  for (size_t i = 0; i < out.size() && i < count; ++i) {
    if (!out[i].is_string()) continue;
    const auto parsed = parseName(out[i].get<std::string>());
    if (!parsed || parsed->offset != 0) continue;
    uint64_t h = 0;
    std::memcpy(&h, static_cast<const uint8_t*>(ptr(array)) + 8 * i, 8);
    b.bind(parsed->base, h);
  }
}

// ---------------------------------------------------------------------------------------------
// The reader's side

void structuredNamesUsed(Kind k, const Json& a, std::vector<std::pair<std::string, std::string>>* out) {
  if (!a.is_object()) {
    if (k == Kind::kLaunchFunc) addName(a, "", out);
    return;
  }
  switch (k) {
    case Kind::kKernelParams:
    case Kind::kKernelExtra: {
      if (a.contains("params") && a.at("params").is_array()) {
        const Json& ps = a.at("params");
        for (size_t i = 0; i < ps.size(); ++i) paramNames(ps[i], "parameter " + std::to_string(i), out);
      } else {
        paramNames(a, "the extra buffer", out);
      }
      break;
    }
    case Kind::kLaunchConfig: {
      if (a.contains("hStream")) addName(a.at("hStream"), "hStream", out);
      if (a.contains("attrs") && a.at("attrs").is_array()) {
        const Json& as = a.at("attrs");
        for (size_t i = 0; i < as.size(); ++i) {
          if (!as[i].is_object()) continue;
          for (const char* head : {"event", "addr"}) {
            if (as[i].contains(head)) addName(as[i].at(head), "attribute " + std::to_string(i), out);
          }
        }
      }
      break;
    }
    default: break;
  }
}

std::string checkStructured(Kind k, const Json& a) {
  if (a.is_null()) return "";
  if (a.is_object() && a.contains("raw_ptr")) return "";  // a version-1 trace from before these kinds
  switch (k) {
    case Kind::kImage:
      if (!a.is_object()) return "expected an image object";
      return a.contains("unreadable") ? "" : checkImageFields(a);
    case Kind::kImageFile:
      if (!a.is_object() || !a.contains("path") || !a.at("path").is_string()) return "expected {\"path\": ..., ...}";
      return a.contains("missing") || a.contains("unreadable") ? "" : checkImageFields(a);
    case Kind::kOptions: {
      if (!a.is_object() || !a.contains("options") || !a.contains("values")) return "expected {\"options\": [...], \"values\": [...]}";
      for (const char* key : {"options", "values"}) {
        const Json& v = a.at(key);
        if (!v.is_null() && (!v.is_array() || v.size() > kMaxOptions)) return std::string(key) + " must be an array of at most 64";
      }
      if (a.at("options").is_array()) {
        for (const Json& id : a.at("options")) {
          if (!id.is_null() && !id.is_number_integer()) return "options must be numbers";
        }
      }
      if (a.at("values").is_array()) {
        for (const Json& v : a.at("values")) {
          if (!(v.is_null() || isUnsigned(v) || (v.is_object() && v.contains("pointer")))) return "option values must be numbers or {\"pointer\": ...}";
        }
      }
      return "";
    }
    case Kind::kLaunchFunc: return isName(a) ? "" : "expected a function or kernel name";
    case Kind::kKernelParams: {
      if (!a.is_object() || !a.contains("layout") || !a.at("layout").is_string()) return "expected {\"layout\": ..., \"params\": [...]}";
      if (!a.contains("params")) return a.at("layout") == "unknown" ? "" : "a known layout needs its \"params\"";
      if (!a.at("params").is_array() || a.at("params").size() > kMaxParams) return "\"params\" must be an array of at most 1024";
      for (size_t i = 0; i < a.at("params").size(); ++i) {
        const std::string why = checkParam(a.at("params")[i], false);
        if (!why.empty()) return "parameter " + std::to_string(i) + ": " + why;
      }
      return "";
    }
    case Kind::kKernelExtra: {
      if (!a.is_object()) return "expected an extra object";
      if (a.contains("unreadable") && !a.contains("layout")) return "";
      if (!a.contains("layout") || !a.at("layout").is_string()) return "expected {\"layout\": ..., ...}";
      if (!a.contains("buffer_bytes") || !(a.at("buffer_bytes").is_null() || isUnsigned(a.at("buffer_bytes")))) {
        return "\"buffer_bytes\" must be a number or null";
      }
      if (!a.at("buffer_bytes").is_null() && a.at("buffer_bytes").get<uint64_t>() > kMaxParamBytes) return "an extra buffer holds at most 32768 bytes";
      if (a.contains("params")) {
        if (!a.at("params").is_array() || a.at("params").size() > kMaxParams) return "\"params\" must be an array of at most 1024";
        for (size_t i = 0; i < a.at("params").size(); ++i) {
          const std::string why = checkParam(a.at("params")[i], true);
          if (!why.empty()) return "parameter " + std::to_string(i) + ": " + why;
        }
      } else if (a.contains("hex") || a.contains("value") || a.contains("addr")) {
        if (a.at("buffer_bytes").is_null()) return "a whole extra buffer needs its \"buffer_bytes\"";
        Json whole = a;
        whole["size"] = a.at("buffer_bytes");
        return checkParam(whole, false);
      }
      return "";
    }
    case Kind::kLaunchConfig: {
      if (!a.is_object()) return "expected a launch configuration object";
      if (a.contains("unreadable")) return "";
      for (const char* d : kConfigDims) {
        if (!a.contains(d) || !isUnsigned(a.at(d)) || a.at(d).get<uint64_t>() > UINT32_MAX) return std::string("\"") + d + "\" must be a number";
      }
      if (!a.contains("hStream") || !isName(a.at("hStream"))) return "\"hStream\" must be a stream name";
      if (!a.contains("numAttrs") || !isUnsigned(a.at("numAttrs")) || a.at("numAttrs").get<uint64_t>() > UINT32_MAX) {
        return "\"numAttrs\" must be a number";
      }
      if (!a.contains("attrs")) return "\"attrs\" is missing";
      const Json& attrs = a.at("attrs");
      if (attrs.is_null() || (attrs.is_object() && attrs.contains("raw_ptr"))) return "";
      if (!attrs.is_array() || attrs.size() > kMaxAttrs) return "\"attrs\" must be an array of at most 64";
      for (const Json& e : attrs) {
        if (e.is_object() && e.contains("unreadable")) continue;
        if (!e.is_object() || !e.contains("id") || !e.at("id").is_number_integer() || !e.contains("value") || !e.at("value").is_string()) {
          return "an attribute needs \"id\" and \"value\"";
        }
        std::vector<uint8_t> v;
        if (!fromHex(e.at("value").get<std::string>(), &v) || v.size() > 64) return "an attribute's value must be hex of at most 64 bytes";
        for (const char* head : {"event", "addr"}) {
          if (e.contains(head) && !isName(e.at(head))) return std::string("an attribute's \"") + head + "\" must be a name";
        }
      }
      return "";
    }
    default: return "";
  }
}

Json launchParamValues(const Json& args) {
  Json out = Json::object();
  if (args.contains("kernel")) out["kernel"] = args.at("kernel");
  for (const char* key : {"kernelParams", "extra"}) {
    if (!args.contains(key) || !args.at(key).is_object()) continue;
    const Json& a = args.at(key);
    Json v = Json::object();
    if (a.contains("params") && a.at("params").is_array()) {
      Json ps = Json::array();
      for (const Json& p : a.at("params")) {
        Json q = p;
        if (q.is_object()) q.erase("offset");
        ps.push_back(std::move(q));
      }
      v["params"] = std::move(ps);
    }
    for (const char* k : {"hex", "value", "addr", "addrs"}) {
      if (a.contains(k)) v[k] = a.at(k);
    }
    out[key] = std::move(v);
  }
  return out;
}

}  // namespace mcsim::trace
