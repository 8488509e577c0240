// Modules, libraries, functions and kernels, and launches.
//
// An image (cubin, fatbin or PTX: driver/module_image.h) is read for its kernels' names and its
// PTX; SASS never runs. A launch looks the kernel's behavioural model up by name
// (include/mcsim/kernel_model.h), the fast path: it reads the parameters with the sizes the model
// declares, lets the model describe the launch as memory steps, and queues them on the stream
// like any other device work. A kernel without a model runs its PTX through the executor
// (driver/module_ptx.h, docs/ptx.md). A kernel that touches memory it may not does not fail its
// launch (the real one fails later, on the GPU): its context takes the sticky error
// (CUDA_ERROR_ILLEGAL_ADDRESS or CUDA_ERROR_MISALIGNED_ADDRESS) that every later call in it returns.
//
// Handles are checked against the tables before use, and an unloaded module or library is erased
// from them with its functions and kernels, so that a stale handle is refused
// (CUDA_ERROR_INVALID_HANDLE) rather than dereferenced. The tables own modules and libraries
// through shared_ptr, as the stream tables own streams: a call that resolved a handle and goes on
// using it after the tables' lock holds its own reference (ModuleRef, LibraryRef), so an unload
// meanwhile only takes it out of the tables (docs/reliability.md).
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "driver/context.h"
#include "driver/driver.h"
#include "driver/enum_field.h"
#include "driver/graph.h"
#include "driver/kernel_registry.h"
#include "driver/leaks.h"
#include "driver/link.h"
#include "driver/module_image.h"
#include "driver/module_ptx.h"
#include "driver/stream.h"
#include "files/bounded_file.h"

struct CUlib_st;

struct CUfunc_st {
  CUmod_st* module = nullptr;
  std::string name;
  std::map<int, int> attributes;  // set with cuFuncSetAttribute
};

struct CUmod_st {
  CUmod_st() = default;
  CUmod_st(const CUmod_st&) = delete;
  CUmod_st& operator=(const CUmod_st&) = delete;
  // Gives the module's variables' device memory back, when the last reference goes (the tables'
  // or that of a call still using the module).
  ~CUmod_st() {
    if (ptx) ptx->release();
  }
  CUctx_st* ctx = nullptr;
  CUlib_st* library = nullptr;  // the library it was made for (cuLibraryGetModule), if any
  std::vector<std::string> names;  // sorted
  std::map<std::string, std::unique_ptr<CUfunc_st>> functions;  // under the tables' lock
  std::unique_ptr<mcsim::driver::ModulePtx> ptx;  // its PTX, for kernels without a behavioural model
};

struct CUkern_st {
  CUlib_st* library = nullptr;
  std::string name;
};

struct CUlib_st {
  std::vector<std::string> names;  // sorted
  mcsim::driver::ModuleCode code;  // every module made of it gets these
  // Under the tables' lock:
  std::map<std::string, std::unique_ptr<CUkern_st>> kernels;
  std::map<const CUctx_st*, CUmod_st*> modules;  // per context, made on first use (owned by the tables)
};

