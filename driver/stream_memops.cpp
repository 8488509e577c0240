// Stream memory operations (stream_memops.h). A write is a copy of the word from the call's
// arguments, in stream order. A wait is an operation of the stream's device that holds the
// stream until the word satisfies its comparison; the node re-reads the word whenever device work
// writes memory (fabric/node_kernels.cpp). A wait whose value never comes holds its stream for
// good: synchronizing with it reports the hang as the node reports a kernel that waits forever,
// and the context keeps CUDA_ERROR_LAUNCH_TIMEOUT (stream.h, waitWork).
//
// What is checked, before anything is queued (docs/runtime.md, "Stream memory operations"): the
// flags (a comparison GEQ, EQ, AND or NOR, plus FLUSH, for waits; NO_MEMORY_BARRIER for writes),
// the word's alignment, that it is memory the driver knows, and what the device supports
// (CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_MEM_OPS_V1 for the CUDA 8 and 9 symbols, 0 on an H100;
// CAN_USE_64_BIT_STREAM_MEM_OPS, CAN_USE_STREAM_WAIT_VALUE_NOR, CAN_FLUSH_REMOTE_WRITES):
// unsupported is CUDA_ERROR_NOT_SUPPORTED. Waits on host memory are not modelled
// (CUDA_ERROR_NOT_SUPPORTED, said once on stderr).
#include "driver/stream_memops.h"

#include <atomic>
#include <cstdio>
#include <vector>

#include "driver/context.h"
#include "driver/driver.h"
#include "driver/graph.h"
#include "driver/enum_field.h"
#include "driver/memory.h"
#include "driver/stream.h"

