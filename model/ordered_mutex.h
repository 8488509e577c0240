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
#include <vector>
#endif

namespace mcsim {

// The ranks, lowest (taken first) to highest. Gaps leave room for locks to come.
enum class LockRank : int {
  kDriverPools = 20,     // driver/pool.cpp: memory pools (held across node calls)
  kDriverMemory = 30,    // driver/memory.cpp: cuMemAlloc owners, pinned host memory (held across node calls)
  kDriverStreams = 40,   // driver/stream.cpp: streams and events (held across node submits and polls)
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
    held().push_back(rank_);
  }
  bool try_lock() {
    // A try_lock cannot deadlock, so it may take any rank; it is recorded all the same, so that
    // what is taken under it is checked.
    if (!mu_.try_lock()) return false;
    held().push_back(rank_);
    return true;
  }
  void unlock() {
    auto& h = held();
    // Locks may be released out of order (a unique_lock handed on): forget the last of this rank.
    for (auto it = h.rbegin(); it != h.rend(); ++it) {
      if (*it == rank_) {
        h.erase(std::next(it).base());
        break;
      }
    }
    mu_.unlock();
  }

 private:
  static std::vector<LockRank>& held() {
    static thread_local std::vector<LockRank> ranks;
    return ranks;
  }
  void check() const {
    for (LockRank r : held()) {
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
