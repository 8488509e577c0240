// A module's PTX as the executor runs it (module_ptx.h).
#include "driver/module_ptx.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>

#include "driver/context.h"
#include "driver/driver.h"
#include "driver/stream.h"
#include "ptx/executor.h"
#include "fabric/relocatable_objects.h"
#include "ptx/linker.h"
#include "ptx/parser.h"

namespace mcsim::driver {
namespace {

// What a request to the node carries of the PTX at most (its channel holds 256 KiB).
constexpr size_t kPtxPiece = 128 * 1024;

// The shared memory a block may have on sm_90 (227 KiB; cuda.h's
// CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN on an H100).
constexpr uint32_t kMaxSharedPerBlock = 232448;

}  // namespace

uint32_t computeCapability(int device) {
  const auto& a = state().attributes[static_cast<size_t>(device)];
  return static_cast<uint32_t>(a[CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR] * 10 +
                               a[CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR]);
}

CUresult ModulePtx::prepare(int device) {
  std::lock_guard<std::mutex> lock(mu_);
  if (prepared_) return result_;
  prepared_ = true;
  device_ = device;
  if (ptxOnlyInPrelinked()) return result_ = placeImageVariables(device);
  const uint32_t cc = computeCapability(device);
  const PtxEntry* entry = bestPtx(code_, cc);
  if (entry == nullptr) {
    why_ = !code_.ptx.empty()
               ? "the module's PTX is for a newer architecture than the device's compute_" + std::to_string(cc)
           : code_.prelinkedWithPtx != 0
               ? "the module is a device-linked (-rdc) image that carries no PTX (only SASS, which mcsim does not "
                 "execute); PTX is in " + std::to_string(code_.prelinkedWithPtx) + " of the " +
                     std::to_string(code_.prelinked) + " relocatable objects it was linked from, which mcsim links "
                     "kernel by kernel at their first launches (docs/nccl.md)"
               : "the module carries no PTX (only SASS, which mcsim does not execute)";
    return result_ = CUDA_ERROR_NO_BINARY_FOR_GPU;
  }
  const std::string name = entry->arch != 0 ? "compute_" + std::to_string(entry->arch) + ".ptx" : "module.ptx";
  // Lenient: kernels the executor cannot run yet are left out (a launch of one says why), so that
  // the module's other kernels run.
  if (!ptx::parseModule(entry->text, name, &module_, &why_, /*lenient=*/true)) return result_ = CUDA_ERROR_NOT_SUPPORTED;
  // The node parses it again for the executor (on a shared node, in its own process).
  std::string nodeError;
  uint64_t draft = 0;
  for (size_t off = 0;;) {
    const size_t n = std::min(kPtxPiece, entry->text.size() - off);
    const bool last = off + n == entry->text.size();
    uint64_t id = 0;
    const Status s = node().loadPtx(draft, name, entry->text.substr(off, n), last, &id, &nodeError);
    if (s != Status::kOk) {
      why_ = "the node refused the module's PTX";
      return result_ = toResult(s);
    }
    draft = id;
    off += n;
    if (last) break;
  }
  if (draft == 0) {
    why_ = nodeError;
    return result_ = CUDA_ERROR_NOT_SUPPORTED;
  }
  nodeModule_ = draft;
  // A kernel linked from a device-linked image's objects reaches the image's variables, placed
  // once in the context (placeImageVariables), which its link lays out as the image's does.
  if (image_ != nullptr) {
    // The same .global and .const variables, in the same order and places (the .shared ones,
    // which each kernel's link has as it reaches them, aside).
    auto placed = [](const ptx::Module& m) {
      std::vector<const ptx::ModuleVariable*> out;
      for (const ptx::ModuleVariable& v : m.variables)
        if (v.space == ptx::Space::kGlobal || v.space == ptx::Space::kConst) out.push_back(&v);
      return out;
    };
    const ptx::Module& im = image_->module_;
    const std::vector<const ptx::ModuleVariable*> mine = placed(module_), its = placed(im);
    bool same = module_.globalInit.size() == im.globalInit.size() && module_.constInit.size() == im.constInit.size() &&
                mine.size() == its.size();
    for (size_t k = 0; same && k < mine.size(); ++k)
      same = mine[k]->name == its[k]->name && mine[k]->space == its[k]->space && mine[k]->offset == its[k]->offset &&
             mine[k]->size == its[k]->size;
    if (!same) {
      why_ = "its link lays out the image's variables unlike the image's own layout (a linker fault)";
      return result_ = CUDA_ERROR_NOT_SUPPORTED;
    }
    globalsVa_ = image_->globalsVa_;
    return result_ = CUDA_SUCCESS;
  }
  return result_ = placeVariables(device);
}

CUresult ModulePtx::placeVariables(int device) {
  // The .global variables: in the device's memory, initialised from the PTX. The .const bank (its
  // __constant__ variables) follows them in the same allocation, whole: the executor's ld.const
  // reads it there, so that what the host writes to it is seen (one copy per loaded module, as
  // the driver's constant bank; docs/ptx.md, "Constant memory").
  if (!module_.globalInit.empty() || !module_.constInit.empty()) {
    const uint64_t bytes = module_.constInit.empty() ? module_.globalInit.size()
                                                     : module_.constOffset() + module_.constInit.size();
    Status s = node().allocLinear(device, bytes, &globalsVa_);
    if (s == Status::kOk && !module_.globalInit.empty())
      s = node().write(globalsVa_, module_.globalInit.data(), module_.globalInit.size(), device);
    if (s == Status::kOk && !module_.constInit.empty())
      s = node().write(globalsVa_ + module_.constOffset(), module_.constInit.data(), module_.constInit.size(), device);
    if (s != Status::kOk) {
      why_ = "its .global and .const variables could not be placed in device memory";
      return toResult(s);
    }
  }
  return CUDA_SUCCESS;
}

namespace {

// A device-linked image's relocatable objects, read (their fitting PTX decompressed) and scanned
// once per process (fabric::RelocatableObjects), and each kernel's linked PTX: every context that
// loads the image (the CUDA runtime registers it with each device's) shares them.
struct LinkedImage {
  std::mutex mu;
  bool read = false;
  std::string why;  // why the objects' PTX cannot be used, when `objects` is null
  std::shared_ptr<fabric::RelocatableObjects> objects;
  bool given = false;  // the node holds them (Node::loadObjects)
  std::map<std::string, std::shared_ptr<const ptx::LinkedPtx>> kernels;
  // The image's variables alone (PtxLinker::linkVariables), laid out as every kernel's link
  // lays them out, parsed once (NCCL's: 0.17 s) for every context, which places them once
  // (ModulePtx::placeImageVariables).
  std::shared_ptr<const ptx::Module> variables;
};

// Gives the node `objects`, for linking functions at their first call: nothing crosses when the
// node has them already (the embedded node finds this driver's; a shared node, those another
// process sent), else their stored bytes, in pieces a request carries.
Status giveObjects(const fabric::RelocatableObjects& objects) {
  bool held = false;
  Status s = node().loadObjects(objects.key(), 0, std::string(), &held);
  const std::string& stored = objects.stored();
  for (size_t off = 0; s == Status::kOk && !held && off < stored.size();) {
    const size_t n = std::min(kPtxPiece, stored.size() - off);
    s = node().loadObjects(objects.key(), off, stored.substr(off, n), &held);
    off += n;
  }
  return s != Status::kOk ? s : held ? Status::kOk : Status::kInvalidValue;
}

// The image of `code`'s prelinked objects for compute capability `cc`. Known by the objects'
// fatbin addresses and headers (magic, version, sizes): the program's own image, which stays
// mapped while it runs; an image loaded later at the same addresses with the same sizes would be
// taken for it.
std::shared_ptr<LinkedImage> linkedImage(const ModuleCode& code, uint32_t cc) {
  using Key = std::pair<std::vector<uint8_t>, uint32_t>;
  static std::mutex mu;
  static auto* cache = new std::map<Key, std::shared_ptr<LinkedImage>>();  // leaked: outlives static destruction
  Key key{{}, cc};
  for (const void* f : code.prelinkedFatbins) {
    const auto* p = reinterpret_cast<const uint8_t*>(&f);
    key.first.insert(key.first.end(), p, p + sizeof f);
    key.first.insert(key.first.end(), static_cast<const uint8_t*>(f), static_cast<const uint8_t*>(f) + 16);
  }
  std::lock_guard<std::mutex> lock(mu);
  std::shared_ptr<LinkedImage>& slot = (*cache)[key];
  if (slot == nullptr) slot = std::make_shared<LinkedImage>();
  return slot;
}

}  // namespace

namespace {

// The image's objects, read (their fitting PTX decompressed) once per process: CUDA_SUCCESS, or
// CUDA_ERROR_NO_BINARY_FOR_GPU with `why`. The caller holds image.mu.
CUresult readObjects(LinkedImage& image, const ModuleCode& code, uint32_t cc, std::string* why) {
  if (!image.read) {
    image.read = true;
    std::string error, stored;
    std::vector<PtxEntry> objects;
    if (!prelinkedPtx(code, cc, &objects, &error, &stored)) {
      image.why = "the module is a device-linked (-rdc) image that carries no PTX of its own, and the PTX of the "
                  "relocatable objects it was linked from cannot be used: " + error;
    } else {
      image.objects = fabric::RelocatableObjects::fromImage(std::move(stored), std::move(objects));
    }
  }
  if (image.objects != nullptr) return CUDA_SUCCESS;
  *why = image.why;
  return CUDA_ERROR_NO_BINARY_FOR_GPU;
}

}  // namespace

CUresult ModulePtx::placeImageVariables(int device) {
  const std::shared_ptr<LinkedImage> image = linkedImage(code_, computeCapability(device));
  {
    std::lock_guard<std::mutex> imageLock(image->mu);
    MCSIM_TRY(readObjects(*image, code_, computeCapability(device), &why_));
    if (image->variables == nullptr) {
      ptx::LinkedPtx linked;
      std::string error;
      const ptx::PtxLinker* linker = image->objects->linker(&error);
      if (linker == nullptr || !linker->linkVariables(&linked, &error)) {
        why_ = "linking the PTX of the relocatable objects it was linked from: " + error;
        return CUDA_ERROR_NOT_SUPPORTED;
      }
      // Parsed by the driver only (no kernel runs from it: the node needs none of it), for the
      // variables' places and initial values.
      auto parsed = std::make_shared<ptx::Module>();
      if (!ptx::parseModule(linked.text, "variables.ptx", parsed.get(), &error, /*lenient=*/true)) {
        why_ = "the variables of the relocatable objects it was linked from: " + linked.translate(error);
        return CUDA_ERROR_NOT_SUPPORTED;
      }
      image->variables = std::move(parsed);
    }
    module_ = *image->variables;
  }
  return placeVariables(device);
}

ModulePtx* ModulePtx::forKernel(int device, const std::string& name, CUresult* r) {
  *r = CUDA_SUCCESS;
  if (!ptxOnlyInPrelinked()) return this;
  // The image's variables, placed once in the context: every kernel linked from it reaches them.
  *r = prepare(device);
  if (*r != CUDA_SUCCESS) return nullptr;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = linked_.find(name);
  if (it != linked_.end()) return it->second.get();
  const std::shared_ptr<LinkedImage> image = linkedImage(code_, computeCapability(device));
  std::shared_ptr<const ptx::LinkedPtx> linked;
  {
    std::lock_guard<std::mutex> imageLock(image->mu);
    *r = readObjects(*image, code_, computeCapability(device), &why_);
    if (*r != CUDA_SUCCESS) return nullptr;
    auto k = image->kernels.find(name);
    if (k == image->kernels.end()) {
      auto l = std::make_shared<ptx::LinkedPtx>();
      std::string error;
      const ptx::PtxLinker* linker = image->objects->linker(&error);
      if (linker == nullptr || !linker->link({name}, l.get(), &error)) {
        why_ = "linking the PTX of the relocatable objects it was linked from: " + error;
        *r = CUDA_ERROR_NOT_SUPPORTED;
        return nullptr;
      }
      if (l->tablesDeclaredOnly) {
        // The functions it declares only (a table's: NCCL's ncclDevFuncTable) are linked at their
        // first call, by the node, from the objects it is given once (docs/ptx.md).
        if (!image->given) {
          const Status s = giveObjects(*image->objects);
          if (s != Status::kOk) {
            why_ = "the node refused the relocatable objects it was linked from";
            *r = toResult(s);
            return nullptr;
          }
          image->given = true;
        }
        l->text += fabric::callLinkMarker(image->objects->key(), name);
      }
      k = image->kernels.emplace(name, std::move(l)).first;
    }
    linked = k->second;
  }
  ModuleCode code;
  code.ptx.push_back(PtxEntry{image->objects->arch(), linked->text});
  code.variants = code_.variants;  // the device-linked image's SASS: what makes newer PTX fit (bestPtx)
  auto m = std::make_unique<ModulePtx>(std::move(code));
  m->image_ = this;
  *r = m->prepare(device);
  // Messages about the linked text name the object and line it came from.
  m->why_ = linked->translate(m->why_);
  for (auto& [fn, why] : m->module_.refused) why = linked->translate(why);
  if (*r != CUDA_SUCCESS) {
    why_ = m->why_;
    return nullptr;
  }
  return linked_.emplace(name, std::move(m)).first->second.get();
}

const ptx::Function* ModulePtx::kernel(const std::string& name) const {
  const ptx::Function* f = module_.find(name);
  return f != nullptr && f->isEntry ? f : nullptr;
}

const std::string* ModulePtx::refusedWhy(const std::string& name) const {
  auto it = module_.refused.find(name);
  return it == module_.refused.end() ? nullptr : &it->second;
}

bool ModulePtx::global(const std::string& name, uint64_t* va, size_t* bytes) const {
  for (const ptx::ModuleVariable& v : module_.variables) {
    if ((v.space != ptx::Space::kGlobal && v.space != ptx::Space::kConst) || v.name != name || globalsVa_ == 0 ||
        v.name == ptx::kDeviceHeapVariable)
      continue;
    *va = globalsVa_ + (v.space == ptx::Space::kConst ? module_.constOffset() : 0) + v.offset;
    *bytes = v.size;
    return true;
  }
  return false;
}

CUresult ModulePtx::placeHeap(uint64_t va, uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  if (module_.heapVariable < 0 || globalsVa_ == 0 || (va == heapVa_ && bytes == heapBytes_)) return CUDA_SUCCESS;
  const uint64_t words[2] = {va, bytes};
  const Status s = node().write(globalsVa_ + static_cast<uint64_t>(module_.heapVariable), words, sizeof words, device_);
  if (s != Status::kOk) return toResult(s);
  heapVa_ = va;
  heapBytes_ = bytes;
  return CUDA_SUCCESS;
}

void ModulePtx::release() {
  std::lock_guard<std::mutex> lock(mu_);
  if (globalsVa_ != 0 && image_ == nullptr) (void)node().freeLinear(globalsVa_);  // the image's own: it frees them
  globalsVa_ = 0;
  // The node's parsed copy (a kernel of it launched already keeps it until it finishes).
  if (nodeModule_ != 0) (void)node().unloadPtx(nodeModule_);
  nodeModule_ = 0;
  for (auto& [name, m] : linked_) m->release();
}

CUresult extraBuffer(void** extra, const uint8_t** buffer, size_t* bytes) {
  bool sized = false;
  *buffer = nullptr;
  for (size_t i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
    if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER) {
      *buffer = static_cast<const uint8_t*>(extra[i + 1]);
    } else if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE) {
      if (extra[i + 1] == nullptr) return CUDA_ERROR_INVALID_VALUE;
      std::memcpy(bytes, extra[i + 1], sizeof *bytes);
      sized = true;
    } else {
      return CUDA_ERROR_INVALID_VALUE;
    }
  }
  return *buffer != nullptr && sized ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