namespace mcsim::driver {

namespace {

constexpr unsigned kMaxBatch = 256;  // the reference: at most 256 operations a batch

int attribute(const StreamRef& st, CUdevice_attribute a) {
  return state().attributes[static_cast<size_t>(st->ctx->device)][a];
}

// What the device must support for an operation of `width` bytes through the API `v1` names.
CUresult supported(const StreamRef& st, unsigned width, bool v1) {
  if (v1 && attribute(st, CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_MEM_OPS_V1) == 0) return CUDA_ERROR_NOT_SUPPORTED;
  const CUdevice_attribute wide =
      v1 ? CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS_V1 : CU_DEVICE_ATTRIBUTE_CAN_USE_64_BIT_STREAM_MEM_OPS;
  if (width == 8 && attribute(st, wide) == 0) return CUDA_ERROR_NOT_SUPPORTED;
  return CUDA_SUCCESS;
}

CUresult checkWord(CUdeviceptr addr, unsigned width) {
  if (addr == 0 || addr % width != 0) return CUDA_ERROR_INVALID_VALUE;
  return CUDA_SUCCESS;
}

CUresult hostWaitNotModelled(unsigned width) {
  static std::atomic<bool> told{false};
  if (!told.exchange(true, std::memory_order_relaxed)) {
    std::fprintf(stderr, "mcsim: cuStreamWaitValue%u on host memory is not modelled; it returns CUDA_ERROR_NOT_SUPPORTED\n",
                 width * 8);
  }
  return CUDA_ERROR_NOT_SUPPORTED;
}

struct Wait {
  CUdeviceptr addr;
  uint64_t value;
  unsigned width;
  fabric::WaitCompare compare;
};

CUresult checkWait(const StreamRef& st, CUdeviceptr addr, unsigned width, unsigned flags, bool v1, Wait* out) {
  const unsigned flush = CU_STREAM_WAIT_VALUE_FLUSH;
  switch (flags & ~flush) {
    case CU_STREAM_WAIT_VALUE_GEQ: out->compare = fabric::WaitCompare::kGeq; break;
    case CU_STREAM_WAIT_VALUE_EQ: out->compare = fabric::WaitCompare::kEq; break;
    case CU_STREAM_WAIT_VALUE_AND: out->compare = fabric::WaitCompare::kAnd; break;
    case CU_STREAM_WAIT_VALUE_NOR: out->compare = fabric::WaitCompare::kNor; break;
    default: return CUDA_ERROR_INVALID_VALUE;
  }
  MCSIM_TRY(checkWord(addr, width));
  MCSIM_TRY(supported(st, width, v1));
  const CUdevice_attribute nor =
      v1 ? CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR_V1 : CU_DEVICE_ATTRIBUTE_CAN_USE_STREAM_WAIT_VALUE_NOR;
  if (out->compare == fabric::WaitCompare::kNor && attribute(st, nor) == 0) return CUDA_ERROR_NOT_SUPPORTED;
  if ((flags & flush) != 0 && attribute(st, CU_DEVICE_ATTRIBUTE_CAN_FLUSH_REMOTE_WRITES) == 0) {
    return CUDA_ERROR_NOT_SUPPORTED;
  }
  if (!isDeviceAddress(addr)) {
    HostAllocation h;
    return findHostAllocation(addr, &h) ? hostWaitNotModelled(width) : CUDA_ERROR_INVALID_VALUE;
  }
  out->addr = addr;
  out->width = width;
  return CUDA_SUCCESS;
}

CUresult checkWrite(const StreamRef& st, CUdeviceptr addr, unsigned width, unsigned flags, bool v1) {
  // cuda.h: NO_MEMORY_BARRIER "is not supported in the v2 API"; a real H100 (driver 580.159.04)
  // answers CUDA_ERROR_INVALID_VALUE for it (docs/real-driver.md).
  const unsigned allowed = v1 ? unsigned{CU_STREAM_WRITE_VALUE_NO_MEMORY_BARRIER} : 0u;
  if ((flags & ~allowed) != 0) return CUDA_ERROR_INVALID_VALUE;
  MCSIM_TRY(checkWord(addr, width));
  return supported(st, width, v1);
}

CUresult enqueueWait(const StreamRef& st, const Wait& w) {
  fabric::DeviceOp op;
  op.kind = fabric::DeviceOp::Kind::kWaitValue;
  op.dst = w.addr;
  op.dstAccessor = st->ctx->device;
  op.elementBytes = w.width;
  op.waitCompare = w.compare;
  op.waitValue = w.width == 4 ? static_cast<uint32_t>(w.value) : w.value;
  op.label = w.width == 4 ? "cuStreamWaitValue32" : "cuStreamWaitValue64";
  return enqueue(st.get(), op);
}

// The word is taken from the call (pageable host memory, staged at submission), and written in
// stream order. NO_MEMORY_BARRIER (the v1 API's only) allows the write to pass earlier writes,
// which the model never reorders.
CUresult enqueueWrite(CUstream s, CUdeviceptr addr, uint64_t value, unsigned width, bool perThreadDefault) {
  const uint32_t narrow = static_cast<uint32_t>(value);
  const void* word = width == 4 ? static_cast<const void*>(&narrow) : static_cast<const void*>(&value);
  return copyHtoD(addr, word, width, Ordering{s, true, perThreadDefault});
}

}  // namespace

CUresult streamWaitValueEntry(CUstream s, CUdeviceptr addr, uint64_t value, unsigned width, unsigned flags, bool v1,
                              bool perThreadDefault) {
  NodeCall call(CU_GRAPH_NODE_TYPE_BATCH_MEM_OP);  // captured: one node for the call
  call.copiesSourceNow = true;
  StreamRef st;
  MCSIM_TRY(resolveStream(s, perThreadDefault, &st));
  Wait w;
  MCSIM_TRY(checkWait(st, addr, width, flags, v1, &w));
  w.value = value;
  return enqueueWait(st, w);
}

CUresult streamWriteValueEntry(CUstream s, CUdeviceptr addr, uint64_t value, unsigned width, unsigned flags, bool v1,
                               bool perThreadDefault) {
  NodeCall call(CU_GRAPH_NODE_TYPE_BATCH_MEM_OP);  // captured: one node for the call
  call.copiesSourceNow = true;
  StreamRef st;
  MCSIM_TRY(resolveStream(s, perThreadDefault, &st));
  MCSIM_TRY(checkWrite(st, addr, width, flags, v1));
  return enqueueWrite(s, addr, value, width, perThreadDefault);
}

CUresult streamBatchMemOpEntry(CUstream s, unsigned count, CUstreamBatchMemOpParams* ops, unsigned flags, bool v1,
                               bool perThreadDefault) {
  NodeCall call(CU_GRAPH_NODE_TYPE_BATCH_MEM_OP);  // captured: one node for the call
  call.copiesSourceNow = true;
  StreamRef st;
  MCSIM_TRY(resolveStream(s, perThreadDefault, &st));
  if (flags != 0 || count > kMaxBatch || (count > 0 && ops == nullptr)) return CUDA_ERROR_INVALID_VALUE;
  // Every operation is checked before any is queued: a batch with a bad one changes nothing.
  std::vector<Wait> waits(count);
  for (unsigned i = 0; i < count; ++i) {
    const CUstreamBatchMemOpParams& p = ops[i];
    switch (enumField(p.operation)) {
      case CU_STREAM_MEM_OP_WAIT_VALUE_32:
      case CU_STREAM_MEM_OP_WAIT_VALUE_64: {
        const unsigned width = enumField(p.operation) == CU_STREAM_MEM_OP_WAIT_VALUE_32 ? 4 : 8;
        MCSIM_TRY(checkWait(st, p.waitValue.address, width, p.waitValue.flags, v1, &waits[i]));
        waits[i].value = width == 4 ? p.waitValue.value : p.waitValue.value64;
        break;
      }
      case CU_STREAM_MEM_OP_WRITE_VALUE_32:
      case CU_STREAM_MEM_OP_WRITE_VALUE_64:
        MCSIM_TRY(checkWrite(st, p.writeValue.address,
                             enumField(p.operation) == CU_STREAM_MEM_OP_WRITE_VALUE_32 ? 4 : 8, p.writeValue.flags, v1));
        break;
      case CU_STREAM_MEM_OP_FLUSH_REMOTE_WRITES:
        if (attribute(st, CU_DEVICE_ATTRIBUTE_CAN_FLUSH_REMOTE_WRITES) == 0) return CUDA_ERROR_NOT_SUPPORTED;
        break;
      case CU_STREAM_MEM_OP_BARRIER:
        if (p.memoryBarrier.flags != CU_STREAM_MEMORY_BARRIER_TYPE_SYS &&
            p.memoryBarrier.flags != CU_STREAM_MEMORY_BARRIER_TYPE_GPU) {
          return CUDA_ERROR_INVALID_VALUE;
        }
        break;
      default:
        return CUDA_ERROR_INVALID_VALUE;
    }
  }
  for (unsigned i = 0; i < count; ++i) {
    const CUstreamBatchMemOpParams& p = ops[i];
    switch (enumField(p.operation)) {
      case CU_STREAM_MEM_OP_WAIT_VALUE_32:
      case CU_STREAM_MEM_OP_WAIT_VALUE_64:
        MCSIM_TRY(enqueueWait(st, waits[i]));
        break;
      case CU_STREAM_MEM_OP_WRITE_VALUE_32:
        MCSIM_TRY(enqueueWrite(s, p.writeValue.address, p.writeValue.value, 4, perThreadDefault));
        break;
      case CU_STREAM_MEM_OP_WRITE_VALUE_64:
        MCSIM_TRY(enqueueWrite(s, p.writeValue.address, p.writeValue.value64, 8, perThreadDefault));
        break;
      default:
        break;  // a barrier or a flush: the model keeps stream order and never defers a write
    }
  }
  return CUDA_SUCCESS;
}

}  // namespace mcsim::driver

