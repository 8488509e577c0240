// The shared segment of a shared node and the calls that cross it.
//
// The segment (a Boost.Interprocess managed shared memory object, node_ipc.h names it) holds
//   - a header: the node's identity and the few facts every driver call reads without asking
//     (whether a fault plan is installed, whether the IMEX channel is present);
//   - request channels, one per application thread that is inside a driver call at the moment:
//     a request and a response buffer and two process-shared semaphores. The client writes a
//     Node call as plain data (node_ops.h: a header, then its inputs), posts `request` and waits on
//     `response`; a node thread that serves that channel alone carries the call out against the
//     process's Node and writes the result back. A call that blocks (a bind waiting for its team)
//     holds its channel and its node thread, nothing else;
//   - blocks for the bulk data of copies between host and device memory: the host side of a
//     process cannot be reached from the node process, so its bytes travel through the segment.
//
// Only the node process allocates in the segment; clients read and write the buffers they were
// given. So a client killed at any point leaves the segment's allocator consistent, and the node
// frees what the client held.
#pragma once

#include <semaphore.h>
#include <time.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "fabric/node.h"
#include "fabric/wire.h"

namespace mcsim::fabric::channel {

constexpr uint32_t kSegmentMagic = 0x4e53434d;  // "MCSN"
constexpr uint32_t kSegmentVersion = 1;
constexpr const char* kHeaderName = "mcsim.header";
// Request and response buffers. Host data of at most kInlineBytes travels inside a request; more
// goes through a block of its own.
constexpr size_t kChannelBytes = 256 * 1024;
constexpr size_t kInlineBytes = 192 * 1024;

// How many times a waiter looks before it sleeps (MCSIM_NODE_SPIN): set by the process as it
// attaches (driver) or starts its node (mcsim-node); 0 until then.
inline std::atomic<int> spinRounds{0};
inline void setSpinRounds(int rounds) { spinRounds.store(rounds, std::memory_order_relaxed); }

// A counting semaphore shared between processes (POSIX, pshared). Boost's interprocess_semaphore
// is not used: its wait throws when a signal interrupts it.
class SharedSemaphore {
 public:
  SharedSemaphore() { sem_init(&s_, 1, 0); }
  ~SharedSemaphore() { sem_destroy(&s_); }
  SharedSemaphore(const SharedSemaphore&) = delete;
  SharedSemaphore& operator=(const SharedSemaphore&) = delete;
  void post() { sem_post(&s_); }
  void wait() {
    if (spin()) return;
    while (sem_wait(&s_) != 0 && errno == EINTR) {
    }
  }
  // false when `ms` milliseconds passed first.
  bool waitFor(int ms) {
    if (spin()) return true;
    timespec t{};
    clock_gettime(CLOCK_MONOTONIC, &t);
    t.tv_sec += ms / 1000;
    t.tv_nsec += static_cast<long>(ms % 1000) * 1000000L;
    if (t.tv_nsec >= 1000000000L) {
      t.tv_nsec -= 1000000000L;
      ++t.tv_sec;
    }
    for (;;) {
      if (sem_clockwait(&s_, CLOCK_MONOTONIC, &t) == 0) return true;
      if (errno != EINTR) return false;
    }
  }

 private:
  // A call's answer (or a thread's next call) often comes within microseconds; with
  // MCSIM_NODE_SPIN=N (in the node's and the programs' environments; setSpinRounds), a waiter looks N times
  // before it sleeps, which saves being woken when cores are free for both sides (one thread
  // calling in a loop: ~0.5 us a call instead of ~6-40 us on a busy 2-core machine) and costs
  // dearly when they are not (8 processes in a loop: 4x slower there). Off by default. Returns
  // true if the post came.
  bool spin() {
    const int rounds = spinRounds.load(std::memory_order_relaxed);
    for (int i = 0; i < rounds; ++i) {
      if (sem_trywait(&s_) == 0) return true;
      __builtin_ia32_pause();
    }
    return false;
  }
  sem_t s_;
};

struct SegmentHeader {
  uint32_t magic = kSegmentMagic;
  uint32_t version = kSegmentVersion;
  int32_t nodePid = 0;
  uint32_t uid = 0;
  std::atomic<uint32_t> faultsActive{0};
  std::atomic<uint32_t> imexPresent{0};
  std::atomic<uint32_t> stopping{0};  // the node is going away: calls fail
};

// Made by the segment's allocator, which aligns to 16 bytes: no member may ask for more.
struct Channel {
  SharedSemaphore request, response;
  std::atomic<uint32_t> closing{0};  // the node thread is to leave (its process is gone)
  uint64_t requestBytes = 0, responseBytes = 0;
  uint8_t requestData[kChannelBytes];
  uint8_t responseData[kChannelBytes];
};

// How the host side of a copy crosses (DeviceOp::src / dst when not device memory).
enum class HostData : uint32_t {
  kNone = 0,
  kInline,   // source bytes follow in the request (Request<Op::submit>::data)
  kBlock,    // source bytes are in a staged block (Op::stage): its offset follows
  kReturn,   // destination: the node writes into a block it makes and returns the offset
};

// Bytes that stay where they are: a copy's host source written straight from the program's
// memory into the request, and read by the node where it lies in the request.
struct ByteRun {
  const uint8_t* data = nullptr;
  uint64_t size = 0;
};

// A FaultArgument as values (its pointers cannot cross).
struct WireFaultArgument {
  std::string name;
  uint64_t value = 0;
  std::string text;
  bool isText = false;
  bool present = true;
};

}  // namespace mcsim::fabric::channel

