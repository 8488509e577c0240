// How the executor reaches global memory: an abstract interface, resolved at access time.
//
// The executor owns the memory that belongs to a block or thread (shared, local, param) and to
// the module (its .global and .const variables); everything else a kernel addresses is global
// memory, reached through GlobalMemory. An implementation resolves a virtual address when the
// access happens (not when the launch is submitted) into a window of host bytes: the node
// implements it over its AddressSpace (mapping -> allocation) and the allocation's LazyRegion,
// checking the device's access rights; FlatMemory below is a self-contained one over a few host
// buffers, for programs and tests that run kernels without a node.
//
// The executor resolves at most once per address window per warp instruction and never keeps a
// window past the instruction, so a mapping that changes between two instructions is seen.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace mcsim::ptx {

enum class AccessKind : uint8_t { kRead, kWrite, kAtomic };

// Contiguous host bytes standing for [va, va + size) of the simulated address space.
struct MemoryWindow {
  uint64_t va = 0;
  uint64_t size = 0;
  uint8_t* host = nullptr;
  // Bytes the memory may take back once the warp's turn ends (host memory the program registered
  // and may unregister): the executor keeps no pointer to them past the turn, so a warp that
  // spins on them is not parked (it watches no words there) and re-reads them each turn.
  bool turnOnly = false;
};

// What a run of accesses through one window moved: the bytes the lanes asked for, and the 32-byte
// sectors they touched, each counted once however many lanes of the instruction shared it (the
// GPU's memory system moves whole sectors: a warp reading 32 consecutive words moves 4 sectors,
// one reading a word from each of 32 lines moves 32, the coalescing rules of NVIDIA's CUDA C++
// Best Practices Guide, "Coalesced Access to Global Memory"); [low, high) is the address range
// they spanned.
struct AccessRun {
  uint64_t bytes = 0;
  uint64_t sectorBytes = 0;
  uint64_t low = 0, high = 0;
};

enum class MemoryError : uint8_t {
  kNone,
  kUnmapped,      // no mapping at the address (CUDA_ERROR_ILLEGAL_ADDRESS)
  kNoAccess,      // mapped, but the device may not access it this way (also ILLEGAL_ADDRESS)
  kMulticast,     // a plain access to a multicast mapping (a plain store there is multimem.st's: the executor's)
  kNotMulticast,  // a multimem access to memory that is not a multicast mapping
  kUnbound,       // a multimem access where some member device has no memory bound (yet)
  kLinkDown,      // the memory is behind an NVLink path that is down (CUDA_ERROR_NVLINK_UNCORRECTABLE)
  kHostUnreachable,  // host memory the program registered, which this node's kernels cannot reach (ILLEGAL_ADDRESS)
};
const char* memoryErrorText(MemoryError e);

// A multimem access (PTX ISA 9.7.9.14): the multicast address range [va, va + size) stands, on
// each member device of the multicast object, for that device's bound memory at the same offset.
// `members[i]` are the host bytes standing for `va` on member i, members in ascending device
// ordinal (`devices[i]`), the order in which multimem.ld_reduce combines them and multimem.red
// updates them.
struct MulticastWindow {
  uint64_t va = 0;
  uint64_t size = 0;
  std::vector<uint8_t*> members;
  std::vector<int> devices;
  uint64_t object = 0;  // which multicast object, for the implementation (accessedMulticast) ...
  uint64_t offset = 0;  // ... and where `va` is in it
};

// What a multimem access did, for a memory that times it: read and reduced every member's value
// (ld_reduce), wrote every member (st), or updated every member (red).
enum class MultimemKind : uint8_t { kLoadReduce, kStore, kReduce };

