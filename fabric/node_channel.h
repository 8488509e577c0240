// The shared segment of a shared node and the calls that cross it.
//
// The segment (a Boost.Interprocess managed shared memory object, node_ipc.h names it) holds
//   - a header: the node's identity and the few facts every driver call reads without asking
//     (whether a fault plan is installed, whether the IMEX channel is present);
//   - request channels, one per application thread that is inside a driver call at the moment:
//     a request and a response buffer and two process-shared semaphores. The client writes a
//     Node call as plain data (its Op, then its arguments, wire.h), posts `request` and waits on
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
  // MCSIM_NODE_SPIN=N (in the node's and the programs' environments), a waiter looks N times
  // before it sleeps, which saves being woken when cores are free for both sides (one thread
  // calling in a loop: ~0.5 us a call instead of ~6-40 us on a busy 2-core machine) and costs
  // dearly when they are not (8 processes in a loop: 4x slower there). Off by default. Returns
  // true if the post came.
  bool spin() {
    static const int rounds = [] {
      const char* e = std::getenv("MCSIM_NODE_SPIN");
      return e != nullptr ? std::atoi(e) : 0;
    }();
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

// The calls. Each request starts with the Op, the calling thread's id, the admission number a
// replay wants it to take (0: none) and whether it is traced (admission.h), the completions the
// client dropped and the blocks it is done with; then the call's arguments. Each response starts
// with the request's admission (kAdmissionBytes: its number, the traced requests finished before
// it, the simulation's runs done), the Status (then, for kHang, the report), then the outputs.
constexpr uint64_t kAdmissionBytes = 24;
enum class Op : uint32_t {
  kCreateAllocation = 1,
  kReleaseHandle,
  kHandleProps,
  kRetainHandleAt,
  kImportPosixFile,
  kExportFabric,
  kImportFabric,
  kReserve,
  kFreeReservation,
  kMap,
  kUnmap,
  kSetAccess,
  kGetAccess,
  kAllocLinear,
  kFreeLinear,
  kAllocPooled,
  kFreePooled,
  kSetPooledAccess,
  kPointerInfo,
  kMemoryInfo,
  kStage,       // a block for host data to come: its offset
  kSubmit,
  kWaitFor,
  kPoll,
  kIsDone,
  kNowPs,
  kMulticastCreate,
  kMulticastAddDevice,
  kMulticastBindMem,
  kMulticastBindAddr,
  kMulticastUnbind,
  kFabricManagerState,
  kSetFabricManagerState,
  kOnEntry,
  kInstallFaultPlan,
  kReleaseFault,
  kFaultCounts,
  kFaultRules,
  kNvlinkUp,
  kStateDigest,
  kStats,
  kSkipAdmissions,  // recorded admission numbers a replayed call did not use
  kCount,
};

// How the host side of a copy crosses (DeviceOp::src / dst when not device memory).
enum class HostData : uint32_t {
  kNone = 0,
  kInline,   // source bytes follow in the request
  kBlock,    // source bytes are in a staged block (kStage): its offset follows
  kReturn,   // destination: the node writes into a block it makes and returns the offset
};

// Plain data of the Node interface, written and read the same way on both sides.
void put(wire::Writer& w, const AllocationProps& p);
void get(wire::Reader& r, AllocationProps* p);
void put(wire::Writer& w, const PointerInfo& p);
void get(wire::Reader& r, PointerInfo* p);
void put(wire::Writer& w, const NodeStats& s);
void get(wire::Reader& r, NodeStats* s);
void put(wire::Writer& w, const MulticastProps& p);
void get(wire::Reader& r, MulticastProps* p);
// A device operation but its host pointers (which the transport replaces).
void put(wire::Writer& w, const DeviceOp& op);
void get(wire::Reader& r, DeviceOp* op);
// A request's admission, as every answer starts (kAdmissionBytes).
void put(wire::Writer& w, const Admission& a);
void get(wire::Reader& r, Admission* a);
void put(wire::Writer& w, const std::vector<FaultRule>& rules);
void get(wire::Reader& r, std::vector<FaultRule>* rules);
void put(wire::Writer& w, const std::vector<FaultRuleCounts>& counts);
void get(wire::Reader& r, std::vector<FaultRuleCounts>* counts);

}  // namespace mcsim::fabric::channel
