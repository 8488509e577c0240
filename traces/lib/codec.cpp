#include "traces/lib/codec.h"

#include "traces/lib/codec_kernels.h"
#include "traces/lib/image.h"

#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace mcsim::trace {

namespace {

constexpr size_t kMaxArray = 4096;  // longer arrays are not read (the driver refuses them anyway)
constexpr size_t kMaxString = 1024;
constexpr size_t kScratch = 4096;   // what a raw non-null pointer is replayed as

template <typename T>
T load(uint64_t slot) {
  T v;
  std::memcpy(&v, reinterpret_cast<const void*>(static_cast<uintptr_t>(slot)), sizeof(T));
  return v;
}

void* ptr(uint64_t slot) { return reinterpret_cast<void*>(static_cast<uintptr_t>(slot)); }

// JSON needs valid UTF-8; driver strings are ASCII, anything else is replaced.
std::string printable(const char* s, size_t max) {
  std::string out;
  for (size_t i = 0; i < max && s[i] != '\0'; ++i) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    out.push_back(c >= 0x20 && c < 0x7f ? static_cast<char>(c) : '?');
  }
  return out;
}

std::string hexValue(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

Json scalar(CType t, uint64_t s) {
  switch (t) {
    case CType::kI32: return static_cast<int32_t>(s);
    case CType::kU32: return static_cast<uint32_t>(s);
    case CType::kI64: return static_cast<int64_t>(s);
    case CType::kF32: {
      float f;
      const uint32_t bits = static_cast<uint32_t>(s);
      std::memcpy(&f, &bits, sizeof f);
      return f;
    }
    case CType::kU64:
    case CType::kPtr: break;
  }
  return s;
}

uint64_t scalarSlot(CType t, const Json& j) {
  if (t == CType::kF32) {
    const float f = j.get<float>();
    uint32_t bits;
    std::memcpy(&bits, &f, sizeof bits);
    return bits;
  }
  if (j.is_number_unsigned()) return j.get<uint64_t>();
  return static_cast<uint64_t>(j.get<int64_t>());
}

// Reads a host buffer the program passed without trusting its size: a call given a short buffer
// and a long count must fail in the driver, not crash in the recorder. process_vm_readv on our own
// process reports EFAULT instead of faulting. Returns false when any byte is unreadable; `data`
// (when not null) receives the bytes, and the digest is computed either way.
bool readHost(uint64_t addr, uint64_t n, std::string* digest, std::vector<uint8_t>* data) {
  constexpr uint64_t kChunk = 1u << 20;
  constexpr uint64_t kLimit = uint64_t{1} << 34;  // no program copies 16 GiB from the host at once
  if (n > kLimit) return false;
  std::vector<uint8_t> chunk(static_cast<size_t>(std::min(n, kChunk)));
  uint64_t h = 0xcbf29ce484222325ull;
  if (data != nullptr) data->clear();
  for (uint64_t done = 0; done < n;) {
    const size_t len = static_cast<size_t>(std::min(kChunk, n - done));
    iovec local{chunk.data(), len};
    iovec remote{reinterpret_cast<void*>(static_cast<uintptr_t>(addr + done)), len};
    if (::process_vm_readv(::getpid(), &local, 1, &remote, 1, 0) != static_cast<ssize_t>(len)) return false;
    for (size_t i = 0; i < len; ++i) {
      h ^= chunk[i];
      h *= 0x100000001b3ull;
    }
    if (data != nullptr) data->insert(data->end(), chunk.begin(), chunk.begin() + static_cast<std::ptrdiff_t>(len));
    done += len;
  }
  char buf[20];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  *digest = buf;
  return true;
}

Json raw(uint64_t v) { return Json{{"raw", hexValue(v)}}; }

// What a replay runs for the program's host functions (cuLaunchHostFunc, cuStreamAddCallback):
// they belong to the recorded process. It reads none of the arguments it is called with.
void replayedHostFunction() {}

// A pointer nobody described: only whether it was null is stable from run to run.
Json rawPointer(uint64_t v) { return v == 0 ? Json() : Json{{"raw_ptr", "nonnull"}}; }

Json handleIn(HandleKind k, uint64_t v, const Names& names) {
  if (k == HandleKind::kStream && v <= 2) {
    return v == 0 ? Json() : Json(v == 1 ? "legacy" : "per_thread");
  }
  if (v == 0) return Json();
  std::string n = names.handle(k, v);
  // cuLaunchKernel and friends take a CUkernel where a CUfunction is expected.
  if (n.empty() && k == HandleKind::kFunction) n = names.handle(HandleKind::kKernel, v);
  return n.empty() ? raw(v) : Json(n);
}

Json address(bool host, uint64_t v, const Names& names) {
  if (v == 0) return 0;
  std::string n = names.address(host, v);
  return n.empty() ? raw(v) : Json(n);
}

Json location(const CUmemLocation& l) { return Json{{"type", static_cast<int>(l.type)}, {"id", l.id}}; }

Json structValue(StructKind k, const void* p) {
  switch (k) {
    case StructKind::kAllocProp: {
      const auto& s = *static_cast<const CUmemAllocationProp*>(p);
      Json j{{"type", static_cast<int>(s.type)},
             {"requestedHandleTypes", static_cast<int>(s.requestedHandleTypes)},
             {"location", location(s.location)},
             {"win32HandleMetaData", s.win32HandleMetaData == nullptr ? Json() : Json("nonnull")},
             {"compressionType", s.allocFlags.compressionType},
             {"gpuDirectRDMACapable", s.allocFlags.gpuDirectRDMACapable},
             {"usage", s.allocFlags.usage}};
      j["reserved"] = toHex(s.allocFlags.reserved, sizeof s.allocFlags.reserved);
      return j;
    }
    case StructKind::kLocation: return location(*static_cast<const CUmemLocation*>(p));
    case StructKind::kMcProp: {
      const auto& s = *static_cast<const CUmulticastObjectProp*>(p);
      return Json{{"numDevices", s.numDevices}, {"size", s.size}, {"handleTypes", s.handleTypes}, {"flags", s.flags}};
    }
    case StructKind::kPoolProps: {
      const auto& s = *static_cast<const CUmemPoolProps*>(p);
      return Json{{"allocType", static_cast<int>(s.allocType)},
                  {"handleTypes", static_cast<int>(s.handleTypes)},
                  {"location", location(s.location)},
                  {"win32SecurityAttributes", s.win32SecurityAttributes == nullptr ? Json() : Json("nonnull")},
                  {"maxSize", s.maxSize},
                  {"usage", s.usage},
                  {"reserved", toHex(s.reserved, sizeof s.reserved)}};
    }
    case StructKind::kNone: break;
  }
  return Json();
}

size_t structSize(StructKind k) {
  switch (k) {
    case StructKind::kAllocProp: return sizeof(CUmemAllocationProp);
    case StructKind::kLocation: return sizeof(CUmemLocation);
    case StructKind::kMcProp: return sizeof(CUmulticastObjectProp);
    case StructKind::kPoolProps: return sizeof(CUmemPoolProps);
    case StructKind::kNone: break;
  }
  return 0;
}

CUmemLocation toLocation(const Json& j) {
  CUmemLocation l{};
  l.type = static_cast<CUmemLocationType>(j.at("type").get<int>());
  l.id = j.at("id").get<int>();
  return l;
}

void hexInto(const Json& j, const char* key, void* dst, size_t n) {
  std::vector<uint8_t> b;
  if (n != 0 && j.contains(key) && fromHex(j.at(key).get<std::string>(), &b) && b.size() == n) std::memcpy(dst, b.data(), n);
}

// A descriptor back from JSON into `dst` (zeroed, structSize bytes). Pointers inside descriptors
// were recorded only as null / non-null; a non-null one is replayed as a scratch buffer.
void structFrom(StructKind k, const Json& j, void* dst, Arena& arena) {
  switch (k) {
    case StructKind::kAllocProp: {
      auto& s = *static_cast<CUmemAllocationProp*>(dst);
      s.type = static_cast<CUmemAllocationType>(j.at("type").get<int>());
      s.requestedHandleTypes = static_cast<CUmemAllocationHandleType>(j.at("requestedHandleTypes").get<int>());
      s.location = toLocation(j.at("location"));
      s.win32HandleMetaData = j.value("win32HandleMetaData", Json()).is_null() ? nullptr : arena.bytes(kScratch);
      s.allocFlags.compressionType = j.at("compressionType").get<unsigned char>();
      s.allocFlags.gpuDirectRDMACapable = j.at("gpuDirectRDMACapable").get<unsigned char>();
      s.allocFlags.usage = j.at("usage").get<unsigned short>();
      hexInto(j, "reserved", s.allocFlags.reserved, sizeof s.allocFlags.reserved);
      return;
    }
    case StructKind::kLocation: *static_cast<CUmemLocation*>(dst) = toLocation(j); return;
    case StructKind::kMcProp: {
      auto& s = *static_cast<CUmulticastObjectProp*>(dst);
      s.numDevices = j.at("numDevices").get<unsigned int>();
      s.size = j.at("size").get<size_t>();
      s.handleTypes = j.at("handleTypes").get<unsigned long long>();
      s.flags = j.at("flags").get<unsigned long long>();
      return;
    }
    case StructKind::kPoolProps: {
      auto& s = *static_cast<CUmemPoolProps*>(dst);
      s.allocType = static_cast<CUmemAllocationType>(j.at("allocType").get<int>());
      s.handleTypes = static_cast<CUmemAllocationHandleType>(j.at("handleTypes").get<int>());
      s.location = toLocation(j.at("location"));
      s.win32SecurityAttributes = j.value("win32SecurityAttributes", Json()).is_null() ? nullptr : arena.bytes(kScratch);
      s.maxSize = j.at("maxSize").get<size_t>();
      s.usage = j.at("usage").get<unsigned short>();
      hexInto(j, "reserved", s.reserved, sizeof s.reserved);
      return;
    }
    case StructKind::kNone: return;
  }
}

enum class AttrValue { kCtx, kDeviceAddress, kHostAddress, kPool, kBytes16, kU64, kU32 };

AttrValue pointerAttributeValue(uint64_t attr) {
  switch (attr) {
    case CU_POINTER_ATTRIBUTE_CONTEXT: return AttrValue::kCtx;
    case CU_POINTER_ATTRIBUTE_DEVICE_POINTER:
    case CU_POINTER_ATTRIBUTE_RANGE_START_ADDR:
    case CU_POINTER_ATTRIBUTE_MAPPING_BASE_ADDR: return AttrValue::kDeviceAddress;
    case CU_POINTER_ATTRIBUTE_HOST_POINTER: return AttrValue::kHostAddress;
    case CU_POINTER_ATTRIBUTE_MEMPOOL_HANDLE: return AttrValue::kPool;
    case CU_POINTER_ATTRIBUTE_P2P_TOKENS: return AttrValue::kBytes16;
    case CU_POINTER_ATTRIBUTE_BUFFER_ID:
    case CU_POINTER_ATTRIBUTE_RANGE_SIZE:
    case CU_POINTER_ATTRIBUTE_ALLOWED_HANDLE_TYPES:
    case CU_POINTER_ATTRIBUTE_MAPPING_SIZE:
    case CU_POINTER_ATTRIBUTE_MEMORY_BLOCK_ID: return AttrValue::kU64;
    default: return AttrValue::kU32;
  }
}

Json pointerAttribute(uint64_t attr, const void* p, Names& names) {
  const uint64_t v = [&] {
    uint64_t x = 0;
    std::memcpy(&x, p, pointerAttributeValue(attr) == AttrValue::kU32 ? 4 : 8);
    return x;
  }();
  switch (pointerAttributeValue(attr)) {
    case AttrValue::kCtx: return v == 0 ? Json() : Json(names.outHandle(HandleKind::kCtx, v, false));
    case AttrValue::kDeviceAddress: return v == 0 ? Json(0) : Json(names.outAddress(false, v));
    case AttrValue::kHostAddress: {
      if (v == 0) return 0;
      std::string n = names.address(true, v);
      return n.empty() ? Json{{"raw_ptr", "nonnull"}} : Json(n);
    }
    case AttrValue::kPool: return v == 0 ? Json() : Json(names.outHandle(HandleKind::kPool, v, false));
    case AttrValue::kBytes16: return toHex(p, 16);
    case AttrValue::kU64: return v;
    case AttrValue::kU32: return static_cast<uint32_t>(v);
  }
  return Json();
}

bool poolAttributeIs64(uint64_t attr) { return attr >= CU_MEMPOOL_ATTR_RELEASE_THRESHOLD; }

bool setsPoolAttribute(const CallDesc& d) { return std::strstr(d.base, "Set") != nullptr; }

bool isOutput(Kind k) {
  switch (k) {
    case Kind::kHandleOut: case Kind::kHandleNew: case Kind::kAddrOut: case Kind::kAddrNew:
    case Kind::kHostOut: case Kind::kHostNew: case Kind::kOutStr: case Kind::kOutCStr:
    case Kind::kOutScalar: case Kind::kOutBytes: case Kind::kStructOut: case Kind::kShareableOut:
    case Kind::kPtrAttr: case Kind::kPfn: case Kind::kHandleArray: return true;
    default: return false;
  }
}

}  // namespace