namespace mcsim::driver {
namespace {

using ModuleRef = std::shared_ptr<CUmod_st>;
using LibraryRef = std::shared_ptr<CUlib_st>;

// The live handles. A module's functions and a library's kernels are owned by it, and in the tables
// while it is.
struct Tables {
  std::mutex mu;
  std::map<const CUmod_st*, ModuleRef> modules;
  std::map<const CUlib_st*, LibraryRef> libraries;
  std::set<const CUfunc_st*> functions;
  std::set<const CUkern_st*> kernels;
};

Tables& tables() {
  static Tables* t = new Tables();  // leaked: handles outlive static destruction
  return *t;
}

bool has(const std::vector<std::string>& names, const char* name) {
  return std::binary_search(names.begin(), names.end(), std::string(name));
}

// Reads an image's kernel names and code; `bytes` is 0 when the caller passed a bare pointer.
CUresult namesOf(const void* image, size_t bytes, std::vector<std::string>* names, ModuleCode* code) {
  if (image == nullptr) return CUDA_ERROR_INVALID_VALUE;
  ModuleImage read = readModuleImage(image, bytes == 0 ? kUnknownImageSize : bytes);
  if (read.format == ImageFormat::kFatbinWrapper && read.prelinked != 0) {
    // A device-linked (-rdc) image whose PTX is in the relocatable objects it lists: linked whole
    // here, as the driver's JIT linker links them (docs/ptx.md, "Linking with cuLink*"), so that
    // its kernels share one copy of its variables and the host reaches them. Built with PTX only,
    // the image has no code at all (nvlink links no PTX) and this is the only way it runs (the
    // CUDA runtime hands it to cuLibraryLoadData and links nothing itself). With SASS, where the
    // objects' PTX is large (NCCL's 131 MB) or the whole link fails, its kernels are linked one by
    // one at their first launches instead (ModulePtx::forKernel).
    const bool noCode = !read.ok && read.noCode;
    const bool ptxOnlyInObjects = read.ok && read.ptx.empty() && read.prelinkedWithPtx != 0;
    if (noCode || (ptxOnlyInObjects && read.prelinkedPtxBytes <= driverSettings().rdcWholeLinkBytes)) {
      CUctx_st* ctx = nullptr;
      const int device = currentContext(&ctx) == CUDA_SUCCESS && ctx != nullptr ? ctx->device : 0;
      ModuleImage linked;
      std::string why;
      const CUresult r = linkPrelinkedImage(read, computeCapability(device), &linked, &why);
      if (r == CUDA_SUCCESS) {
        read = std::move(linked);
      } else if (noCode) {
        std::fprintf(stderr,
                     "mcsim: the device-linked (-rdc) image carries no code of its own, and linking the PTX of the %zu "
                     "relocatable objects it lists failed: %s\n",
                     read.prelinked, why.c_str());
        return r;
      }
    }
  }
  if (!read.ok) {
    std::fprintf(stderr, "mcsim: the module image cannot be loaded: %s\n", read.error.c_str());
    return CUDA_ERROR_INVALID_IMAGE;
  }
  *names = std::move(read.entries);
  code->ptx = std::move(read.ptx);
  code->variants = std::move(read.variants);
  code->prelinked = read.prelinked;
  code->prelinkedWithPtx = read.prelinkedWithPtx;
  code->prelinkedFatbins = std::move(read.prelinkedFatbins);
  return CUDA_SUCCESS;
}

// A module file: a regular file of at most kMaxImageBytes. What cannot be opened is not found; a
// directory is CUDA_ERROR_OUT_OF_MEMORY, as a real H100 answers (580.159.04, docs/real-driver.md);
// a device, FIFO or oversized file is no image (docs/reliability.md).
CUresult readFile(const char* path, std::vector<unsigned char>* out) {
  if (path == nullptr) return CUDA_ERROR_INVALID_VALUE;
  const files::FileRead read = files::readBoundedFile(path, kMaxImageBytes);
  switch (read.problem) {
    case files::ReadProblem::kNone: break;
    case files::ReadProblem::kMissing: return CUDA_ERROR_FILE_NOT_FOUND;
    case files::ReadProblem::kDirectory:
      std::fprintf(stderr, "mcsim: the module image cannot be loaded: %s\n", read.why.c_str());
      return CUDA_ERROR_OUT_OF_MEMORY;
    default:
      std::fprintf(stderr, "mcsim: the module image cannot be loaded: %s\n", read.why.c_str());
      return CUDA_ERROR_INVALID_IMAGE;
  }
  out->assign(read.bytes.begin(), read.bytes.end());
  out->push_back(0);  // PTX text is read as a C string
  return CUDA_SUCCESS;
}

CUmod_st* newModule(Tables& t, CUctx_st* ctx, std::vector<std::string> names, ModuleCode code,
                    CUlib_st* library) {
  auto m = std::make_shared<CUmod_st>();
  m->ctx = ctx;
  m->library = library;
  m->names = std::move(names);
  m->ptx = std::make_unique<ModulePtx>(std::move(code));
  CUmod_st* raw = m.get();
  t.modules[raw] = std::move(m);
  return raw;
}

// Takes `m` and its functions out of the tables (caller holding their lock); the object goes with
// the last reference, which `gone` keeps for the caller to drop after the lock (the module's
// variables are given back to the node then).
void eraseModule(Tables& t, CUmod_st* m, std::vector<ModuleRef>* gone) {
  auto it = t.modules.find(m);
  if (it == t.modules.end()) return;
  for (const auto& [name, f] : m->functions) t.functions.erase(f.get());
  gone->push_back(std::move(it->second));
  t.modules.erase(it);
}

// The reference a call holds to a module it found in the tables (caller holding their lock).
ModuleRef moduleRef(Tables& t, const CUmod_st* m) {
  auto it = t.modules.find(m);
  return it == t.modules.end() ? nullptr : it->second;
}

CUresult loadModule(CUmodule* out, const void* image, size_t bytes) {
  if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUctx_st* ctx = nullptr;
  MCSIM_TRY(currentContext(&ctx));
  std::vector<std::string> names;
  ModuleCode code;
  MCSIM_TRY(namesOf(image, bytes, &names, &code));
  Tables& t = tables();
  std::lock_guard<std::mutex> lock(t.mu);
  // Destroyed meanwhile: its modules were unloaded already (releaseContextModules, under this lock).
  if (!usableContext(ctx)) return CUDA_ERROR_CONTEXT_IS_DESTROYED;
  *out = newModule(t, ctx, std::move(names), std::move(code), nullptr);
  return CUDA_SUCCESS;
}

CUresult loadLibrary(CUlibrary* out, const void* image, size_t bytes, unsigned numJit, CUjit_option* jit,
                     void** jitValues, unsigned numLib, CUlibraryOption* lib, void** libValues) {
  if (out == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if ((numJit > 0 && (jit == nullptr || jitValues == nullptr)) || (numLib > 0 && (lib == nullptr || libValues == nullptr))) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  // An option cuda.h does not define: INVALID_VALUE on the real H100
  // (docs/real-driver/edge-probe-h100-2026-11-25.txt). Read as the number the program stored:
  // as the enumeration, a value outside it is undefined (UBSan stops there).
  for (unsigned i = 0; i < numLib; ++i) {
    if (enumField(lib[i]) >= CU_LIBRARY_NUM_OPTIONS) return CUDA_ERROR_INVALID_VALUE;
  }
  std::vector<std::string> names;
  ModuleCode code;
  MCSIM_TRY(namesOf(image, bytes, &names, &code));
  auto l = std::make_shared<CUlib_st>();
  l->names = std::move(names);
  l->code = std::move(code);
  Tables& t = tables();
  std::lock_guard<std::mutex> lock(t.mu);
  *out = l.get();
  t.libraries[l.get()] = std::move(l);
  return CUDA_SUCCESS;
}

bool liveModule(Tables& t, CUmodule m) { return t.modules.count(m) != 0; }
bool liveLibrary(Tables& t, CUlibrary l) { return t.libraries.count(l) != 0; }
bool liveKernel(Tables& t, CUkernel k) { return t.kernels.count(k) != 0; }
bool liveFunction(Tables& t, CUfunction f) { return t.functions.count(f) != 0; }

CUfunc_st* functionOf(Tables& t, CUmod_st* m, const std::string& name) {
  auto& f = m->functions[name];
  if (!f) {
    f = std::make_unique<CUfunc_st>();
    f->module = m;
    f->name = name;
    t.functions.insert(f.get());
  }
  return f.get();
}

// The library's module in `ctx`, made on first use (and again after the context's modules went
// with it: releaseContextModules).
CUmod_st* libraryModule(Tables& t, CUlib_st* l, CUctx_st* ctx) {
  CUmod_st*& m = l->modules[ctx];
  if (m == nullptr) m = newModule(t, ctx, l->names, l->code, l);
  return m;
}

// A launch's function: a CUfunction of a live module of the current context, or a CUkernel
// (which cuLaunchKernel accepts in its place) resolved in the current context. `module` keeps the
// function's module (and so the function) for the caller, whatever an unload does meanwhile.
CUresult launchFunction(CUfunction f, CUctx_st* ctx, CUfunc_st** out, ModuleRef* module) {
  Tables& t = tables();
  std::lock_guard<std::mutex> lock(t.mu);
  auto* asKernel = reinterpret_cast<CUkern_st*>(f);
  if (liveKernel(t, asKernel)) {
    CUmod_st* m = libraryModule(t, asKernel->library, ctx);
    *out = functionOf(t, m, asKernel->name);
    *module = moduleRef(t, m);
    return CUDA_SUCCESS;
  }
  if (!liveFunction(t, f)) return CUDA_ERROR_INVALID_HANDLE;
  if (f->module->ctx != ctx) return CUDA_ERROR_INVALID_HANDLE;
  *out = f;
  *module = moduleRef(t, f->module);
  return CUDA_SUCCESS;
}

// Reads the parameters from kernelParams (an array of pointers to each) or from `extra`'s
// packed buffer (each parameter at the next offset aligned to its size, as nvcc lays them out).
CUresult readParams(const KernelModel& model, void** kernelParams, void** extra, KernelLaunch* launch) {
  if (kernelParams != nullptr && extra != nullptr) return CUDA_ERROR_INVALID_VALUE;
  const std::vector<size_t>& sizes = model.paramBytes;
  if (kernelParams != nullptr) {
    for (size_t i = 0; i < sizes.size(); ++i) {
      if (kernelParams[i] == nullptr) return CUDA_ERROR_INVALID_VALUE;
      const auto* p = static_cast<const uint8_t*>(kernelParams[i]);
      launch->params.emplace_back(p, p + sizes[i]);
    }
    return CUDA_SUCCESS;
  }
  if (extra == nullptr) return sizes.empty() ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
  const uint8_t* buffer = nullptr;
  size_t bufferBytes = 0;
  MCSIM_TRY(extraBuffer(extra, &buffer, &bufferBytes));
  size_t offset = 0;
  for (size_t size : sizes) {
    offset = (offset + size - 1) / size * size;
    if (offset + size > bufferBytes) return CUDA_ERROR_INVALID_VALUE;
    launch->params.emplace_back(buffer + offset, buffer + offset + size);
    offset += size;
  }
  return CUDA_SUCCESS;
}

CUresult launch(CUfunction f, Dim3 grid, Dim3 block, unsigned sharedMem, CUstream hStream, void** kernelParams,
                void** extra, bool perThreadDefault, bool cooperative = false) {
  if (f == nullptr) return CUDA_ERROR_INVALID_HANDLE;
  CUctx_st* ctx = nullptr;
  MCSIM_TRY(currentContext(&ctx));
  CUfunc_st* fn = nullptr;
  ModuleRef module;
  MCSIM_TRY(launchFunction(f, ctx, &fn, &module));
  // The limits of sm_90 and newer: 1024 threads a block, z up to 64, grid y and z up to 65535.
  if (grid.count() == 0 || block.count() == 0 || block.count() > 1024 || block.z > 64 || grid.y > 65535 ||
      grid.z > 65535 || grid.x > 0x7fffffffu) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  KernelModel model;
  if (!findKernelModel(fn->name, &model)) {
    // A program's own kernel: its PTX runs through the executor (`module` keeps it meanwhile).
    return launchPtxKernel(*fn->module->ptx, fn, fn->name, ctx, grid, block, sharedMem, hStream, perThreadDefault,
                           kernelParams, extra, cooperative);
  }
  // cuda.h, cuLaunchCooperativeKernel: no more blocks than the device's SMs hold at once.
  if (cooperative) {
    const int perSm = blocksPerSm(ctx->device, fn, static_cast<int>(block.count()), 0, static_cast<long>(sharedMem));
    const uint64_t sms = static_cast<uint64_t>(state().attributes[static_cast<size_t>(ctx->device)]
                                                                 [CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT]);
    if (grid.count() > static_cast<uint64_t>(std::max(perSm, 0)) * sms) return CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE;
  }
  KernelLaunch l;
  l.name = fn->name;
  l.device = ctx->device;
  l.grid = grid;
  l.block = block;
  l.sharedMemBytes = sharedMem;
  MCSIM_TRY(readParams(model, kernelParams, extra, &l));
  KernelSteps steps;
  const std::string why = model.expand ? model.expand(l, steps) : std::string("the model has no expand function");
  StreamRef st;
  MCSIM_TRY(resolveStream(hStream, perThreadDefault, &st));
  if (st->ctx != ctx) return CUDA_ERROR_INVALID_HANDLE;
  if (!why.empty()) {
    // The real kernel traps on such arguments: the launch succeeds and the context fails.
    std::fprintf(stderr, "mcsim: kernel '%s' on device %d traps: %s; the context's sticky error is now "
                 "CUDA_ERROR_LAUNCH_FAILED\n", fn->name.c_str(), ctx->device, why.c_str());
    ctx->stickyError = CUDA_ERROR_LAUNCH_FAILED;
    return CUDA_SUCCESS;
  }
  fabric::DeviceOp op = kernelOp(fn->name, grid, block, sharedMem);
  op.steps = steps.steps();
  op.bytesInFlightPerThread = steps.bytesInFlightPerThread();
  Status submitted = Status::kOk;
  const CUresult r = enqueue(st.get(), std::move(op), nullptr, nullptr, &submitted);
  if (submitted == Status::kIllegalAddress || submitted == Status::kMisaligned) {
    // The launch itself succeeds; the kernel faults on the GPU and poisons its context.
    ctx->stickyError = submitted == Status::kMisaligned ? CUDA_ERROR_MISALIGNED_ADDRESS : CUDA_ERROR_ILLEGAL_ADDRESS;
    std::fprintf(stderr, "mcsim: kernel '%s' on device %d made an %s access; the context's sticky error is now %s\n",
                 fn->name.c_str(), ctx->device, submitted == Status::kMisaligned ? "unaligned" : "illegal",
                 submitted == Status::kMisaligned ? "CUDA_ERROR_MISALIGNED_ADDRESS" : "CUDA_ERROR_ILLEGAL_ADDRESS");
    return CUDA_SUCCESS;
  }
  return r;
}

// The bodies of the attribute calls, under the tables' lock.
CUresult functionAttribute(CUfunc_st* hfunc, CUfunction_attribute attrib, int* pi) {
  auto set = hfunc->attributes.find(static_cast<int>(attrib));
  if (set != hfunc->attributes.end()) {
    *pi = set->second;
    return CUDA_SUCCESS;
  }
  // What the library's kernels report on sm_90: small register-light grid-stride loops.
  switch (attrib) {
    case CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *pi = 1024; break;
    case CU_FUNC_ATTRIBUTE_NUM_REGS: *pi = 32; break;
    case CU_FUNC_ATTRIBUTE_PTX_VERSION:
    case CU_FUNC_ATTRIBUTE_BINARY_VERSION: *pi = 90; break;
    case CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES:
    case CU_FUNC_ATTRIBUTE_CONST_SIZE_BYTES:
    case CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES:
    case CU_FUNC_ATTRIBUTE_CACHE_MODE_CA:
    case CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES: *pi = 0; break;
    case CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT: *pi = -1; break;
    // No cluster shape compiled in, none required, the default scheduling policy (what
    // cudaFuncGetAttributes reads besides the above).
    case CU_FUNC_ATTRIBUTE_CLUSTER_SIZE_MUST_BE_SET:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_HEIGHT:
    case CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_DEPTH:
    case CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED:
    case CU_FUNC_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE: *pi = 0; break;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
  return CUDA_SUCCESS;
}

CUresult setFunctionAttribute(CUfunc_st* hfunc, CUfunction_attribute attrib, int value) {
  if (attrib != CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES &&
      attrib != CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (attrib == CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES) {
    // What a block may opt in to beyond the function's static shared memory; the real H100 answers
    // INVALID_VALUE for -1 and for 2^30 (docs/real-driver/edge-probe-h100-2026-11-25.txt).
    int staticBytes = 0;
    functionAttribute(hfunc, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, &staticBytes);
    const int optIn = state().attributes[static_cast<size_t>(hfunc->module->ctx->device)]
                                        [CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN];
    if (value < 0 || value > optIn - staticBytes) return CUDA_ERROR_INVALID_VALUE;
  } else if (value < -1 || value > 100) {
    return CUDA_ERROR_INVALID_VALUE;  // a carveout is a percentage, or -1 for the default
  }
  hfunc->attributes[static_cast<int>(attrib)] = value;
  return CUDA_SUCCESS;
}

}  // namespace

bool describeForTrace(const void* f, std::string* name, std::vector<size_t>* paramBytes, bool* haveModel) {
  {
    Tables& t = tables();
    std::lock_guard<std::mutex> lock(t.mu);
    auto* fn = static_cast<CUfunc_st*>(const_cast<void*>(f));
    auto* kernel = static_cast<CUkern_st*>(const_cast<void*>(f));
    if (liveFunction(t, fn)) {
      *name = fn->name;
    } else if (liveKernel(t, kernel)) {
      *name = kernel->name;
    } else {
      return false;
    }
  }
  KernelModel model;
  *haveModel = findKernelModel(*name, &model);
  if (*haveModel) *paramBytes = model.paramBytes;
  return true;
}

CUctx_st* functionContext(CUfunction f) {
  Tables& t = tables();
  std::lock_guard<std::mutex> lock(t.mu);
  if (!liveFunction(t, f)) return nullptr;
  return f->module->ctx;
}

CUresult kernelParamSizes(CUfunction f, CUctx_st* ctx, std::vector<size_t>* sizes) {
  sizes->clear();
  CUfunc_st* fn = nullptr;
  ModuleRef module;
  MCSIM_TRY(launchFunction(f, ctx, &fn, &module));
  KernelModel model;
  if (findKernelModel(fn->name, &model)) {
    *sizes = model.paramBytes;
    return CUDA_SUCCESS;
  }
  // A device-linked image's kernel: its own module, linked at this first use.
  CUresult r = CUDA_SUCCESS;
  ModulePtx* m = fn->module->ptx->forKernel(ctx->device, fn->name, &r);
  if (m == nullptr) return r;
  MCSIM_TRY(m->prepare(ctx->device));
  const ptx::Function* k = m->kernel(fn->name);
  if (k == nullptr) return CUDA_ERROR_NOT_FOUND;
  for (const auto& p : k->params) sizes->push_back(p.size);
  return CUDA_SUCCESS;
}

namespace {

// A launch on a capturing stream becomes a kernel node that keeps what it was launched with
// (cuGraphKernelNodeGetParams); only asked for while a capture is in progress.
CUresult launchNoting(CUfunction f, Dim3 grid, Dim3 block, unsigned sharedMem, CUstream s, void** kernelParams,
                      void** extra, bool perThreadDefault, bool cooperative = false) {
  if (!capturesActive()) {
    return launch(f, grid, block, sharedMem, s, kernelParams, extra, perThreadDefault, cooperative);
  }
  NodeCall call(CU_GRAPH_NODE_TYPE_KERNEL);
  CUctx_st* ctx = nullptr;
  bool described = false;
  {
    const QuietChecks quiet;  // the launch itself says why it fails
    described = f != nullptr && currentContext(&ctx) == CUDA_SUCCESS &&
                kernelParamSizes(f, ctx, &call.kernelSizes) == CUDA_SUCCESS;
  }
  if (described) {
    call.haveKernel = true;
    call.kernel.func = f;
    call.kernel.gridDimX = grid.x;
    call.kernel.gridDimY = grid.y;
    call.kernel.gridDimZ = grid.z;
    call.kernel.blockDimX = block.x;
    call.kernel.blockDimY = block.y;
    call.kernel.blockDimZ = block.z;
    call.kernel.sharedMemBytes = sharedMem;
    call.kernel.kernelParams = kernelParams;
    call.kernel.extra = extra;
    call.kernel.ctx = ctx;
  }
  return launch(f, grid, block, sharedMem, s, kernelParams, extra, perThreadDefault, cooperative);
}

}  // namespace

CUresult launchKernelEntry(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                           unsigned sharedMem, CUstream s, void** kernelParams, void** extra, bool perThreadDefault) {
  return launchNoting(f, Dim3{gx, gy, gz}, Dim3{bx, by, bz}, sharedMem, s, kernelParams, extra, perThreadDefault);
}

CUresult launchKernelExEntry(const CUlaunchConfig* config, CUfunction f, void** kernelParams, void** extra,
                             bool perThreadDefault) {
  if (config == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (config->numAttrs > 0 && config->attrs == nullptr) return CUDA_ERROR_INVALID_VALUE;
  bool cooperative = false;
  for (unsigned i = 0; i < config->numAttrs; ++i) {
    if (config->attrs[i].id == CU_LAUNCH_ATTRIBUTE_COOPERATIVE) cooperative = config->attrs[i].value.cooperative != 0;
  }
  return launchNoting(f, Dim3{config->gridDimX, config->gridDimY, config->gridDimZ},
                Dim3{config->blockDimX, config->blockDimY, config->blockDimZ}, config->sharedMemBytes,
                config->hStream, kernelParams, extra, perThreadDefault, cooperative);
}

CUresult launchCooperativeKernelEntry(CUfunction f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                      unsigned bz, unsigned sharedMem, CUstream s, void** kernelParams,
                                      bool perThreadDefault) {
  // Parameters come only through kernelParams (cuda.h: there is no `extra`).
  return launch(f, Dim3{gx, gy, gz}, Dim3{bx, by, bz}, sharedMem, s, kernelParams, nullptr, perThreadDefault, true);
}

int blocksPerSm(int device, CUfunc_st* f, int blockSize, long staticShared, long dynamicShared) {
  Tables& t = tables();
  std::lock_guard<std::mutex> lock(t.mu);
  int regs = 0, maxThreads = 0, carveout = 0, staticBytes = 0, maxDynamic = 0;
  functionAttribute(f, CU_FUNC_ATTRIBUTE_NUM_REGS, &regs);
  functionAttribute(f, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, &maxThreads);
  functionAttribute(f, CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, &carveout);
  functionAttribute(f, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, &staticBytes);
  functionAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, &maxDynamic);
  return occupancyBlocksPerSm(device, regs, maxThreads, carveout, staticShared != 0 ? staticShared : staticBytes,
                              // A PTX kernel's dynamic shared memory is checked at launch, not here.
                              std::max<long>(maxDynamic, dynamicShared), blockSize, dynamicShared);
}

void releaseContextModules(CUctx_st* ctx) {
  std::vector<ModuleRef> gone;  // dropped after the lock
  Tables& t = tables();
  std::lock_guard<std::mutex> lock(t.mu);
  std::vector<CUmod_st*> of;
  for (const auto& [raw, m] : t.modules) {
    if (m->ctx == ctx) of.push_back(m.get());
  }
  for (CUmod_st* m : of) {
    if (m->library != nullptr) m->library->modules.erase(ctx);
    eraseModule(t, m, &gone);
  }
}

void countModules(HandleCounts& c) {
  Tables& t = tables();
  std::lock_guard<std::mutex> lock(t.mu);
  c.modules = t.modules.size();
  c.functions = t.functions.size();
  c.libraries = t.libraries.size();
  c.kernels = t.kernels.size();
}

}  // namespace mcsim::driver

using namespace mcsim::driver;

extern "C" {

CUresult CUDAAPI cuModuleLoadData(CUmodule* module, const void* image) {
  MCSIM_REQUIRE_INIT();
  return loadModule(module, image, 0);
}

CUresult CUDAAPI cuModuleLoadDataEx(CUmodule* module, const void* image, unsigned int numOptions,
                                    CUjit_option* options, void** optionValues) {
  MCSIM_REQUIRE_INIT();
  // JIT options steer a compiler mcsim does not run; they are checked for shape only.
  if (numOptions > 0 && (options == nullptr || optionValues == nullptr)) return CUDA_ERROR_INVALID_VALUE;
  return loadModule(module, image, 0);
}

CUresult CUDAAPI cuModuleLoadFatBinary(CUmodule* module, const void* fatCubin) {
  MCSIM_REQUIRE_INIT();
  return loadModule(module, fatCubin, 0);
}

CUresult CUDAAPI cuModuleLoad(CUmodule* module, const char* fname) {
  MCSIM_REQUIRE_INIT();
  if (module == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::vector<unsigned char> bytes;
  MCSIM_TRY(readFile(fname, &bytes));
  return loadModule(module, bytes.data(), bytes.size() - 1);
}

CUresult CUDAAPI cuModuleUnload(CUmodule hmod) {
  MCSIM_REQUIRE_INIT();
  std::vector<ModuleRef> gone;  // dropped after the lock
  Tables& t = tables();
  std::lock_guard<std::mutex> lock(t.mu);
  if (!liveModule(t, hmod) || hmod->library != nullptr) return CUDA_ERROR_INVALID_HANDLE;
  eraseModule(t, hmod, &gone);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuModuleGetFunction(CUfunction* hfunc, CUmodule hmod, const char* name) {
  MCSIM_REQUIRE_INIT();
  if (hfunc == nullptr || name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Tables& t = tables();
  std::lock_guard<std::mutex> lock(t.mu);
  if (!liveModule(t, hmod)) return CUDA_ERROR_INVALID_HANDLE;
  if (!has(hmod->names, name)) return CUDA_ERROR_NOT_FOUND;
  *hfunc = functionOf(t, hmod, name);
  return CUDA_SUCCESS;
}

// A module's __device__ variable: its .global variable, which lives in the device's memory from
// the module's first use on (driver/module_ptx.h).
static CUresult moduleGlobal(CUdeviceptr* dptr, size_t* bytes, CUmod_st* m, const char* name) {
  const CUresult r = m->ptx->prepare(m->ctx->device);
  uint64_t va = 0;
  size_t size = 0;
  if (r != CUDA_SUCCESS || !m->ptx->global(name, &va, &size)) return CUDA_ERROR_NOT_FOUND;
  if (dptr != nullptr) *dptr = static_cast<CUdeviceptr>(va);
  if (bytes != nullptr) *bytes = size;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuModuleGetGlobal(CUdeviceptr* dptr, size_t* bytes, CUmodule hmod, const char* name) {
  MCSIM_REQUIRE_INIT();
  if (name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  ModuleRef m;
  {
    Tables& t = tables();
    std::lock_guard<std::mutex> lock(t.mu);
    if (!liveModule(t, hmod)) return CUDA_ERROR_INVALID_HANDLE;
    m = moduleRef(t, hmod);
  }
  return moduleGlobal(dptr, bytes, m.get(), name);
}

CUresult CUDAAPI cuLibraryGetGlobal(CUdeviceptr* dptr, size_t* bytes, CUlibrary library, const char* name) {
  MCSIM_REQUIRE_INIT();
  if (name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUctx_st* ctx = nullptr;
  MCSIM_TRY(currentContext(&ctx));
  ModuleRef m;
  {
    Tables& t = tables();
    std::lock_guard<std::mutex> lock(t.mu);
    if (!liveLibrary(t, library)) return CUDA_ERROR_INVALID_HANDLE;
    m = moduleRef(t, libraryModule(t, library, ctx));
  }
  return moduleGlobal(dptr, bytes, m.get(), name);
}

CUresult CUDAAPI cuModuleGetFunctionCount(unsigned int* count, CUmodule mod) {
  MCSIM_REQUIRE_INIT();
  if (count == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Tables& t = tables();
  std::lock_guard<std::mutex> lock(t.mu);
  if (!liveModule(t, mod)) return CUDA_ERROR_INVALID_HANDLE;
  *count = static_cast<unsigned>(mod->names.size());
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuModuleEnumerateFunctions(CUfunction* functions, unsigned int numFunctions, CUmodule mod) {
  MCSIM_REQUIRE_INIT();
  if (functions == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Tables& t = tables();
  std::lock_guard<std::mutex> lock(t.mu);
  if (!liveModule(t, mod)) return CUDA_ERROR_INVALID_HANDLE;
  if (numFunctions < mod->names.size()) return CUDA_ERROR_INVALID_VALUE;
  for (size_t i = 0; i < mod->names.size(); ++i) functions[i] = functionOf(t, mod, mod->names[i]);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuModuleGetLoadingMode(CUmoduleLoadingMode* mode) {
  MCSIM_REQUIRE_INIT();
  if (mode == nullptr) return CUDA_ERROR_INVALID_VALUE;
  // Lazy by default since CUDA 12.2; CUDA_MODULE_LOADING=EAGER asks for eager loading.
  *mode = driverSettings().moduleLoading == "EAGER" ? CU_MODULE_EAGER_LOADING : CU_MODULE_LAZY_LOADING;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuLibraryLoadData(CUlibrary* library, const void* code, CUjit_option* jitOptions,
                                   void** jitOptionsValues, unsigned int numJitOptions,
                                   CUlibraryOption* libraryOptions, void** libraryOptionValues,
                                   unsigned int numLibraryOptions) {
  MCSIM_REQUIRE_INIT();
  return loadLibrary(library, code, 0, numJitOptions, jitOptions, jitOptionsValues, numLibraryOptions,
                     libraryOptions, libraryOptionValues);
}

CUresult CUDAAPI cuLibraryLoadFromFile(CUlibrary* library, const char* fileName, CUjit_option* jitOptions,
                                       void** jitOptionsValues, unsigned int numJitOptions,
                                       CUlibraryOption* libraryOptions, void** libraryOptionValues,
                                       unsigned int numLibraryOptions) {
  MCSIM_REQUIRE_INIT();
  if (library == nullptr) return CUDA_ERROR_INVALID_VALUE;
  std::vector<unsigned char> bytes;
  MCSIM_TRY(readFile(fileName, &bytes));
  return loadLibrary(library, bytes.data(), bytes.size() - 1, numJitOptions, jitOptions, jitOptionsValues,
                     numLibraryOptions, libraryOptions, libraryOptionValues);
}

CUresult CUDAAPI cuLibraryUnload(CUlibrary library) {
  MCSIM_REQUIRE_INIT();
  std::vector<ModuleRef> gone;  // dropped after the lock, with the library
  LibraryRef goneLibrary;
  Tables& t = tables();
  std::lock_guard<std::mutex> lock(t.mu);
  auto it = t.libraries.find(library);
  if (it == t.libraries.end()) return CUDA_ERROR_INVALID_HANDLE;
  for (auto& [ctx, m] : library->modules) eraseModule(t, m, &gone);
  library->modules.clear();
  for (const auto& [name, k] : library->kernels) t.kernels.erase(k.get());
  goneLibrary = std::move(it->second);
  t.libraries.erase(it);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuLibraryGetKernel(CUkernel* pKernel, CUlibrary library, const char* name) {
  MCSIM_REQUIRE_INIT();
  if (pKernel == nullptr || name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Tables& t = tables();
  std::lock_guard<std::mutex> lock(t.mu);
  if (!liveLibrary(t, library)) return CUDA_ERROR_INVALID_HANDLE;
  if (!has(library->names, name)) return CUDA_ERROR_NOT_FOUND;
  auto& k = library->kernels[name];
  if (!k) {
    k = std::make_unique<CUkern_st>();
    k->library = library;
    k->name = name;
    t.kernels.insert(k.get());  // (the library is live: its kernels go with it)
  }
  *pKernel = k.get();
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuLibraryGetKernelCount(unsigned int* count, CUlibrary lib) {
  MCSIM_REQUIRE_INIT();
  if (count == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Tables& t = tables();
  std::lock_guard<std::mutex> lock(t.mu);
  if (!liveLibrary(t, lib)) return CUDA_ERROR_INVALID_HANDLE;
  *count = static_cast<unsigned>(lib->names.size());
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuLibraryEnumerateKernels(CUkernel* kernels, unsigned int numKernels, CUlibrary lib) {
  MCSIM_REQUIRE_INIT();
  if (kernels == nullptr) return CUDA_ERROR_INVALID_VALUE;
  LibraryRef keep;  // its names, whatever an unload does meanwhile
  {
    Tables& t = tables();
    std::lock_guard<std::mutex> lock(t.mu);
    auto it = t.libraries.find(lib);
    if (it == t.libraries.end()) return CUDA_ERROR_INVALID_HANDLE;
    if (numKernels < lib->names.size()) return CUDA_ERROR_INVALID_VALUE;
    keep = it->second;
  }
  for (size_t i = 0; i < keep->names.size(); ++i) {
    MCSIM_TRY(cuLibraryGetKernel(&kernels[i], lib, keep->names[i].c_str()));
  }
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuLibraryGetModule(CUmodule* pMod, CUlibrary library) {
  MCSIM_REQUIRE_INIT();
  if (pMod == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUctx_st* ctx = nullptr;
  MCSIM_TRY(currentContext(&ctx));
  Tables& t = tables();
  std::lock_guard<std::mutex> lock(t.mu);
  if (!liveLibrary(t, library)) return CUDA_ERROR_INVALID_HANDLE;
  *pMod = libraryModule(t, library, ctx);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuKernelGetFunction(CUfunction* pFunc, CUkernel kernel) {
  MCSIM_REQUIRE_INIT();
  if (pFunc == nullptr) return CUDA_ERROR_INVALID_VALUE;
  CUctx_st* ctx = nullptr;
  MCSIM_TRY(currentContext(&ctx));
  Tables& t = tables();
  std::lock_guard<std::mutex> lock(t.mu);
  if (!liveKernel(t, kernel)) return CUDA_ERROR_INVALID_HANDLE;
  *pFunc = functionOf(t, libraryModule(t, kernel->library, ctx), kernel->name);
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuKernelGetName(const char** name, CUkernel hfunc) {
  MCSIM_REQUIRE_INIT();
  if (name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Tables& t = tables();
  std::lock_guard<std::mutex> lock(t.mu);
  if (!liveKernel(t, hfunc)) return CUDA_ERROR_INVALID_HANDLE;
  *name = hfunc->name.c_str();
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuFuncGetName(const char** name, CUfunction hfunc) {
  MCSIM_REQUIRE_INIT();
  if (name == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Tables& t = tables();
  std::lock_guard<std::mutex> lock(t.mu);
  if (!liveFunction(t, hfunc)) return CUDA_ERROR_INVALID_HANDLE;
  *name = hfunc->name.c_str();
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuFuncGetModule(CUmodule* hmod, CUfunction hfunc) {
  MCSIM_REQUIRE_INIT();
  if (hmod == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Tables& t = tables();
  std::lock_guard<std::mutex> lock(t.mu);
  if (!liveFunction(t, hfunc)) return CUDA_ERROR_INVALID_HANDLE;
  *hmod = hfunc->module;
  return CUDA_SUCCESS;
}

CUresult CUDAAPI cuFuncGetAttribute(int* pi, CUfunction_attribute attrib, CUfunction hfunc) {
  MCSIM_REQUIRE_INIT();
  if (pi == nullptr) return CUDA_ERROR_INVALID_VALUE;
  Tables& t = tables();
  std::lock_guard<std::mutex> lock(t.mu);
  if (!liveFunction(t, hfunc)) return CUDA_ERROR_INVALID_HANDLE;
  return functionAttribute(hfunc, attrib, pi);
}

CUresult CUDAAPI cuFuncSetAttribute(CUfunction hfunc, CUfunction_attribute attrib, int value) {
  MCSIM_REQUIRE_INIT();
  Tables& t = tables();
  std::lock_guard<std::mutex> lock(t.mu);
  if (!liveFunction(t, hfunc)) return CUDA_ERROR_INVALID_HANDLE;
  return setFunctionAttribute(hfunc, attrib, value);
}

// A kernel's attributes on `dev` are those of its function in the device's primary context (what
// cudaFuncGetAttributes and cudaFuncSetAttribute reach through the runtime).
CUresult CUDAAPI cuKernelGetAttribute(int* pi, CUfunction_attribute attrib, CUkernel kernel, CUdevice dev) {
  MCSIM_REQUIRE_INIT_DEV(dev);
  if (pi == nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (!validDevice(dev)) return CUDA_ERROR_INVALID_DEVICE;
  Tables& t = tables();
  std::lock_guard<std::mutex> lock(t.mu);
  if (!liveKernel(t, kernel)) return CUDA_ERROR_INVALID_HANDLE;
  return functionAttribute(functionOf(t, libraryModule(t, kernel->library, primaryContextObject(dev)), kernel->name),
                           attrib, pi);
}

CUresult CUDAAPI cuKernelSetAttribute(CUfunction_attribute attrib, int val, CUkernel kernel, CUdevice dev) {
  MCSIM_REQUIRE_INIT_DEV(dev);
  if (!validDevice(dev)) return CUDA_ERROR_INVALID_DEVICE;
  Tables& t = tables();
  std::lock_guard<std::mutex> lock(t.mu);
  if (!liveKernel(t, kernel)) return CUDA_ERROR_INVALID_HANDLE;
  return setFunctionAttribute(
      functionOf(t, libraryModule(t, kernel->library, primaryContextObject(dev)), kernel->name), attrib, val);
}

}  // extern "C"

#include "driver/launch_entries.inc"
