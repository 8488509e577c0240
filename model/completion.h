// The completion of one piece of simulated work (a copy, a memset, an event's record point).
//
// Host threads hold these and ask whether the work is done or wait for it (through the engine);
// the simulation thread completes them. The SystemC event that simulation processes wait on is
// made on the simulation thread the first time a process needs it, and deleted there when the
// work completes (the kernel's event lists are not thread-safe), so a Completion can be made and
// dropped on any thread, and holds nothing of its engine's once done. (A process waiting for it
// holds it until then; a completion with an event is dropped undone only when its engine ended
// with that process still waiting, and the event then stays with the context SystemC leaves.)
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace sc_core {
class sc_event;
}

namespace mcsim::model {

// Why device work failed: a kernel that faulted on the device (docs/ptx.md). The work's
// completion carries it, and so does the completion of all work that followed it (a faulted
// context runs nothing more), so that whoever waits for any of them learns of it.
struct WorkFault {
  // kAssert: a device assert failed; its message starts with the runtime's assert lines.
  // kNvlink: an access crossed an NVLink path that is down (fault plan): an uncorrectable NVLink
  // error. (Appended last: shared nodes send the kind by its number.)
  // kIllegalInstruction: the GPU refused an instruction as it ran (CUDA_ERROR_ILLEGAL_INSTRUCTION).
  enum class Kind : uint8_t { kNone, kIllegalAddress, kMisalignedAddress, kLaunchFailed, kTimeout, kAssert, kNvlink, kIllegalInstruction };
  Kind kind = Kind::kNone;
  std::string message;  // what, where: the kernel, block, thread, instruction, address
  // Whether the driver has printed the message (once per fault, whoever waits first).
  mutable std::atomic<bool> reported{false};
};

class Completion {
 public:
  Completion() = default;
  Completion(const Completion&) = delete;
  Completion& operator=(const Completion&) = delete;

  bool done() const { return done_.load(std::memory_order_acquire); }
  // Simulated time at which the work completed (valid once done()).
  uint64_t donePs() const { return donePs_.load(std::memory_order_acquire); }

  // Simulation thread only: waits (in the calling SystemC thread process) until done.
  void waitDone();
  // Simulation thread only: runs `fn` on the simulation thread when the work completes (now if it
  // has). Work that follows other work waits so, holding no simulation process until it can run.
  void whenDone(std::function<void()> fn);
  // Simulation thread only: marks the work done at the current simulated time and wakes the
  // processes and host threads waiting for it.
  void complete();
  // Marks the work done at simulated time `ps` without the simulation: for a completion that
  // stands for work of another process's engine (a shared node's client learns there that it
  // finished). Nothing may wait for it in this process's simulation.
  void settle(uint64_t ps) {
    donePs_.store(ps, std::memory_order_release);
    done_.store(true, std::memory_order_release);
  }

  // The fault of the work or of work it followed; nullptr when none. Set before the completion is
  // done (setFault), read once it is (done()'s acquire orders it).
  const std::shared_ptr<const WorkFault>& fault() const { return fault_; }
  void setFault(std::shared_ptr<const WorkFault> f) { fault_ = std::move(f); }
  // What the work's device printf calls wrote (nullptr: nothing); set before it is done.
  const std::shared_ptr<const std::string>& output() const { return output_; }
  void setOutput(std::shared_ptr<const std::string> o) { output_ = std::move(o); }

  // Host threads waiting for this completion (the engine pauses the simulation when an awaited
  // completion is reached, so that simulated time runs no further than a waiter needs).
  std::atomic<int> awaited{0};

 private:
  std::atomic<bool> done_{false};
  std::atomic<uint64_t> donePs_{0};
  sc_core::sc_event* event_ = nullptr;  // simulation thread only
  std::shared_ptr<const WorkFault> fault_;
  std::shared_ptr<const std::string> output_;
  std::vector<std::function<void()>> whenDone_;  // simulation thread only
};

using CompletionPtr = std::shared_ptr<Completion>;

}  // namespace mcsim::model