std::string toHex(const void* data, size_t n) {
  static const char* digits = "0123456789abcdef";
  std::string s(2 * n, '0');
  const auto* b = static_cast<const uint8_t*>(data);
  for (size_t i = 0; i < n; ++i) {
    s[2 * i] = digits[b[i] >> 4];
    s[2 * i + 1] = digits[b[i] & 15];
  }
  return s;
}

bool fromHex(const std::string& hex, std::vector<uint8_t>* out) {
  if (hex.size() % 2 != 0) return false;
  out->resize(hex.size() / 2);
  for (size_t i = 0; i < out->size(); ++i) {
    int v = 0;
    for (int k = 0; k < 2; ++k) {
      const char c = hex[2 * i + static_cast<size_t>(k)];
      const int d = (c >= '0' && c <= '9') ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10 : -1;
      if (d < 0) return false;
      v = v * 16 + d;
    }
    (*out)[i] = static_cast<uint8_t>(v);
  }
  return true;
}

namespace {
const char kBase64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
}

std::string toBase64(const void* data, size_t n) {
  const auto* b = static_cast<const uint8_t*>(data);
  std::string s;
  s.reserve((n + 2) / 3 * 4);
  for (size_t i = 0; i < n; i += 3) {
    const uint32_t v = (uint32_t{b[i]} << 16) | (i + 1 < n ? uint32_t{b[i + 1]} << 8 : 0) | (i + 2 < n ? b[i + 2] : 0);
    s.push_back(kBase64[(v >> 18) & 63]);
    s.push_back(kBase64[(v >> 12) & 63]);
    s.push_back(i + 1 < n ? kBase64[(v >> 6) & 63] : '=');
    s.push_back(i + 2 < n ? kBase64[v & 63] : '=');
  }
  return s;
}