// The wire form of the Node interface's plain data: each struct's fields, in wire order (wire.h).
// A field added to one of these structs must be added here too, or it does not cross.
namespace mcsim::fabric::wire {

#define MCSIM_WIRE_FIELDS(Type, ...)                   \
  template <>                                           \
  struct Fields<Type> {                                 \
    template <typename S, typename V>                   \
    static void visit(S& s, V&& v) {                    \
      v(__VA_ARGS__);                                   \
    }                                                   \
  };
MCSIM_WIRE_FIELDS(Location, s.kind, s.id)
MCSIM_WIRE_FIELDS(AllocationProps, s.location, s.size, s.handleTypes, s.compressionType, s.gpuDirectRdmaCapable,
                  s.usage)
MCSIM_WIRE_FIELDS(PointerInfo, s.mapped, s.linear, s.pooled, s.location, s.allocationId, s.handleTypes,
                  s.gpuDirectRdmaCapable, s.access, s.mappingBase, s.mappingSize, s.reservationBase,
                  s.reservationSize, s.requestedSize)
MCSIM_WIRE_FIELDS(NodeStats, s.allocations, s.handles, s.reservations, s.mappings, s.exportedFds, s.residentBytes,
                  s.multicastObjects, s.freeMulticastSlots, s.ptxModules)
MCSIM_WIRE_FIELDS(MulticastProps, s.numDevices, s.size, s.handleTypes)
MCSIM_WIRE_FIELDS(Holding, s.kind, s.key, s.size, s.device)
MCSIM_WIRE_FIELDS(Admission, s.number, s.finishedBefore, s.simRuns)
MCSIM_WIRE_FIELDS(KernelStep, s.kind, s.dst, s.src, s.src2, s.mc, s.bytes, s.count, s.dtype, s.op, s.value)
// A device operation but its host pointers' meaning (the transport replaces them).
MCSIM_WIRE_FIELDS(DeviceOp, s.kind, s.engineDevice, s.dst, s.src, s.dstDevice, s.srcDevice, s.dstPinned, s.srcPinned,
                  s.dstAccessor, s.srcAccessor, s.bytes, s.value, s.elementBytes, s.count, s.callerWaits,
                  s.stageSource, s.crossGpu, s.peers, s.steps, s.threads, s.blocks, s.bytesInFlightPerThread, s.waitCompare,
                  s.waitValue, s.label, s.stream, s.ptxModule, s.gridX, s.gridY, s.gridZ, s.blockX, s.blockY, s.blockZ,
                  s.dynamicShared, s.params, s.globalsVa, s.residentBlocks, s.printfFifoBytes, s.notBeforePs)
MCSIM_WIRE_FIELDS(ArgValue, s.number, s.symbol)
MCSIM_WIRE_FIELDS(ArgFilter, s.name, s.op, s.text, s.values)
MCSIM_WIRE_FIELDS(FaultRule, s.file, s.line, s.text, s.point, s.entry, s.prefix, s.devices, s.ranks, s.gpu, s.args,
                  s.nth, s.after, s.max, s.probability, s.atPs, s.always, s.action, s.result, s.label, s.timePs,
                  s.untilPs, s.forPs, s.state, s.wallClock)
MCSIM_WIRE_FIELDS(FaultRuleCounts, s.matched, s.fired)
MCSIM_WIRE_FIELDS(Node::FaultOutcome, s.fail, s.result, s.status)
MCSIM_WIRE_FIELDS(channel::WireFaultArgument, s.name, s.value, s.text, s.isText, s.present)
#undef MCSIM_WIRE_FIELDS

template <>
struct Codec<channel::ByteRun> {
  static void put(Writer& w, const channel::ByteRun& b) { w.count(b.size).bytes(b.data, b.size); }
  static void get(Reader& r, channel::ByteRun* b) {
    b->size = r.count();
    b->data = r.view(b->size);
    if (b->data == nullptr) b->size = 0;
  }
};

}  // namespace mcsim::fabric::wire
