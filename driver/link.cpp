// The driver's JIT linker: cuLinkCreate, cuLinkAddData, cuLinkAddFile, cuLinkComplete and
// cuLinkDestroy (docs/ptx.md, "Linking with cuLink*").
//
// Inputs are taken as relocatable device code, as the real linker takes them: PTX text, or the
// PTX a fatbin, a cubin-bearing fatbin, a host object or a static library carries for the link's
// target (the best fitting entry, driver/module_image.h's bestPtx rule). What mcsim cannot run,
// SASS, is refused where it holds a kernel (CUDA_ERROR_NO_BINARY_FOR_GPU, naming the input and
// what to rebuild it with); a SASS-only input without kernels (a device library) is kept out of
// the link and named if a symbol is then missing. cuLinkComplete links the objects' PTX with
// ptx/linker.h (every kernel and external variable, with what they reach) and hands back the
// linked module as PTX text, NUL-terminated: an image mcsim's cuModuleLoadData, cuModuleLoad and
// cuLibraryLoadData take as any PTX module. The image is owned by the link state until
// cuLinkDestroy. Messages go to the program's log buffers (CU_JIT_INFO_LOG_BUFFER,
// CU_JIT_ERROR_LOG_BUFFER), accumulated over the state's life, and errors also to stderr.
//
// Link states are never freed: a destroyed one stays known as dead (its inputs and images are
// released), so that a second cuLinkDestroy or any use after it answers CUDA_ERROR_INVALID_HANDLE.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "driver/context.h"
#include "driver/driver.h"
#include "driver/enum_field.h"
#include "driver/link.h"
#include "driver/module_image.h"
#include "driver/module_ptx.h"
#include "files/bounded_file.h"
#include "ptx/linker.h"
#include "ptx/parser.h"

// Both ABI variants are defined here under their exact names.
#include "driver/abi_names.h"

struct CUlinkState_st {
  bool alive = true;
  uint32_t cc = 0;  // the target: the context's device, or CU_JIT_TARGET's
  bool verbose = false;
  // Output options: the program's optionValues array, and which of its slots take the logs'
  // lengths and the wall time (-1: not asked for).
  void** optionValues = nullptr;
  char* infoBuffer = nullptr;
  char* errorBuffer = nullptr;
  size_t infoCapacity = 0, errorCapacity = 0;
  long infoSlot = -1, errorSlot = -1, wallTimeSlot = -1;
  std::string info, error;  // the logs, accumulated until cuLinkDestroy
  // The objects: each input's PTX for the target, named for messages.
  std::vector<std::string> names;
  std::vector<std::unique_ptr<std::string>> texts;
  std::vector<std::string> sassOnly;  // inputs of SASS only without kernels: left out of the link
  std::vector<std::unique_ptr<std::string>> images;  // what cuLinkComplete handed out
};