bool fromBase64(const std::string& text, std::vector<uint8_t>* out) {
  out->clear();
  if (text.size() % 4 != 0) return false;
  for (size_t i = 0; i < text.size(); i += 4) {
    uint32_t v = 0;
    int pad = 0;
    for (size_t k = 0; k < 4; ++k) {
      const char c = text[i + k];
      int d;
      if (c == '=' && k >= 2 && i + 4 == text.size()) {
        d = 0;
        ++pad;
      } else {
        const char* at = (c == '\0' || pad > 0) ? nullptr : std::strchr(kBase64, c);
        if (at == nullptr) return false;
        d = static_cast<int>(at - kBase64);
      }
      v = (v << 6) | static_cast<uint32_t>(d);
    }
    out->push_back(static_cast<uint8_t>(v >> 16));
    if (pad < 2) out->push_back(static_cast<uint8_t>(v >> 8));
    if (pad < 1) out->push_back(static_cast<uint8_t>(v));
  }
  return true;
}

std::string digestHex(const void* data, size_t n) {
  uint64_t h = 0xcbf29ce484222325ull;
  const auto* b = static_cast<const uint8_t*>(data);
  for (size_t i = 0; i < n; ++i) {
    h ^= b[i];
    h *= 0x100000001b3ull;
  }
  char buf[20];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

void encodeInputs(const CallDesc& d, const uint64_t* slots, const Names& names, const RecordOptions& o, Json* args) {
  *args = Json::object();
  FunctionInfo launched;  // a launch's function (kLaunchFunc comes before its parameters)
  for (int i = 0; i < d.nparams; ++i) {
    const ParamDesc& p = d.params[i];
    const uint64_t s = slots[i];
    Json& a = (*args)[p.name];
    if (isOutput(p.kind)) {
      a = s == 0 ? Json() : Json("out");
      // A host output inside pinned host memory is named, so that the replay writes into its own
      // pinned memory too: pinned and pageable copies take different (simulated and real) times.
      if (p.kind == Kind::kHostOut && s != 0) {
        const std::string pinned = names.address(true, s);
        if (!pinned.empty()) a = Json(pinned);
      }
      continue;
    }
    switch (p.kind) {
      case Kind::kScalar: a = scalar(p.ctype, s); break;
      case Kind::kHandleIn: a = handleIn(static_cast<HandleKind>(p.sub), s, names); break;
      case Kind::kAddrIn: a = address(false, s, names); break;
      case Kind::kHostPtr: a = address(true, s, names); break;
      case Kind::kHostIn: {
        if (s == 0) break;
        const uint64_t n = slots[p.ref];
        std::string digest;
        std::vector<uint8_t> data;
        if (!readHost(s, n, &digest, n <= o.dataLimit ? &data : nullptr)) {
          a = Json{{"bytes", n}, {"unreadable", true}};
          break;
        }
        a = Json{{"bytes", n}, {"digest", digest}};
        if (n <= o.dataLimit) a["data"] = toBase64(data.data(), data.size());
        // Data in pinned host memory is replayed from the replay's pinned memory (see kHostOut).
        const std::string pinned = names.address(true, s);
        if (!pinned.empty()) a["at"] = pinned;
        break;
      }
      case Kind::kStrIn: a = s == 0 ? Json() : Json(printable(static_cast<const char*>(ptr(s)), kMaxString)); break;
      case Kind::kStructIn: {
        if (s != 0) a = structValue(static_cast<StructKind>(p.sub), ptr(s));
        break;
      }
      case Kind::kAccessDescs: {
        if (s == 0) break;
        const uint64_t n = slots[p.ref];
        if (n > kMaxArray) {
          a = Json{{"raw_ptr", "nonnull"}};
          break;
        }
        a = Json::array();
        const auto* descs = static_cast<const CUmemAccessDesc*>(ptr(s));
        for (uint64_t k = 0; k < n; ++k) {
          a.push_back(Json{{"location", location(descs[k].location)}, {"flags", static_cast<int>(descs[k].flags)}});
        }
        break;
      }
      case Kind::kShareableIn: {
        const uint64_t type = shareableType(p, slots);
        if (type == CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) {
          const int fd = static_cast<int>(static_cast<intptr_t>(s));
          std::string n = names.fd(fd);
          a = n.empty() ? Json{{"raw_fd", fd}} : Json(n);
        } else if ((type == CU_MEM_HANDLE_TYPE_FABRIC || type == kIpcHandleType) && s != 0) {
          const std::string bytes(static_cast<const char*>(ptr(s)), sizeof(CUmemFabricHandle));
          std::string n = names.blob(bytes);
          a = n.empty() ? Json{{"data", toHex(bytes.data(), bytes.size())}} : Json(n);
        } else {
          a = rawPointer(s);
        }
        break;
      }
      case Kind::kPtrAttrs: {
        if (s == 0) break;
        const uint64_t n = slots[p.ref];
        const uint64_t list = slots[p.ref2];
        if (n > kMaxArray || list == 0) {
          a = Json{{"raw_ptr", "nonnull"}};
          break;
        }
        a = Json{{"attributes", Json::array()}};
        for (uint64_t k = 0; k < n; ++k) a["attributes"].push_back(static_cast<int>(static_cast<const CUpointer_attribute*>(ptr(list))[k]));
        break;
      }
      case Kind::kPoolAttr: {
        if (!setsPoolAttribute(d)) {
          a = s == 0 ? Json() : Json("out");
        } else if (s != 0) {
          a = poolAttributeIs64(slots[p.ref]) ? Json(load<uint64_t>(s)) : Json(load<int>(s));
        }
        break;
      }
      case Kind::kAux: args->erase(p.name); break;
      case Kind::kRaw: a = p.ctype == CType::kPtr ? rawPointer(s) : Json{{"raw", scalar(p.ctype, s)}}; break;
      case Kind::kImage: a = encodeImage(s, o); break;
      case Kind::kImageFile: a = encodeImageFile(s, o); break;
      case Kind::kOptions: a = encodeOptions(p.sub == 1, slots[p.ref], s, slots[p.ref2]); break;
      case Kind::kLaunchFunc:
        a = encodeLaunchFunc(s, names, o, &launched);
        // The name travels beside the handle (`a` is not used after this insertion).
        (*args)["kernel"] = launched.name.empty() ? Json() : Json(launched.name);
        break;
      case Kind::kKernelParams: a = encodeKernelParams(launched, s, names); break;
      case Kind::kKernelExtra: a = encodeKernelExtra(launched, s, names); break;
      case Kind::kLaunchConfig: a = encodeLaunchConfig(s, names); break;
      case Kind::kHostFn: a = s == 0 ? Json() : Json{{"host_fn", "program"}}; break;
      default: break;
    }
  }
}

namespace {

// A C string the program passed, read without trusting it.
std::string safeString(uint64_t at) {
  std::string out;
  char c = 0;
  while (at != 0 && out.size() < kMaxString && safeRead(at + out.size(), &c, 1) && c != '\0') out.push_back(c);
  return out;
}

// Function and kernel handles keep the name they were looked up by: cuModuleGetFunction's and
// cuLibraryGetKernel's `name`, or the kernel's own label for cuKernelGetFunction.
void labelOutputs(const CallDesc& d, const uint64_t* slots, Names& names) {
  std::string label;
  for (int i = 0; i < d.nparams; ++i) {
    const ParamDesc& p = d.params[i];
    if (p.kind == Kind::kStrIn && std::strcmp(p.name, "name") == 0) label = safeString(slots[i]);
    if (p.kind == Kind::kHandleIn && static_cast<HandleKind>(p.sub) == HandleKind::kKernel) {
      label = names.label(HandleKind::kKernel, slots[i]);
    }
  }
  if (label.empty()) return;
  for (int i = 0; i < d.nparams; ++i) {
    const ParamDesc& p = d.params[i];
    const auto k = static_cast<HandleKind>(p.sub);
    if ((p.kind != Kind::kHandleOut && p.kind != Kind::kHandleNew) || slots[i] == 0) continue;
    if (k != HandleKind::kFunction && k != HandleKind::kKernel) continue;
    const uint64_t h = load<uint64_t>(slots[i]);
    if (h != 0) names.setLabel(k, h, label);
  }
}

}  // namespace

void encodeOutputs(const CallDesc& d, const uint64_t* slots, Names& names, const RecordOptions& o, Json* out) {
  *out = Json::object();
  for (int i = 0; i < d.nparams; ++i) {
    const ParamDesc& p = d.params[i];
    const uint64_t s = slots[i];
    const bool getsPool = p.kind == Kind::kPoolAttr && !setsPoolAttribute(d);
    if (s == 0 || !(isOutput(p.kind) || p.kind == Kind::kPtrAttrs || getsPool)) continue;
    Json v;
    switch (p.kind) {
      case Kind::kHandleOut:
      case Kind::kHandleNew: {
        const uint64_t h = load<uint64_t>(s);
        v = h == 0 ? Json() : Json(names.outHandle(static_cast<HandleKind>(p.sub), h, p.kind == Kind::kHandleNew));
        break;
      }
      case Kind::kAddrNew: v = names.newRegion(false, load<uint64_t>(s), slots[p.ref]); break;
      case Kind::kAddrOut: {
        const uint64_t a = load<uint64_t>(s);
        v = a == 0 ? Json(0) : Json(names.outAddress(false, a));
        break;
      }
      case Kind::kHostNew: v = names.newRegion(true, load<uint64_t>(s), slots[p.ref]); break;
      case Kind::kHostOut: {
        const uint64_t n = slots[p.ref];
        v = Json{{"digest", digestHex(ptr(s), n)}};
        if (o.outputData && n <= o.dataLimit) v["data"] = toBase64(ptr(s), n);
        break;
      }
      case Kind::kOutStr: {
        const auto len = static_cast<int64_t>(slots[p.ref]);
        if (len > 0) v = printable(static_cast<const char*>(ptr(s)), static_cast<size_t>(std::min<int64_t>(len, kMaxString)));
        break;
      }
      case Kind::kOutCStr: {
        const char* str = load<const char*>(s);
        if (str != nullptr) v = printable(str, kMaxString);
        break;
      }
      case Kind::kOutScalar: {
        const CType t = static_cast<CType>(p.sub);
        const bool wide = t == CType::kI64 || t == CType::kU64;
        v = scalar(t, wide ? load<uint64_t>(s) : load<uint32_t>(s));
        break;
      }
      case Kind::kOutBytes: v = toHex(ptr(s), p.sub); break;
      case Kind::kStructOut: v = structValue(static_cast<StructKind>(p.sub), ptr(s)); break;
      case Kind::kShareableOut: {
        const uint64_t type = shareableType(p, slots);
        if (type == CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) {
          v = names.newFd(load<int>(s));
        } else if (type == CU_MEM_HANDLE_TYPE_FABRIC || type == kIpcHandleType) {
          v = names.newBlob(std::string(static_cast<const char*>(ptr(s)), sizeof(CUmemFabricHandle)),
                            type == kIpcHandleType ? "ipc" : "fabric");
        }
        break;
      }
      case Kind::kPtrAttr: v = pointerAttribute(slots[p.ref], ptr(s), names); break;
      case Kind::kPtrAttrs: {
        const uint64_t n = slots[p.ref];
        const uint64_t list = slots[p.ref2];
        if (n > kMaxArray || list == 0) break;
        v = Json::array();
        for (uint64_t k = 0; k < n; ++k) {
          void* slot = static_cast<void**>(ptr(s))[k];
          const auto attr = static_cast<uint64_t>(static_cast<const CUpointer_attribute*>(ptr(list))[k]);
          v.push_back(slot == nullptr ? Json() : pointerAttribute(attr, slot, names));
        }
        break;
      }
      case Kind::kPoolAttr: v = poolAttributeIs64(slots[p.ref]) ? Json(load<uint64_t>(s)) : Json(load<int>(s)); break;
      case Kind::kPfn: {
        void* fn = load<void*>(s);
        const char* sym = (fn != nullptr && o.symbolOf != nullptr) ? o.symbolOf(fn) : nullptr;
        v = fn == nullptr ? Json() : Json(sym != nullptr ? sym : "unwrapped");
        break;
      }
      case Kind::kHandleArray: v = encodeHandleArray(static_cast<HandleKind>(p.sub), s, slots[p.ref], names); break;
      default: break;
    }
    (*out)[p.name] = std::move(v);
  }
  labelOutputs(d, slots, names);
}

bool Binder::lookup(const std::string& name, uint64_t* v) const {
  auto it = values_.find(name);
  if (it == values_.end()) return false;
  *v = it->second;
  return true;
}

const std::vector<uint8_t>* Binder::blob(const std::string& name) const {
  auto it = blobs_.find(name);
  return it == blobs_.end() ? nullptr : &it->second;
}

void* Arena::bytes(size_t n) {
  blocks_.emplace_back(std::max<size_t>(n, 16), 0);
  return blocks_.back().data();
}

void* Arena::copy(const std::vector<uint8_t>& b) {
  blocks_.emplace_back(b);
  blocks_.back().resize(std::max<size_t>(b.size(), 16));
  return blocks_.back().data();
}

std::string Arena::writeFile(const std::string& name, const std::vector<uint8_t>& b) {
  if (fileDir_.empty()) return "";
  std::error_code ec;
  std::filesystem::create_directories(fileDir_, ec);
  // Numbered, so that two files of the same name (from different directories) stay apart.
  const std::string path = fileDir_ + "/" + std::to_string(++files_) + "-" + (name.empty() ? std::string("image") : name);
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
  return out ? path : std::string();
}

namespace {

// A size a trace asks the replayer to allocate, refused (as a bad trace) above `limit`.
uint64_t checkedSize(uint64_t n, uint64_t limit, const char* what) {
  if (n > limit) throw std::runtime_error(std::string(what) + " of " + std::to_string(n) + " bytes is larger than a replay allows");
  return n;
}

// Refuses a record whose count (`ByteCount`, `count`, ...) asks the call to touch more elements
// than the record holds: the driver would read (or write) past what the replay gives it.
void requireRecorded(const CallDesc& d, const ParamDesc& p, int countParam, uint64_t count, uint64_t recorded,
                     const char* unit) {
  if (count <= recorded) return;
  throw std::runtime_error(std::string("'") + d.params[countParam].name + "' is " + std::to_string(count) + " but '" +
                           p.name + "' holds " + std::to_string(recorded) + " " + unit + " in the trace");
}

// What stands in for a pointer the trace did not record (a raw pointer, an unreadable buffer): a
// zeroed buffer with room for what the call may touch through it (for a host buffer, its count;
// arrays of descriptors need no more than a scratch page: their zeroed first element is invalid,
// and the driver stops there). A host buffer of more than kMaxStandIn is replayed as NULL, which
// the driver refuses as it refused the unreadable original, rather than as gigabytes of zeroes.
constexpr uint64_t kMaxStandIn = uint64_t{64} << 20;
uint64_t standIn(const ParamDesc& p, const uint64_t* slots, Arena& arena) {
  uint64_t n = kScratch;
  if (p.kind == Kind::kHostIn || p.kind == Kind::kHostOut) n = std::max<uint64_t>(n, slots[p.ref]);
  return n <= kMaxStandIn ? toSlot(arena.bytes(static_cast<size_t>(n))) : 0;
}

}  // namespace

// A name ("va2+4096") or raw value back to a live value.
bool resolveValue(const Json& j, const Binder& b, uint64_t* v, std::string* problem) {
  if (j.is_null()) {
    *v = 0;
    return true;
  }
  if (j.is_number()) {
    *v = j.get<uint64_t>();
    return true;
  }
  if (j.is_object() && j.contains("raw")) {
    *v = std::stoull(j.at("raw").get<std::string>(), nullptr, 16);
    return true;
  }
  if (j.is_string()) {
    const std::string s = j.get<std::string>();
    if (s == "legacy") return *v = 1, true;
    if (s == "per_thread") return *v = 2, true;
    const auto parsed = parseName(s);
    uint64_t base = 0;
    if (parsed && b.lookup(parsed->base, &base)) {
      *v = base + parsed->offset;
      return true;
    }
    *problem = "'" + s + "' names nothing the replay has";
    *v = 0;
    return false;
  }
  *problem = "unreadable value " + j.dump();
  return false;
}

namespace {

bool resolve(const Json& j, const Binder& b, uint64_t* v, std::string* problem) { return resolveValue(j, b, v, problem); }

// The address in the replay's own pinned host memory that a recorded name ("host1+64") stands
// for, when `n` bytes from there lie inside that allocation; 0 otherwise.
uint64_t pinnedAddress(const Json& name, uint64_t n, const Binder& b, std::string* problem) {
  if (!name.is_string()) return 0;
  const auto at = parseName(name.get<std::string>());
  uint64_t v = 0;
  if (!at || !b.fits(at->base, at->offset, n) || !resolve(name, b, &v, problem)) return 0;
  return v;
}

}  // namespace

std::string decodeInputs(const CallDesc& d, const Json& args, const Binder& b, Arena& arena, uint64_t* slots,
                         bool* approximate) {
  std::string problem;
  *approximate = false;
  // Scalars first: the sizes and counts that other parameters refer to.
  for (int i = 0; i < d.nparams; ++i) {
    const ParamDesc& p = d.params[i];
    slots[i] = 0;
    if (p.kind == Kind::kScalar && args.contains(p.name)) slots[i] = scalarSlot(p.ctype, args.at(p.name));
  }
  for (int i = 0; i < d.nparams; ++i) {
    const ParamDesc& p = d.params[i];
    if (p.kind == Kind::kScalar || p.kind == Kind::kAux) continue;
    const Json& a = args.contains(p.name) ? args.at(p.name) : Json();
    uint64_t& s = slots[i];
    if (a.is_null()) continue;
    if (a.is_object() && a.contains("raw_ptr")) {
      s = standIn(p, slots, arena);
      continue;
    }
    if (p.kind == Kind::kHostOut && a.is_string() && a.get<std::string>() != "out") {
      // Into the replay's own pinned host memory (encodeInputs), if the whole output fits there.
      const uint64_t n = slots[p.ref];
      s = pinnedAddress(a, n, b, &problem);
      if (s == 0) {
        s = toSlot(arena.bytes(static_cast<size_t>(checkedSize(n, uint64_t{1} << 34, "host buffer"))));
        *approximate = true;
      }
      continue;
    }
    if (isOutput(p.kind)) {
      // Outputs get room for what the call writes: at most a string, a descriptor or 16 bytes.
      size_t n = 16;
      if (p.kind == Kind::kHostOut) n = static_cast<size_t>(checkedSize(slots[p.ref], uint64_t{1} << 34, "host buffer"));
      if (p.kind == Kind::kOutStr) {
        // An int length: a negative one gets a small buffer (the driver refuses it).
        const auto len = static_cast<int64_t>(static_cast<int32_t>(slots[p.ref]));
        n = len <= 0 ? 16 : static_cast<size_t>(checkedSize(static_cast<uint64_t>(len), 1u << 20, "string"));
      }
      if (p.kind == Kind::kStructOut) n = structSize(static_cast<StructKind>(p.sub));
      if (p.kind == Kind::kShareableOut) n = sizeof(CUmemFabricHandle);
      if (p.kind == Kind::kHandleArray) {
        s = handleArrayRoom(slots[p.ref], arena);
        continue;
      }
      s = toSlot(arena.bytes(n));
      continue;
    }
    switch (p.kind) {
      case Kind::kHandleIn:
      case Kind::kAddrIn:
      case Kind::kHostPtr: resolve(a, b, &s, &problem); break;
      case Kind::kHostIn: {
        std::vector<uint8_t> data;
        const uint64_t n = a.at("bytes").get<uint64_t>();
        requireRecorded(d, p, p.ref, slots[p.ref], n, "bytes");
        if (a.value("unreadable", false)) {
          // The recorded program passed a buffer shorter than its count (the call failed there):
          // a stand-in takes its place.
          s = standIn(p, slots, arena);
          *approximate = true;
          break;
        }
        if (!a.contains("data") || !fromBase64(a.at("data").get<std::string>(), &data) || data.size() != n) {
          // Not recorded (larger than the recording's data limit): a filler of the right size.
          data.assign(n, 0xa5);
          *approximate = true;
        }
        // The program's pinned buffer held these bytes when it made the call; so does the replay's.
        const uint64_t at = a.contains("at") ? pinnedAddress(a.at("at"), data.size(), b, &problem) : 0;
        if (at != 0) {
          if (!data.empty()) std::memcpy(reinterpret_cast<void*>(at), data.data(), data.size());
          s = at;
          break;
        }
        s = toSlot(arena.copy(data));
        break;
      }
      case Kind::kStrIn: {
        // With its NUL: a name of 16 characters or more (the arena pads shorter ones with zeroes)
        // would otherwise run into whatever follows it.
        const std::string str = a.get<std::string>();
        std::vector<uint8_t> bytes(str.begin(), str.end());
        bytes.push_back(0);
        s = toSlot(arena.copy(bytes));
        break;
      }
      case Kind::kStructIn: {
        void* dst = arena.bytes(structSize(static_cast<StructKind>(p.sub)));
        structFrom(static_cast<StructKind>(p.sub), a, dst, arena);
        s = toSlot(dst);
        break;
      }
      case Kind::kAccessDescs: {
        requireRecorded(d, p, p.ref, slots[p.ref], a.size(), "descriptors");
        auto* descs = static_cast<CUmemAccessDesc*>(arena.bytes(sizeof(CUmemAccessDesc) * std::max<size_t>(a.size(), 1)));
        size_t k = 0;
        for (const Json& e : a) {
          descs[k].location = toLocation(e.at("location"));
          descs[k].flags = static_cast<CUmemAccess_flags>(e.at("flags").get<int>());
          ++k;
        }
        s = toSlot(descs);
        break;
      }
      case Kind::kShareableIn: {
        if (a.is_object() && a.contains("raw_fd")) {
          s = toSlot(reinterpret_cast<void*>(static_cast<intptr_t>(a.at("raw_fd").get<int>())));
        } else if (a.is_object() && a.contains("data")) {
          std::vector<uint8_t> data;
          fromHex(a.at("data").get<std::string>(), &data);
          // The driver reads a whole fabric handle from it.
          if (data.size() < sizeof(CUmemFabricHandle)) data.resize(sizeof(CUmemFabricHandle));
          s = toSlot(arena.copy(data));
        } else if (const auto* blob = b.blob(a.get<std::string>())) {
          s = toSlot(arena.copy(*blob));
        } else {
          resolve(a, b, &s, &problem);  // an fd name
        }
        break;
      }
      case Kind::kPtrAttrs: {
        const Json& attrs = a.at("attributes");
        requireRecorded(d, p, p.ref, slots[p.ref], attrs.size(), "attributes");
        auto* list = static_cast<CUpointer_attribute*>(arena.bytes(sizeof(CUpointer_attribute) * attrs.size()));
        auto* data = static_cast<void**>(arena.bytes(sizeof(void*) * attrs.size()));
        for (size_t k = 0; k < attrs.size(); ++k) {
          list[k] = static_cast<CUpointer_attribute>(attrs[k].get<int>());
          data[k] = arena.bytes(16);
        }
        s = toSlot(data);
        slots[p.ref2] = toSlot(list);
        break;
      }
      case Kind::kPoolAttr: {
        void* v = arena.bytes(8);
        if (a.is_number()) {
          if (poolAttributeIs64(slots[p.ref])) {
            const uint64_t x = a.get<uint64_t>();
            std::memcpy(v, &x, 8);
          } else {
            const int x = a.get<int>();
            std::memcpy(v, &x, 4);
          }
        }
        s = toSlot(v);
        break;
      }
      case Kind::kRaw:
        if (a.is_object() && a.contains("raw")) s = scalarSlot(p.ctype, a.at("raw"));
        break;
      case Kind::kImage: s = decodeImage(a, arena, approximate); break;
      case Kind::kImageFile: s = decodeImageFile(a, arena, approximate); break;
      case Kind::kOptions:
        requireRecorded(d, p, p.ref, slots[p.ref], optionsRecorded(a), "options");
        decodeOptions(a, arena, &s, &slots[p.ref2]);
        break;
      case Kind::kLaunchFunc: resolve(a, b, &s, &problem); break;
      case Kind::kKernelParams: s = decodeKernelParams(a, b, arena, approximate, &problem); break;
      case Kind::kKernelExtra: s = decodeKernelExtra(a, b, arena, approximate, &problem); break;
      case Kind::kLaunchConfig: s = decodeLaunchConfig(a, b, arena, &problem); break;
      case Kind::kHostFn: s = toSlot(reinterpret_cast<void*>(&replayedHostFunction)); break;
      default: break;
    }
  }
  return problem;
}

void bindOutputs(const CallDesc& d, const uint64_t* slots, const Json& out, Binder& b) {
  for (int i = 0; i < d.nparams; ++i) {
    const ParamDesc& p = d.params[i];
    if (slots[i] == 0 || !out.contains(p.name)) continue;
    const Json& o = out.at(p.name);
    if (p.kind == Kind::kHandleArray) {
      bindHandleArray(o, slots[i], slots[p.ref], b);
      continue;
    }
    if (!o.is_string()) continue;
    const auto parsed = parseName(o.get<std::string>());
    if (!parsed) continue;
    switch (p.kind) {
      case Kind::kHandleOut:
      case Kind::kHandleNew:
      case Kind::kAddrNew:
      case Kind::kHostNew:
        if (parsed->offset == 0) b.bind(parsed->base, load<uint64_t>(slots[i]));
        if (parsed->offset == 0 && p.kind == Kind::kHostNew) b.bindSize(parsed->base, slots[p.ref]);
        break;
      case Kind::kAddrOut: {
        uint64_t known = 0;
        if (!b.lookup(parsed->base, &known)) b.bind(parsed->base, load<uint64_t>(slots[i]) - parsed->offset);
        break;
      }
      case Kind::kShareableOut: {
        if (parsed->prefix == "fd") {
          b.bind(parsed->base, static_cast<uint64_t>(load<int>(slots[i])));
        } else {
          const auto* bytes = static_cast<const uint8_t*>(ptr(slots[i]));
          b.bindBlob(parsed->base, std::vector<uint8_t>(bytes, bytes + sizeof(CUmemFabricHandle)));
        }
        break;
      }
      default: break;
    }
  }
}

int shareableParam(const CallDesc& d, const uint64_t* slots, bool output, uint64_t* type) {
  for (int i = 0; i < d.nparams; ++i) {
    const ParamDesc& p = d.params[i];
    if (p.kind != (output ? Kind::kShareableOut : Kind::kShareableIn)) continue;
    *type = shareableType(p, slots);
    return i;
  }
  return -1;
}

std::string shareableIdentity(const CallDesc& d, const uint64_t* slots, bool output) {
  uint64_t type = 0;
  const int i = shareableParam(d, slots, output, &type);
  if (i < 0) return "";
  const uint64_t s = slots[i];
  if (type == CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) {
    const int fd = output ? load<int>(s) : static_cast<int>(static_cast<intptr_t>(s));
    struct stat st {};
    if (fd < 0 || ::fstat(fd, &st) != 0) return "";
    return "file:" + std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino);
  }
  if (type == CU_MEM_HANDLE_TYPE_FABRIC && s != 0) return "fabric:" + digestHex(ptr(s), sizeof(CUmemFabricHandle));
  if (type == kIpcHandleType && s != 0) return "ipc:" + digestHex(ptr(s), sizeof(CUmemFabricHandle));
  return "";
}

