// A mutex with a place in the lock order (docs/architecture.md, "Locks and their order").
//
// Every mutex that is held while another is taken has a rank, and a thread takes locks in
// increasing rank only: a thread holding the node's lock may take the engine's, never the other
// way round. Builds with assertions (no NDEBUG: Debug and the sanitizer build) check it on every
// lock: each thread keeps the ranks it holds, and taking a lock whose rank is not above the
// highest one held aborts with both locks named. Builds without assertions compile an
// OrderedMutex to a plain std::mutex (OrderedLock and OrderedCondition to std::unique_lock and
// std::condition_variable), so the order costs the per-call path nothing.
#pragma once

#include <condition_variable>
#include <mutex>

#ifndef NDEBUG
#include <cstdio>
#include <cstdlib>
#endif

namespace mcsim {

// The ranks, lowest (taken first) to highest. Gaps leave room for locks to come.
enum class LockRank : int {
  kDriverPools = 20,     // driver/pool.cpp: memory pools (held across node calls)
  kDriverGraphs = 25,    // driver/graph.cpp: graphs, graph execs, stream capture (no node call under it)
  kDriverMemory = 30,    // driver/memory.cpp: cuMemAlloc owners, pinned host memory (held across node calls)
  kDriverSubmission = 35,  // driver/context.h: a context's submission order (held across node submits)
  kDriverStreams = 40,   // driver/stream.cpp: streams and events (no node call under it)
  kNode = 60,            // fabric/node_host.cpp: the node (every service of it), admission, team waits
  kNodeModelWaiting = 80,  // fabric/node_model.h: kernels waiting at signal words
};

#ifndef NDEBUG

class OrderedMutex {
 public:
  constexpr explicit OrderedMutex(LockRank rank) : rank_(rank) {}
  OrderedMutex(const OrderedMutex&) = delete;
  OrderedMutex& operator=(const OrderedMutex&) = delete;

  void lock() {
    check();
    mu_.lock();
    record();
  }
  bool try_lock() {
    // A try_lock cannot deadlock, so it may take any rank; it is recorded all the same, so that
    // what is taken under it is checked.
    if (!mu_.try_lock()) return false;
    record();
    return true;
  }
  void unlock() {
    Held& h = held();
    // Locks may be released out of order (a unique_lock handed on): forget the last of this rank.
    for (int i = h.count - 1; i >= 0; --i) {
      if (h.ranks[i] == rank_) {
        for (int j = i; j + 1 < h.count; ++j) h.ranks[j] = h.ranks[j + 1];
        --h.count;
        break;
      }
    }
    mu_.unlock();
  }

 private:
  // The ranks the thread holds. Trivially destructible, so that it is still there for locks taken
  // at exit (a node destroyed with the statics), after the thread's other thread_locals are gone.
  static constexpr int kMaxHeld = 16;
  struct Held {
    LockRank ranks[kMaxHeld];
    int count;
  };
  static Held& held() {
    static thread_local Held h{};
    return h;
  }
  void record() {
    Held& h = held();
    if (h.count == kMaxHeld) {
      std::fprintf(stderr, "mcsim: more than %d ordered locks held by one thread\n", kMaxHeld);
      std::abort();
    }
    h.ranks[h.count++] = rank_;
  }
  void check() const {
    const Held& h = held();
    for (int i = 0; i < h.count; ++i) {
      const LockRank r = h.ranks[i];
      if (r >= rank_) {
        std::fprintf(stderr, "mcsim: lock order violated: taking a lock of rank %d while holding one of rank %d "
                             "(docs/architecture.md, \"Locks and their order\")\n",
                     static_cast<int>(rank_), static_cast<int>(r));
        std::abort();
      }
    }
  }

  std::mutex mu_;
  LockRank rank_;
};
using OrderedLock = std::unique_lock<OrderedMutex>;
// Waits release and retake the lock through OrderedMutex, which keeps the held ranks true.
using OrderedCondition = std::condition_variable_any;

#else

class OrderedMutex : public std::mutex {
 public:
  constexpr explicit OrderedMutex(LockRank) {}
};
using OrderedLock = std::unique_lock<std::mutex>;
using OrderedCondition = std::condition_variable;

#endif

}  // namespace mcsim
