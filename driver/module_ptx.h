// A module's PTX as the executor runs it (docs/ptx.md, "On the node"): for a module of one
// context, the PTX entry that fits its device, parsed (for the kernels' parameter layouts and the
// module's variables), registered with the node (which parses it again for the executor, and on
// a shared node is another process), and its .global variables placed in the device's memory,
// initialised from the PTX. Prepared on first use: the first launch of a kernel without a
// behavioural model, or the first cuModuleGetGlobal.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "driver/module_image.h"
#include "fabric/node.h"
#include "mcsim/kernel_model.h"
#include "ptx/ir.h"

struct CUctx_st;

namespace mcsim::driver {

// The compute capability of `device` as PTX and fatbins name architectures (90 for 9.0).
uint32_t computeCapability(int device);

class ModulePtx {
 public:
  explicit ModulePtx(ModuleCode code) : code_(std::move(code)) {}

  // Prepares the module for `device` (once; later calls answer as the first did). CUDA_SUCCESS,
  // or why it cannot run: CUDA_ERROR_NO_BINARY_FOR_GPU (no PTX entry fits the device: bestPtx), or
  // CUDA_ERROR_NOT_SUPPORTED (the executor's parser refuses the PTX: why() says where). For a
  // device-linked image whose kernels are linked one by one (ptxOnlyInPrelinked), it places the
  // image's variables: every .global and .const variable its objects define, once in the context,
  // which every kernel linked from it reaches and global() finds (docs/ptx.md).
  CUresult prepare(int device);
  const std::string& why() const { return why_; }
  // A device-linked (-rdc) image whose relocatable objects carry the PTX (docs/nccl.md).
  bool ptxOnlyInPrelinked() const { return code_.ptx.empty() && code_.prelinkedWithPtx != 0; }
  // The module kernel `name` runs from: this one, or for a device-linked image whose PTX is in its
  // relocatable objects, a module of its own linked from them (ptx/linker.h) at the kernel's
  // first launch, with the kernel, what it calls and the variables they name (docs/nccl.md,
  // "Linking"). nullptr with `*r` and why() when linking fails (CUDA_ERROR_NO_BINARY_FOR_GPU:
  // an object without fitting PTX; CUDA_ERROR_NOT_SUPPORTED: a symbol unresolved or defined
  // twice, or PTX the parser refuses).
  ModulePtx* forKernel(int device, const std::string& name, CUresult* r);

  // After a successful prepare: the kernel's PTX (nullptr if the module's PTX lacks it), the
  // node's id of the module, and where a .global variable lives.
  const ptx::Function* kernel(const std::string& name) const;
  // Why the executor's parser left kernel `name` out (nullptr: it did not).
  const std::string* refusedWhy(const std::string& name) const;
  uint64_t nodeModule() const { return nodeModule_; }
  uint64_t globalsVa() const { return globalsVa_; }
  bool global(const std::string& name, uint64_t* va, size_t* bytes) const;
  // Whether its kernels call malloc or free (the module has ptx::kDeviceHeapVariable).
  bool usesHeap() const { return module_.heapVariable >= 0; }
  // Tells the module's kernels where the context's device heap is (written into the variable
  // when it changes).
  CUresult placeHeap(uint64_t va, uint64_t bytes);
  // Gives the variables' device memory back (the module is unloaded).
  void release();

 private:
  CUresult placeVariables(int device);
  CUresult placeImageVariables(int device);

  std::mutex mu_;
  ModuleCode code_;
  bool prepared_ = false;
  CUresult result_ = CUDA_SUCCESS;
  std::string why_;
  ptx::Module module_;
  uint64_t nodeModule_ = 0;
  uint64_t globalsVa_ = 0;
  // A device-linked image's objects' PTX (read at the first link) and its kernels' linked modules.
  std::vector<PtxEntry> objects_;
  std::map<std::string, std::unique_ptr<ModulePtx>> linked_;
  // A kernel's module linked from a device-linked image's objects: the image's module, whose
  // placed variables it reaches (its own are never placed).
  const ModulePtx* image_ = nullptr;
  int device_ = 0;
  uint64_t heapVa_ = 0, heapBytes_ = 0;  // what the heap variable holds
};

// The device heap of malloc/free in kernels (docs/ptx.md, "malloc and free"), one per context:
// placed in the device's memory at the first launch of a kernel that calls them,
// CU_LIMIT_MALLOC_HEAP_SIZE bytes, fixed from then on. `set` runs (under the heap table's lock, so
// that no launch places the heap meanwhile) unless the context's heap is placed: whether it ran.
bool unlessDeviceHeapPlaced(CUctx_st* ctx, const std::function<void()>& set);
// Gives the context's heap back (its memory goes: destroyed, reset or released).
void releaseDeviceHeap(CUctx_st* ctx);
// Whether [va, va + bytes) touches a context's device heap, which the host's copy calls refuse
// (CUDA_ERROR_INVALID_VALUE on a real H200, docs/real-driver.md).
bool inDeviceHeap(uint64_t va, uint64_t bytes);

// The packed parameter buffer a launch's `extra` names (CU_LAUNCH_PARAM_BUFFER_POINTER and
// _SIZE, up to CU_LAUNCH_PARAM_END); CUDA_ERROR_INVALID_VALUE when it names none or other keys.
CUresult extraBuffer(void** extra, const uint8_t** buffer, size_t* bytes);

// A kernel launch of `name` as device work: its grid, block and dynamic shared memory (which the
// PTX executor runs with, and the timeline shows), whether a behavioural model or the executor
// runs it; the caller adds what that one needs.
fabric::DeviceOp kernelOp(const std::string& name, Dim3 grid, Dim3 block, unsigned sharedMem);

// Launches `name` of `m` (prepared for `ctx`'s device) on `st` as the PTX executor's work: the
// parameters packed in the kernel's .param layout, as many blocks resident at once as the
// device's SMs hold of it (`func`'s occupancy). A cooperative launch whose blocks do not all fit
// at once is refused with CUDA_ERROR_COOPERATIVE_LAUNCH_TOO_LARGE. Refusals print why on stderr.
CUresult launchPtxKernel(ModulePtx& m, CUfunc_st* func, const std::string& name, CUctx_st* ctx, Dim3 grid, Dim3 block,
                         unsigned sharedMem, CUstream stream, bool perThreadDefault, void** kernelParams,
                         void** extra, bool cooperative);

}  // namespace mcsim::driver