bool isLaunch(const CallDesc& d) {
  for (int i = 0; i < d.nparams; ++i) {
    if (d.params[i].kind == Kind::kLaunchFunc) return true;
  }
  return false;
}

const char* kindName(Kind k) {
  switch (k) {
    case Kind::kScalar: return "scalar";
    case Kind::kHandleIn: return "handle";
    case Kind::kHandleOut: return "output handle";
    case Kind::kHandleNew: return "new handle";
    case Kind::kAddrIn: return "device address";
    case Kind::kAddrOut: return "output device address";
    case Kind::kAddrNew: return "new device region";
    case Kind::kHostIn: return "host input buffer";
    case Kind::kHostOut: return "host output buffer";
    case Kind::kHostNew: return "new host region";
    case Kind::kHostPtr: return "host region pointer";
    case Kind::kStrIn: return "string";
    case Kind::kOutStr: return "output string";
    case Kind::kOutCStr: return "output static string";
    case Kind::kOutScalar: return "output scalar";
    case Kind::kOutBytes: return "output bytes";
    case Kind::kStructIn: return "descriptor";
    case Kind::kStructOut: return "output descriptor";
    case Kind::kAccessDescs: return "access descriptors";
    case Kind::kShareableOut: return "output OS handle";
    case Kind::kShareableIn: return "OS handle";
    case Kind::kPtrAttr: return "pointer attribute";
    case Kind::kPtrAttrs: return "pointer attributes";
    case Kind::kPoolAttr: return "pool attribute";
    case Kind::kPfn: return "function pointer";
    case Kind::kAux: return "auxiliary";
    case Kind::kRaw: return "raw";
    case Kind::kImage: return "module image";
    case Kind::kImageFile: return "module image file";
    case Kind::kOptions: return "options";
    case Kind::kHandleArray: return "output handle array";
    case Kind::kLaunchFunc: return "launched function";
    case Kind::kKernelParams: return "kernel parameters";
    case Kind::kKernelExtra: return "kernel parameter buffer";
    case Kind::kLaunchConfig: return "launch configuration";
    case Kind::kHostFn: return "host function";
  }
  return "?";
}

}  // namespace mcsim::trace