using namespace mcsim::driver;

#include "driver/stream_memops_entries.inc"

// The CUDA 8 and 9 symbols (the "v1" API, which needs CAN_USE_STREAM_MEM_OPS_V1), under their
// exact names.
#include "driver/abi_names.h"

extern "C" {

#define MCSIM_V1_MEMOPS(suffix, perThread)                                                                        \
  CUresult CUDAAPI cuStreamWaitValue32##suffix(CUstream s, CUdeviceptr addr, cuuint32_t value, unsigned int flags) { \
    MCSIM_REQUIRE_INIT();                                                                                           \
    return streamWaitValueEntry(s, addr, value, 4, flags, true, perThread);                                        \
  }                                                                                                                 \
  CUresult CUDAAPI cuStreamWaitValue64##suffix(CUstream s, CUdeviceptr addr, cuuint64_t value, unsigned int flags) { \
    MCSIM_REQUIRE_INIT();                                                                                           \
    return streamWaitValueEntry(s, addr, value, 8, flags, true, perThread);                                        \
  }                                                                                                                 \
  CUresult CUDAAPI cuStreamWriteValue32##suffix(CUstream s, CUdeviceptr addr, cuuint32_t value, unsigned int flags) { \
    MCSIM_REQUIRE_INIT();                                                                                           \
    return streamWriteValueEntry(s, addr, value, 4, flags, true, perThread);                                       \
  }                                                                                                                 \
  CUresult CUDAAPI cuStreamWriteValue64##suffix(CUstream s, CUdeviceptr addr, cuuint64_t value, unsigned int flags) { \
    MCSIM_REQUIRE_INIT();                                                                                           \
    return streamWriteValueEntry(s, addr, value, 8, flags, true, perThread);                                       \
  }                                                                                                                 \
  CUresult CUDAAPI cuStreamBatchMemOp##suffix(CUstream s, unsigned int count, CUstreamBatchMemOpParams* ops,        \
                                              unsigned int flags) {                                                 \
    MCSIM_REQUIRE_INIT();                                                                                           \
    return streamBatchMemOpEntry(s, count, ops, flags, true, perThread);                                           \
  }
MCSIM_V1_MEMOPS(, false)
MCSIM_V1_MEMOPS(_ptsz, true)
#undef MCSIM_V1_MEMOPS

}  // extern "C"