class GlobalMemory {
 public:
  virtual ~GlobalMemory() = default;
  // The window holding `va`, valid for an access of `kind` by `device`, resolved now. A window
  // may be smaller than the mapping (an implementation may cut it at any boundary); the
  // executor asks again for bytes past its end.
  virtual MemoryError resolve(uint64_t va, AccessKind kind, int device, MemoryWindow* out) = 0;
  // After accesses through a window `resolve` gave (one warp instruction's lanes, or fewer):
  // what they moved through it, for a memory that times or counts traffic (AccessRun).
  virtual void accessed(const MemoryWindow& window, AccessKind kind, const AccessRun& run) {
    (void)window;
    (void)kind;
    (void)run;
  }
  // A store of `n` bytes at `p`, in a window `resolve` gave, that is a release (Instruction::release)
  // or made while the memory holds stores back (holding): a memory that times visibility may take
  // the bytes and write them itself once the writes before them have landed (answering true), as
  // it does for a release and for a later store to a word a held store is to (so that the later
  // value stays); the executor then leaves them out. The default writes them at once (false: the
  // executor does).
  virtual bool deferRelease(const MemoryWindow& window, uint8_t* p, const uint8_t* bytes, unsigned n, bool release) {
    (void)window;
    (void)p;
    (void)bytes;
    (void)n;
    (void)release;
    return false;
  }
  // Whether stores are held back now (deferRelease): the executor then offers it every store.
  virtual bool holding() const { return false; }
  // A fence at .gpu or .sys scope (`system`) by a warp that has written global memory since its
  // last such fence: a memory that times fences answers a ticket (not 0), and the warp waits
  // until fenceDone(ticket) says the fence has completed; 0 (the default): it costs nothing.
  virtual uint64_t fence(bool system) {
    (void)system;
    return 0;
  }
  virtual bool fenceDone(uint64_t ticket) {
    (void)ticket;
    return true;
  }
  // A warp's turn has ended, every access of it told (accessed). `polling`: the turn only re-read
  // a few words, changed nothing, and the warp was parked as spinning on them
  // (LaunchResult::pollingInstructions); a memory that times traffic may leave its reads out.
  virtual void turnEnded(bool polling) { (void)polling; }
  // The members behind the multicast address `va`, for a multimem access of `kind` by `device`,
  // resolved now (as resolve). A memory without multicast mappings answers kNotMulticast.
  virtual MemoryError resolveMulticast(uint64_t va, AccessKind kind, int device, MulticastWindow* out) {
    (void)va;
    (void)kind;
    (void)device;
    (void)out;
    return MemoryError::kNotMulticast;
  }
  // After multimem accesses through a window `resolveMulticast` gave: `bytes` of the multicast
  // range (per member, summed over lanes) were accessed this way, the lowest at window.va.
  virtual void accessedMulticast(const MulticastWindow& window, MultimemKind kind, uint64_t bytes) {
    (void)window;
    (void)kind;
    (void)bytes;
  }
};

// Global memory made of host buffers placed at chosen virtual addresses; every device may read
// and write all of it. Multicast ranges (allocateMulticast) stand for several of its buffers at
// once, for kernels that use multimem without a node.
class FlatMemory : public GlobalMemory {
 public:
  // Places `size` zeroed bytes at the lowest free address >= `base` aligned to 256; returns it.
  uint64_t allocate(uint64_t size);
  uint8_t* host(uint64_t va);  // nullptr when unmapped
  MemoryError resolve(uint64_t va, AccessKind kind, int device, MemoryWindow* out) override;
  // A multicast range of `size` bytes whose member i (device ordinal i) is the memory at
  // `members[i]` (buffers of allocate, each with `size` bytes from there); a member given as 0 has
  // no memory bound, and a multimem access to the range then fails (kUnbound). Returns its address.
  uint64_t allocateMulticast(const std::vector<uint64_t>& members, uint64_t size);
  MemoryError resolveMulticast(uint64_t va, AccessKind kind, int device, MulticastWindow* out) override;

 private:
  static constexpr uint64_t kBase = 0x7f0000000000ull;
  static constexpr uint64_t kMulticastBase = 0x7e0000000000ull;
  std::map<uint64_t, std::vector<uint8_t>> buffers_;  // keyed by va
  uint64_t next_ = kBase;
  struct Multicast {
    uint64_t size = 0;
    std::vector<uint64_t> members;
  };
  std::map<uint64_t, Multicast> multicast_;  // keyed by va
  uint64_t nextMulticast_ = kMulticastBase;
};

}  // namespace mcsim::ptx