namespace {

struct DeviceHeap {
  uint64_t va = 0;
  uint64_t bytes = 0;
};
// The contexts' placed heaps; looked up by context (iterated only to find an address's heap).
struct DeviceHeaps {
  std::mutex mu;
  std::map<CUctx_st*, DeviceHeap> placed;
};
DeviceHeaps& deviceHeaps() {
  static DeviceHeaps* h = new DeviceHeaps();  // leaked: contexts outlive static destruction
  return *h;
}

// The context's device heap, placed at the first launch of a kernel that calls malloc or free (the
// CUDA C++ Programming Guide places it when such a module is loaded; mcsim prepares a module at its
// first launch), and the module told where it is. A heap that does not fit in the device's memory
// fails the launch with CUDA_ERROR_SHARED_OBJECT_INIT_FAILED, the error the guide gives for it.
CUresult placeDeviceHeap(ModulePtx& m, CUctx_st* ctx) {
  DeviceHeap heap;
  {
    DeviceHeaps& h = deviceHeaps();
    std::lock_guard<std::mutex> lock(h.mu);
    auto it = h.placed.find(ctx);
    if (it == h.placed.end()) {
      heap.bytes = ctx->limits[CU_LIMIT_MALLOC_HEAP_SIZE];
      if (heap.bytes != 0) {
        Status s = node().allocLinear(ctx->device, heap.bytes, &heap.va);
        // A clear header: the executor's allocator sets the heap up at the first malloc.
        const uint8_t header[64] = {};
        if (s == Status::kOk) s = node().write(heap.va, header, std::min<uint64_t>(heap.bytes, sizeof header), ctx->device);
        if (s != Status::kOk) {
          if (heap.va != 0) (void)node().freeLinear(heap.va);
          std::fprintf(stderr, "mcsim: the device heap of %llu bytes (CU_LIMIT_MALLOC_HEAP_SIZE) does not fit in device "
                       "%d's memory\n", static_cast<unsigned long long>(heap.bytes), ctx->device);
          return CUDA_ERROR_SHARED_OBJECT_INIT_FAILED;
        }
      }
      it = h.placed.emplace(ctx, heap).first;
    }
    heap = it->second;
  }
  return m.placeHeap(heap.va, heap.bytes);
}

}  // namespace