namespace mcsim::driver {
namespace {

struct LinkTable {
  std::mutex mu;
  std::set<CUlinkState_st*> states;  // every state ever made (never freed)
};

LinkTable& linkTable() {
  static LinkTable* t = new LinkTable();  // leaked: handles outlive static destruction
  return *t;
}

bool liveState(LinkTable& t, CUlinkState s) { return t.states.count(s) != 0 && s->alive; }

// The CUjit_target values cuda.h defines: a compute capability, plus 0x10000 for an
// architecture-specific ("a") target or 0x20000 for a family ("f") one.
bool knownTarget(uint32_t t) {
  static const uint32_t kCc[] = {30, 32, 35, 37, 50, 52, 53, 60, 61, 62, 70, 72, 73, 75,
                                 80, 86, 87, 88, 89, 90, 100, 101, 103, 110, 120, 121};
  const uint32_t base = t >> 16, cc = t & 0xffff;
  if (base > 2) return false;
  for (uint32_t c : kCc)
    if (c == cc) return true;
  return false;
}

std::string arch(uint32_t cc) { return "compute_" + std::to_string(cc); }

// The logs into the program's buffers (capped at their sizes, NUL-terminated), their lengths
// into the size options' slots, and the wall time's slot: the link takes no simulated time.
void flushLogs(CUlinkState_st& st) {
  auto put = [&](char* buffer, size_t capacity, long slot, const std::string& log) {
    if (buffer == nullptr || capacity == 0) return;
    const size_t n = std::min(log.size(), capacity - 1);
    std::memcpy(buffer, log.data(), n);
    buffer[n] = '\0';
    if (slot >= 0) st.optionValues[slot] = reinterpret_cast<void*>(static_cast<uintptr_t>(n));
  };
  put(st.infoBuffer, st.infoCapacity, st.infoSlot, st.info);
  put(st.errorBuffer, st.errorCapacity, st.errorSlot, st.error);
  if (st.wallTimeSlot >= 0) {
    const float ms = 0.0f;
    std::memcpy(&st.optionValues[st.wallTimeSlot], &ms, sizeof ms);
  }
}

CUresult fail(CUlinkState_st& st, CUresult r, const std::string& why) {
  st.error += "error   : " + why + "\n";
  std::fprintf(stderr, "mcsim: cuLink: %s\n", why.c_str());
  return r;
}

void note(CUlinkState_st& st, const std::string& what) {
  if (st.verbose) st.info += "info    : " + what + "\n";
}

// What the parser refuses for mcsim's own reasons (an instruction not implemented yet, say), where
// the PTX itself is valid: the kernel is left out of the link's runs, not the link refused.
bool mcsimLimitation(const std::string& why) {
  return why.find("not implemented") != std::string::npos || why.find("unsupported") != std::string::npos ||
         why.find("not supported") != std::string::npos;
}

// An object to add: its name and PTX.
struct Object {
  std::string name;
  std::string text;
};

// PTX the program gives as text: compiled at once by the real driver, so checked here as a module
// of its own (module level scanned, then every function parsed) before it joins the link. Calls
// to functions it declares .extern are resolved at cuLinkComplete.
CUresult checkPtx(CUlinkState_st& st, const std::string& name, const std::string& text) {
  std::string why;
  {
    ptx::PtxLinker scan({ptx::LinkObject{name, &text}});
    if (!scan.scan(&why)) return fail(st, CUDA_ERROR_INVALID_PTX, why);
  }
  ptx::Module m;
  if (!ptx::parseModule(text, name, &m, &why, /*lenient=*/true)) return fail(st, CUDA_ERROR_INVALID_PTX, why);
  for (const auto& [function, refusal] : m.refused) {
    if (refusal.find("which is declared but not defined in this module") != std::string::npos) continue;
    if (!mcsimLimitation(refusal)) return fail(st, CUDA_ERROR_INVALID_PTX, refusal);
    st.info += "warning : " + refusal + ": mcsim cannot run '" + function + "' (docs/ptx.md lists what it runs)\n";
  }
  return CUDA_SUCCESS;
}

// A fatbin's contribution for the link's target: its fitting PTX, or why it has none.
CUresult fatbinObjects(CUlinkState_st& st, const std::string& name, const ModuleImage& image, std::vector<Object>* out) {
  ModuleCode code;
  code.ptx = image.ptx;
  code.variants = image.variants;
  if (const PtxEntry* e = bestPtx(code, st.cc)) {
    out->push_back(Object{name, e->text});
    note(st, name + ": its " + arch(e->arch) + " PTX is linked");
    return CUDA_SUCCESS;
  }
  std::string sass;
  for (const FatbinVariant& v : image.variants)
    if (v.kind == 2) sass += (sass.empty() ? "sm_" : ", sm_") + std::to_string(v.arch);
  if (!image.ptx.empty()) {
    std::string ptx;
    for (const PtxEntry& e : image.ptx) ptx += (ptx.empty() ? "" : ", ") + arch(e.arch);
    return fail(st, CUDA_ERROR_NO_BINARY_FOR_GPU,
                name + ": it carries PTX for " + ptx + " only, newer than the link's target " + arch(st.cc) +
                    (sass.empty() ? "" : ", and SASS (" + sass + ") that mcsim does not execute") + ": rebuild it with -gencode arch=" +
                    arch(st.cc) + ",code=" + arch(st.cc));
  }
  if (sass.empty()) {
    note(st, name + ": no device code");
    return CUDA_SUCCESS;
  }
  if (!image.entries.empty()) {
    return fail(st, CUDA_ERROR_NO_BINARY_FOR_GPU,
                name + ": it carries SASS only (" + sass + "), which mcsim does not execute, for kernel '" +
                    image.entries.front() + "'" + (image.entries.size() > 1 ? " and " + std::to_string(image.entries.size() - 1) + " more" : "") +
                    ": rebuild it with -gencode arch=" + arch(st.cc) + ",code=[sm_" + std::to_string(st.cc) + "," +
                    arch(st.cc) + "] to include PTX");
  }
  // Device functions only, in SASS (a library's): left out; a symbol the link then misses names it.
  st.sassOnly.push_back(name + " (" + sass + ")");
  st.info += "warning : " + name + ": it carries SASS only (" + sass +
             "), which mcsim does not execute, and no kernel: it is left out of the link\n";
  return CUDA_SUCCESS;
}

CUresult addInput(CUlinkState_st& st, uint32_t type, const uint8_t* data, size_t size, const std::string& name) {
  std::vector<Object> objects;
  switch (type) {
    case CU_JIT_INPUT_CUBIN:
    case CU_JIT_INPUT_FATBINARY: {
      // Taken by what the bytes are: a cubin, a fatbin, or PTX text (such as an image mcsim's
      // cuLinkComplete handed out, which is PTX).
      const ModuleImage image = readModuleImage(data, size);
      const char* want = type == CU_JIT_INPUT_CUBIN ? "a cubin" : "a fatbin";
      if (!image.ok) return fail(st, CUDA_ERROR_INVALID_IMAGE, name + ": not " + want + ": " + image.error);
      if (image.format == ImageFormat::kPtx) {
        objects.push_back(Object{name, image.ptx.front().text});
        MCSIM_TRY(checkPtx(st, name, objects.back().text));
      } else if (image.format == ImageFormat::kCubin) {
        ModuleImage asFatbin = image;
        asFatbin.variants.push_back(FatbinVariant{2, st.cc, false});  // its architecture is not read: named as the target's
        MCSIM_TRY(fatbinObjects(st, name, asFatbin, &objects));
      } else if (image.format == ImageFormat::kFatbin) {
        MCSIM_TRY(fatbinObjects(st, name, image, &objects));
      } else {
        return fail(st, CUDA_ERROR_INVALID_IMAGE, name + ": not " + std::string(want) + ": a " + imageFormatName(image.format));
      }
      break;
    }
    case CU_JIT_INPUT_PTX: {
      const size_t len = strnlen(reinterpret_cast<const char*>(data), size);
      objects.push_back(Object{name, std::string(reinterpret_cast<const char*>(data), len)});
      MCSIM_TRY(checkPtx(st, name, objects.back().text));
      break;
    }
    case CU_JIT_INPUT_OBJECT:
    case CU_JIT_INPUT_LIBRARY: {
      std::vector<EmbeddedFatbin> fatbins;
      std::string why;
      if (!hostFatbins(data, size, &fatbins, &why)) return fail(st, CUDA_ERROR_INVALID_IMAGE, name + ": " + why);
      for (const EmbeddedFatbin& f : fatbins) {
        const std::string part = f.member.empty() ? name : name + "(" + f.member + ")";
        const ModuleImage image = readModuleImage(data + f.offset, f.bytes);
        if (!image.ok) return fail(st, CUDA_ERROR_INVALID_IMAGE, part + ": " + image.error);
        MCSIM_TRY(fatbinObjects(st, part, image, &objects));
      }
      if (fatbins.empty()) note(st, name + ": no device code");
      break;
    }
    default:  // CU_JIT_INPUT_NVVM
      // CUDA_ERROR_JIT_COMPILER_NOT_FOUND: what a real H200's driver answered for NVVM input it
      // could not compile (docs/real-driver.md section 14).
      return fail(st, CUDA_ERROR_JIT_COMPILER_NOT_FOUND,
                  name + ": NVVM IR (LTO-IR) is compiled by NVIDIA's compiler, which mcsim does not have: "
                         "build the input to PTX instead (without -dlto)");
  }
  for (Object& o : objects) {
    st.names.push_back(std::move(o.name));
    st.texts.push_back(std::make_unique<std::string>(std::move(o.text)));
  }
  return CUDA_SUCCESS;
}

// The options cuLinkAddData and cuLinkAddFile take: compiler options only.
CUresult inputOptions(unsigned numOptions, CUjit_option* options, void** optionValues) {
  if (numOptions > 0 && (options == nullptr || optionValues == nullptr)) return CUDA_ERROR_INVALID_VALUE;
  for (unsigned i = 0; i < numOptions; ++i) {
    const uint32_t o = enumField(options[i]);
    if (o >= CU_JIT_NUM_OPTIONS || o == CU_JIT_WALL_TIME || o == CU_JIT_INFO_LOG_BUFFER ||
        o == CU_JIT_ERROR_LOG_BUFFER || o == CU_JIT_TARGET_FROM_CUCONTEXT || o == CU_JIT_TARGET) {
      return CUDA_ERROR_INVALID_VALUE;
    }
  }
  return CUDA_SUCCESS;
}

std::string inputName(const CUlinkState_st& st, const char* name) {
  if (name != nullptr && name[0] != '\0') return name;
  return "input " + std::to_string(st.names.size() + 1);
}

}  // namespace

CUresult linkObjectsPtx(const std::vector<ptx::LinkObject>& objects, std::string* text, std::string* why,
                        std::string* summary) {
  ptx::PtxLinker linker(objects);
  ptx::LinkedPtx linked;
  if (!linker.scan(why)) return CUDA_ERROR_INVALID_PTX;
  // An extern no object defines: CUDA_ERROR_INVALID_SOURCE, as a real H200's JIT linker answered
  // (driver 580.159.04, docs/real-driver.md section 14).
  if (!linker.linkProgram(&linked, why)) return linked.unresolved ? CUDA_ERROR_INVALID_SOURCE : CUDA_ERROR_INVALID_PTX;
  // The module as cuModuleLoadData will prepare it: what the parser refuses outside the kernels'
  // own limits is an error of the link. A variable no kernel reaches may be what it refuses (the
  // CUDA device runtime's PTX has generic() initialisers): then the kernels are linked alone,
  // with the variables they reach.
  ptx::Module m;
  if (!ptx::parseModule(linked.text, "linked.ptx", &m, why, /*lenient=*/true)) {
    ptx::LinkedPtx kernelsOnly;
    std::string alone;
    if (!linker.linkProgram(&kernelsOnly, &alone, /*variables=*/false) ||
        !ptx::parseModule(kernelsOnly.text, "linked.ptx", &m, &alone, /*lenient=*/true)) {
      *why = linked.translate(*why);
      return CUDA_ERROR_INVALID_PTX;
    }
    linked = std::move(kernelsOnly);
  }
  if (summary != nullptr) {
    *summary = std::to_string(objects.size()) + " object(s) linked: " + std::to_string(linker.kernels().size()) +
               " kernel(s), " + std::to_string(linked.functionsDefined) + " function(s) and " +
               std::to_string(linked.variables) + " variable(s) kept";
  }
  *text = std::move(linked.text);
  return CUDA_SUCCESS;
}

CUresult linkPrelinkedImage(const ModuleImage& wrapper, uint32_t cc, ModuleImage* out, std::string* why) {
  ModuleCode code;
  code.prelinked = wrapper.prelinked;
  code.prelinkedWithPtx = wrapper.prelinkedWithPtx;
  code.prelinkedFatbins = wrapper.prelinkedFatbins;
  std::vector<PtxEntry> entries;
  if (!prelinkedPtx(code, cc, &entries, why)) return CUDA_ERROR_NO_BINARY_FOR_GPU;
  std::vector<ptx::LinkObject> objects;
  for (size_t i = 0; i < entries.size(); ++i)
    objects.push_back(ptx::LinkObject{"relocatable object " + std::to_string(i) + " (" + arch(entries[i].arch) + ")", &entries[i].text});
  std::string text;
  MCSIM_TRY(linkObjectsPtx(objects, &text, why));
  *out = readModuleImage(text.data(), text.size());
  if (!out->ok) {
    *why = "the linked module cannot be read: " + out->error;
    return CUDA_ERROR_INVALID_PTX;
  }
  return CUDA_SUCCESS;
}

namespace {

CUresult linkCreate(unsigned int numOptions, CUjit_option* options, void** optionValues, CUlinkState* stateOut) {
  if (stateOut == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (numOptions > 0 && (options == nullptr || optionValues == nullptr)) return CUDA_ERROR_INVALID_VALUE;
  CUctx_st* ctx = nullptr;
  MCSIM_TRY(currentContext(&ctx));
  auto st = std::make_unique<CUlinkState_st>();
  st->cc = computeCapability(ctx->device);
  st->optionValues = optionValues;
  for (unsigned i = 0; i < numOptions; ++i) {
    const uint32_t o = enumField(options[i]);
    if (o >= CU_JIT_NUM_OPTIONS) return CUDA_ERROR_INVALID_VALUE;
    const auto value = reinterpret_cast<uintptr_t>(optionValues[i]);
    switch (o) {
      case CU_JIT_INFO_LOG_BUFFER: st->infoBuffer = static_cast<char*>(optionValues[i]); break;
      case CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES:
        st->infoCapacity = static_cast<unsigned>(value);
        st->infoSlot = static_cast<long>(i);
        break;
      case CU_JIT_ERROR_LOG_BUFFER: st->errorBuffer = static_cast<char*>(optionValues[i]); break;
      case CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES:
        st->errorCapacity = static_cast<unsigned>(value);
        st->errorSlot = static_cast<long>(i);
        break;
      case CU_JIT_WALL_TIME: st->wallTimeSlot = static_cast<long>(i); break;
      case CU_JIT_LOG_VERBOSE: st->verbose = static_cast<int>(value) != 0; break;
      case CU_JIT_TARGET_FROM_CUCONTEXT: st->cc = computeCapability(ctx->device); break;
      case CU_JIT_TARGET:
        if (!knownTarget(static_cast<uint32_t>(value))) return CUDA_ERROR_INVALID_VALUE;
        st->cc = static_cast<uint32_t>(value) & 0xffff;
        break;
      case CU_JIT_GLOBAL_SYMBOL_COUNT:
        if (static_cast<unsigned>(value) != 0) {
          std::fprintf(stderr, "mcsim: cuLinkCreate: CU_JIT_GLOBAL_SYMBOL_* (host addresses for device symbols) "
                               "is not modelled\n");
          return CUDA_ERROR_NOT_SUPPORTED;
        }
        break;
      default:
        // The compiler's code-generation options (registers, optimisation level, debug info,
        // caching ...) steer SASS, which mcsim does not generate: accepted, without effect.
        break;
    }
  }
  LinkTable& t = linkTable();
  std::lock_guard<std::mutex> lock(t.mu);
  CUlinkState_st* s = st.release();
  t.states.insert(s);
  *stateOut = s;
  return CUDA_SUCCESS;
}

CUresult linkAddData(CUlinkState state, CUjitInputType type, void* data, size_t size, const char* name,
                     unsigned int numOptions, CUjit_option* options, void** optionValues) {
  LinkTable& t = linkTable();
  std::lock_guard<std::mutex> lock(t.mu);
  if (!liveState(t, state)) return CUDA_ERROR_INVALID_HANDLE;
  if (data == nullptr || size == 0 || enumField(type) >= CU_JIT_NUM_INPUT_TYPES) return CUDA_ERROR_INVALID_VALUE;
  MCSIM_TRY(inputOptions(numOptions, options, optionValues));
  const CUresult r = addInput(*state, enumField(type), static_cast<const uint8_t*>(data), size, inputName(*state, name));
  flushLogs(*state);
  return r;
}

CUresult linkAddFile(CUlinkState state, CUjitInputType type, const char* path, unsigned int numOptions,
                     CUjit_option* options, void** optionValues) {
  LinkTable& t = linkTable();
  std::lock_guard<std::mutex> lock(t.mu);
  if (!liveState(t, state)) return CUDA_ERROR_INVALID_HANDLE;
  if (path == nullptr || enumField(type) >= CU_JIT_NUM_INPUT_TYPES) return CUDA_ERROR_INVALID_VALUE;
  MCSIM_TRY(inputOptions(numOptions, options, optionValues));
  const files::FileRead read = files::readBoundedFile(path, kMaxImageBytes);
  CUresult r = CUDA_SUCCESS;
  if (read.problem == files::ReadProblem::kMissing) {
    r = fail(*state, CUDA_ERROR_FILE_NOT_FOUND, std::string(path) + ": no such file");
  } else if (!read.ok()) {
    r = fail(*state, CUDA_ERROR_INVALID_IMAGE, read.why);
  } else if (read.bytes.empty()) {
    r = fail(*state, CUDA_ERROR_INVALID_IMAGE, std::string(path) + ": the file is empty");
  } else {
    r = addInput(*state, enumField(type), reinterpret_cast<const uint8_t*>(read.bytes.data()), read.bytes.size(), path);
  }
  flushLogs(*state);
  return r;
}

}  // namespace
}  // namespace mcsim::driver

using namespace mcsim::driver;

extern "C" {

CUresult CUDAAPI cuLinkComplete(CUlinkState state, void** cubinOut, size_t* sizeOut) {
  MCSIM_REQUIRE_INIT();
  LinkTable& t = linkTable();
  std::lock_guard<std::mutex> lock(t.mu);
  if (!liveState(t, state)) return CUDA_ERROR_INVALID_HANDLE;
  if (cubinOut == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUlinkState_st& st = *state;
  auto finish = [&](CUresult r) {
    flushLogs(st);
    return r;
  };
  if (st.texts.empty()) {
    return finish(fail(st, CUDA_ERROR_INVALID_VALUE,
                       st.sassOnly.empty() ? "nothing to link: no input was added"
                                           : "nothing to link: every input carries SASS only, which mcsim does not execute"));
  }
  std::vector<mcsim::ptx::LinkObject> objects;
  for (size_t i = 0; i < st.texts.size(); ++i) objects.push_back(mcsim::ptx::LinkObject{st.names[i], st.texts[i].get()});
  std::string text, why, summary;
  const CUresult r = linkObjectsPtx(objects, &text, &why, &summary);
  if (r != CUDA_SUCCESS) {
    std::string left;
    for (const std::string& s : st.sassOnly) left += (left.empty() ? "" : ", ") + s;
    if (!left.empty()) why += " (left out of the link, carrying SASS only: " + left + ")";
    return finish(fail(st, r, why));
  }
  auto image = std::make_unique<std::string>(std::move(text));
  image->push_back('\0');
  note(st, summary + " for " + arch(st.cc) + "; the image is PTX text of " + std::to_string(image->size()) + " bytes");
  *cubinOut = image->data();
  if (sizeOut != nullptr) *sizeOut = image->size();
  st.images.push_back(std::move(image));
  return finish(CUDA_SUCCESS);
}

CUresult CUDAAPI cuLinkDestroy(CUlinkState state) {
  MCSIM_REQUIRE_INIT();
  LinkTable& t = linkTable();
  std::lock_guard<std::mutex> lock(t.mu);
  if (!liveState(t, state)) return CUDA_ERROR_INVALID_HANDLE;
  // Dead, and empty: what it held goes; the handle stays known.
  *state = CUlinkState_st{};
  state->alive = false;
  return CUDA_SUCCESS;
}

// The CUDA 6.5 symbols and the CUDA 5.5 ones: the same calls (6.5 gave them new symbols, not new
// parameters).
CUresult CUDAAPI cuLinkCreate_v2(unsigned int numOptions, CUjit_option* options, void** optionValues, CUlinkState* stateOut) {
  MCSIM_REQUIRE_INIT();
  return linkCreate(numOptions, options, optionValues, stateOut);
}
CUresult CUDAAPI cuLinkCreate(unsigned int numOptions, CUjit_option* options, void** optionValues, CUlinkState* stateOut) {
  MCSIM_REQUIRE_INIT();
  return linkCreate(numOptions, options, optionValues, stateOut);
}
CUresult CUDAAPI cuLinkAddData_v2(CUlinkState state, CUjitInputType type, void* data, size_t size, const char* name,
                                  unsigned int numOptions, CUjit_option* options, void** optionValues) {
  MCSIM_REQUIRE_INIT();
  return linkAddData(state, type, data, size, name, numOptions, options, optionValues);
}
CUresult CUDAAPI cuLinkAddData(CUlinkState state, CUjitInputType type, void* data, size_t size, const char* name,
                               unsigned int numOptions, CUjit_option* options, void** optionValues) {
  MCSIM_REQUIRE_INIT();
  return linkAddData(state, type, data, size, name, numOptions, options, optionValues);
}
CUresult CUDAAPI cuLinkAddFile_v2(CUlinkState state, CUjitInputType type, const char* path, unsigned int numOptions,
                                  CUjit_option* options, void** optionValues) {
  MCSIM_REQUIRE_INIT();
  return linkAddFile(state, type, path, numOptions, options, optionValues);
}
CUresult CUDAAPI cuLinkAddFile(CUlinkState state, CUjitInputType type, const char* path, unsigned int numOptions,
                               CUjit_option* options, void** optionValues) {
  MCSIM_REQUIRE_INIT();
  return linkAddFile(state, type, path, numOptions, options, optionValues);
}

}  // extern "C"