bool unlessDeviceHeapPlaced(CUctx_st* ctx, const std::function<void()>& set) {
  DeviceHeaps& h = deviceHeaps();
  std::lock_guard<std::mutex> lock(h.mu);
  if (h.placed.count(ctx) != 0) return false;
  set();
  return true;
}

bool inDeviceHeap(uint64_t va, uint64_t bytes) {
  DeviceHeaps& h = deviceHeaps();
  std::lock_guard<std::mutex> lock(h.mu);
  for (const auto& [ctx, heap] : h.placed) {
    if (heap.bytes != 0 && va < heap.va + heap.bytes && heap.va < va + bytes) return true;
  }
  return false;
}

void releaseDeviceHeap(CUctx_st* ctx) {
  DeviceHeaps& h = deviceHeaps();
  std::lock_guard<std::mutex> lock(h.mu);
  auto it = h.placed.find(ctx);
  if (it == h.placed.end()) return;
  if (it->second.va != 0) (void)node().freeLinear(it->second.va);
  h.placed.erase(it);
}

fabric::DeviceOp kernelOp(const std::string& name, Dim3 grid, Dim3 block, unsigned sharedMem) {
  fabric::DeviceOp op;
  op.kind = fabric::DeviceOp::Kind::kKernel;
  op.threads = grid.count() * block.count();
  op.blocks = grid.count();
  op.label = name;
  op.gridX = grid.x;
  op.gridY = grid.y;
  op.gridZ = grid.z;
  op.blockX = block.x;
  op.blockY = block.y;
  op.blockZ = block.z;
  op.dynamicShared = sharedMem;
  return op;
}

CUresult launchPtxKernel(ModulePtx& image, CUfunc_st* func, const std::string& name, CUctx_st* ctx, Dim3 grid,
                         Dim3 block, unsigned sharedMem, CUstream stream, bool perThreadDefault, void** kernelParams,
                         void** extra, bool cooperative) {
  CUresult r = CUDA_SUCCESS;
  ModulePtx* linked = image.forKernel(ctx->device, name, &r);
  if (linked == nullptr) {
    std::fprintf(stderr, "mcsim: kernel '%s' has no behavioural model and cannot run in the simulator: %s\n",
                 name.c_str(), image.why().c_str());
    return r;
  }
  ModulePtx& m = *linked;
  const char* rebuild = "rebuild with -gencode arch=compute_90,code=[sm_90,compute_90] to include PTX";
  r = m.prepare(ctx->device);
  const ptx::Function* fn = r == CUDA_SUCCESS ? m.kernel(name) : nullptr;
  if (r == CUDA_SUCCESS && fn == nullptr && m.refusedWhy(name) != nullptr) {
    std::fprintf(stderr, "mcsim: kernel '%s' cannot run in the simulator: %s\n", name.c_str(), m.refusedWhy(name)->c_str());
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  if (r == CUDA_SUCCESS && fn == nullptr) {
    std::fprintf(stderr, "mcsim: kernel '%s' has no behavioural model and its module's PTX lacks it, so it "
                 "cannot run in the simulator (mcsim runs PTX, never SASS): %s\n", name.c_str(), rebuild);
    return CUDA_ERROR_NO_BINARY_FOR_GPU;
  }
  if (r == CUDA_ERROR_NO_BINARY_FOR_GPU) {
    if (m.ptxOnlyInPrelinked()) rebuild = "a kernel's PTX must be in the image that defines it (build without -rdc)";
    std::fprintf(stderr, "mcsim: kernel '%s' has no behavioural model and %s, so it cannot run in the "
                 "simulator: %s\n", name.c_str(), m.why().c_str(), rebuild);
    return r;
  }
  if (r != CUDA_SUCCESS) {
    std::fprintf(stderr, "mcsim: kernel '%s' cannot run in the simulator: %s\n", name.c_str(), m.why().c_str());
    return r;
  }
  // Parameters, in the kernel's .param layout.
  std::vector<uint8_t> params;
  if (kernelParams != nullptr && extra != nullptr) return CUDA_ERROR_INVALID_VALUE;
  if (kernelParams != nullptr) {
    for (size_t i = 0; i < fn->params.size(); ++i) {
      if (kernelParams[i] == nullptr) return CUDA_ERROR_INVALID_VALUE;
    }
    params = ptx::packParams(*fn, kernelParams);
  } else if (extra != nullptr) {
    const uint8_t* buffer = nullptr;
    size_t bytes = 0;
    MCSIM_TRY(extraBuffer(extra, &buffer, &bytes));
    // A buffer shorter than the parameters gives their first bytes, the rest zero: NCCL passes
    // only the part of its 4096-byte argument storage it uses (docs/nccl.md), as real drivers take.
    params.assign(fn->paramBytes, 0);
    // (A kernel without parameters has no storage to copy into: memcpy's pointers must not be null.)
    const size_t copied = std::min<size_t>(bytes, fn->paramBytes);
    if (copied != 0) std::memcpy(params.data(), buffer, copied);
  } else if (fn->paramBytes != 0) {
    return CUDA_ERROR_INVALID_VALUE;
  }
  const uint64_t staticShared = (uint64_t{fn->staticShared} + fn->dynamicSharedAlign - 1) / fn->dynamicSharedAlign *
                                fn->dynamicSharedAlign;
  if (staticShared + sharedMem > kMaxSharedPerBlock) return CUDA_ERROR_INVALID_VALUE;
  const int perSm = blocksPerSm(ctx->device, func, static_cast<int>(block.count()), static_cast<long>(staticShared),
                                static_cast<long>(sharedMem));
  const uint64_t resident = static_cast<uint64_t>(std::max(perSm, 0)) *
                            static_cast<uint64_t>(state().attributes[static_cast<size_t>(ctx->device)]
                                                                    [CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT]);
  // cuda.h, cuLaunchCooperativeKernel: the blocks may not exceed the blocks an SM holds (the
  // occupancy calculation) times the SMs.
  if (cooperative && grid.count() > resident) return CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE;
  if (m.usesHeap()) MCSIM_TRY(placeDeviceHeap(m, ctx));
  StreamRef st;
  MCSIM_TRY(resolveStream(stream, perThreadDefault, &st));
  if (st->ctx != ctx) return CUDA_ERROR_INVALID_HANDLE;
  fabric::DeviceOp op = kernelOp(name, grid, block, sharedMem);
  op.ptxModule = m.nodeModule();
  op.params = std::move(params);
  op.globalsVa = m.globalsVa();
  // A block that fits no SM still runs, one at a time (the occupancy answers 0 for attributes the
  // executor does not need, such as registers a PTX kernel has not been allocated).
  op.residentBlocks = std::max<uint64_t>(resident, 1);
  op.printfFifoBytes = ctx->limits[CU_LIMIT_PRINTF_FIFO_SIZE];
  for (const ptx::Callee& c : fn->callees) {
    if (c.builtin == ptx::Builtin::kVprintf) ctx->printfLaunched.store(true);
  }
  return enqueue(st.get(), std::move(op));
}

}  // namespace mcsim::driver
