// The engine: owns the SystemC kernel, which runs on a thread of its own, and simulated time.
//
// Host threads (the application's) hand work to the simulation thread in two ways:
//   post(fn)   fn runs on the simulation thread, inside a SystemC process, at the current
//              simulated time; the caller does not wait. Posted work runs in the order it was
//              posted (callers post under the node's lock, so that order is the node's admission
//              order), all of it taken in together when a host thread next waits (not as it is
//              posted: how far the simulation thread got meanwhile would follow wall time). fn
//              typically spawns a simulation process (spawn()) for a copy or a memset.
//   wait(c)    the caller blocks until completion `c` is done. Simulated time advances only while
//              some host thread waits, and only as far as the completion it waits for: the
//              simulation pauses when an awaited completion is reached.
// So the host side of a program takes no simulated time between its waits, wall-clock time never
// changes a result or a timestamp, and a single-threaded program gets the same timestamps on
// every run. (With several host threads, which thread's wait advances time first follows their
// interleaving; the timestamps then follow it too.)
//
// A shared node serves several processes' threads and must be replayable, so it pins each request
// to the passes of the simulation thread's loop ("runs": each takes the work posted since the last
// in, then lets time run while a waiter needs it). A request is pinned (pin()) when it is taken in,
// at the number of runs started by then: no further run starts until it is released. Work it posts
// goes into the next run's intake, at once; what it reads (the clock, whether work is done) and
// the waits it begins wait for the run in progress, if any, to end. So each request acts on the
// simulation at a point its pin names, however the threads interleave: the state after a run
// follows from the work posted and the waits begun before. A replay pins each request at its
// recorded count and starts no run past the next request's count (limitRuns), and so reads and
// posts at the same simulated points as the recording.
//
// Each node owns an engine, and an engine owns a SystemC simulation context (sc_simcontext) of its
// own, with its own simulated time: two nodes in one process have independent clocks, each the
// same as it would be alone. SystemC keeps some state process-wide all the same: the current
// context is a global (sc_curr_simcontext, which every SystemC call consults), and its coroutine
// package keeps the coroutine that a simulation returns to in a file static. So an engine's
// simulation thread does all of its SystemC work, from making its context up to tearing it down,
// holding one process-wide lock (the SystemC lock) with its context made current, and restores
// the previous context when it lets go: the engines of one process take turns, a pass of one
// simulation loop at a time, and each pass starts and ends on its thread's own stack, which is
// all SystemC's coroutines need. Host threads never touch SystemC, so they never take that lock;
// a lone engine takes it uncontended, once per pass. The engine starts its thread and context on
// first use (a node that never simulates costs neither); destroying it ends its simulation and
// frees the context, except what SystemC itself cannot free (a thread process that still waits,
// such as a kernel at a barrier no GPU will join, stays allocated).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "model/completion.h"

namespace mcsim::model {

struct EngineStats {
  uint64_t processes = 0;    // pieces of simulated work started (spawn) and timers set (run, advance)
  uint64_t activations = 0;  // their timed waits (the events the kernel scheduled)
  uint64_t nowPs = 0;
};

class Engine {
 public:
  // A unit of timed work for run(): executes on the simulation thread and returns the simulated
  // duration (picoseconds) that it occupies.
  using Work = std::function<uint64_t()>;

  // An engine at simulated time 0. Its simulation thread and SystemC context start on first use
  // (post() or wait()).
  Engine();
  // Ends the simulation and frees its context (see the top). No host thread may be using the
  // engine any more; an engine already parked at process exit is left as it is.
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // The engine whose simulation thread calls; nullptr on any other thread.
  static Engine* current();
  // Whether the simulation has started (it has never simulated anything if not).
  bool started() const { return started_.load(std::memory_order_acquire); }

  void post(std::function<void()> fn);
  // Returns the simulated time at which `c` completed, or kGaveUp when the wait was given up: the
  // simulation had nothing left to do while `c` was not done (device work waiting for something
  // that never comes, such as a kernel barrier a GPU never joins), and either every application
  // thread was waiting so (a deadlock) or it stayed so for the stall policy's grace period.
  // A wait is also given up, without a report, once `*cancelled` is set and wakeWaiters() called
  // (a shared node's process died while its call waited).
  static constexpr uint64_t kGaveUp = UINT64_MAX;
  uint64_t wait(const CompletionPtr& c, const std::atomic<bool>* cancelled = nullptr);
  // Wakes the threads in wait(), so that one whose `cancelled` was set returns now.
  void wakeWaiters();

  // What wait() does when it gives up: `describe` says what the stuck work waits for (called on
  // a host thread while the simulation is idle); after the report, abort or return kGaveUp.
  struct StallPolicy {
    double graceSeconds = 10.0;
    bool abortOnHang = false;
    std::function<std::string()> describe;
  };
  void setStallPolicy(StallPolicy policy);
  // The report of the last wait this thread gave up, taken (empty if none since the last take): a
  // shared node's serving thread sends it to the process whose call it fails.
  static std::string takeHangReport();

  // Simulation thread: whether every piece of device work in flight can do nothing but spin (or
  // wait) until memory changes, so that only a host thread's new work could end it (the node's
  // model says: fabric/node_model.h). While it stays so for a whole run, the simulation is not
  // stalled (a kernel that spins without being parked keeps simulated time going) but makes no
  // progress: wait() gives such a run of runs up after the stall policy's grace period, as a
  // suspected hang (docs/reliability.md, "Kernels that spin for ever").
  void noteSpinOnly(bool only);

  // Threads of this process that are the application's (all of them but mcsim's own).
  static int applicationThreads();
  // Lets simulated time run for `ps` picoseconds from now, or until `until` completes if that is
  // sooner (a host thread polling a stream or an event). Returns the simulated time reached.
  uint64_t advance(uint64_t ps, const CompletionPtr& until = nullptr);
  // Runs `work` on the simulation thread, then waits out the duration it returns.
  uint64_t run(Work work);
  uint64_t nowPs();
  EngineStats stats();

  // ---- Pinning requests to runs (a shared node's requests; see the top) ----
  // Pins the calling thread at `runs` runs started (kRunsNow: the runs started so far): no run
  // past that count starts until the thread is released. Returns the pin; pinning again keeps the
  // first. A thread holds one pin at a time, on one engine (a shared node's request thread serves
  // one node). Once pinned, the thread's post() waits until run `runs` has started (at once, unless
  // replaying), and its nowPs(), wait(), advance() and settle() until run `runs` has ended, so that
  // it posts into run `runs` + 1 and reads the state after run `runs`. Those waits end early when
  // the count can never be reached (no run could start: nothing to do, or the limit).
  static constexpr uint64_t kRunsNow = UINT64_MAX;
  uint64_t pin(uint64_t runs = kRunsNow);
  // Pinned: waits until the run the thread is pinned at has ended (see pin). Not pinned: nothing.
  void settle();
  // Releases the calling thread's pin, on whichever engine it is; nothing when it has none.
  // wait(), advance() and run() release it once their waiter is in place, so that the work they
  // wait for can run.
  static void release();
  // No more than `runs` runs start until the limit is raised (UINT64_MAX: no limit): a replaying
  // node keeps the simulation from starting a run the next request is to post into.
  void limitRuns(uint64_t runs);

  // Simulation thread only: runs `body` in a simulation thread process of the engine's pool. A
  // process that finished its work serves the next, so a queue of any length costs no process
  // (and no coroutine stack) per item; at most kMaxWorkers run at once, and further work waits
  // its turn in the order it was spawned.
  void spawn(std::function<void()> body);
  // Simulation thread only: spawn(body) once every completion in `after` is done (at once if they
  // are). Until then the work holds no process.
  void spawnAfter(const std::vector<CompletionPtr>& after, std::function<void()> body);
  // The most simulation processes an engine runs at once (each has a coroutine stack of its own:
  // two mappings of the process's vm.max_map_count). A real GPU runs at most 128 kernels at once.
  static constexpr size_t kMaxWorkers = 1024;
  // Simulation thread only, inside a process: waits until simulated time `ps` (no-op if past).
  void waitUntil(uint64_t ps);
  // Simulation thread only: the current simulated time (of the engine whose thread calls).
  static uint64_t simNowPs();

  // Threads mcsim itself runs in this process (every started engine's simulation thread), which
  // deadlock detection must not count as the application's.
  static int internalThreads();

  // Called by Completion::complete() on the simulation thread: pause if a host thread waits.
  static void reached(Completion& c);
  // An event of this engine's simulation that its owner no longer needs, from any thread: deleted
  // on the simulation thread (at once when called there), since the kernel's event lists are not
  // thread-safe.
  void retire(sc_core::sc_event* ev);

 private:
  struct Core;
  class SystemC;
  // Starts the simulation thread, once.
  void start();
  void threadMain();
  // The simulation thread's loop: returns when the thread is to stop.
  void simulate();
  void deleteRetired();
  // Simulation thread, holding the SystemC lock: lets the loop process end and frees the context.
  void endSimulation();

  std::mutex mu_;
  std::condition_variable cv_;      // the simulation thread waits here for work
  std::condition_variable doneCv_;  // host threads wait here for their completions
  // Work posted since the last run (a vector the simulation thread swaps with its emptied batch,
  // so that posting allocates nothing once both have grown).
  std::vector<std::function<void()>> posted_;
  std::vector<sc_core::sc_event*> retired_;
  // What each host thread inside wait()/advance() waits for (either completion will do). The
  // simulation runs only while one of them has nothing done yet: a satisfied waiter that has not
  // yet woken up must not let simulated time run on.
  struct Waiter {
    const Completion* a;
    const Completion* b;
    bool satisfied() const { return a->done() || (b != nullptr && b->done()); }
  };
  std::vector<const Waiter*> waiters_;
  bool needsRun() const;
  // Something to do: work posted, or a waiter to let time run for (unless the simulation stalled).
  bool hasWork() const;
  // Under mu_: whether a run may start, with pins up to `pinnedAt` (no run past it), the limit,
  // and something to do.
  bool mayStartRun(uint64_t pinnedAt) const;
  void removeWaiter(const Waiter* w);
  // Under mu_: releases the calling thread's pin, if it has one (release() takes the lock).
  void releaseLocked();
  // Under mu_, pinned at `at`: whether runs could still start towards it (other threads' lower
  // pins are passing; work is waiting and the limit allows).
  bool canStartTowards(uint64_t at) const;
  // Under mu_: waits until `reached` holds or no run can start towards the thread's pin.
  void waitForPin(std::unique_lock<std::mutex>& lock, const std::function<bool()>& reached);
  // Under mu_: settle().
  void settleLocked(std::unique_lock<std::mutex>& lock);
  uint64_t runsStarted_ = 0;           // passes of the simulation thread's loop begun
  uint64_t runs_ = 0;                  // ... and ended (runsStarted_ or one less)
  uint64_t runLimit_ = UINT64_MAX;     // limitRuns
  std::multiset<uint64_t> pins_;       // the pins of pinned threads: no run starts past the lowest
  uint64_t unpinnedPosts_ = 0;         // posts of unpinned threads since the last intake
  bool stalled_ = false; // the simulation ran out of activity with waiters left
  bool spinStalled_ = false;  // ... or had only spinning work, for the whole of its last run
  bool spinOnly_ = false;     // simulation thread: noteSpinOnly's latest
  bool spinBroken_ = false;   // simulation thread: noteSpinOnly(false) came during this run
  std::string lastReport_;    // the last hang report (takeHangReport)
  uint64_t stallEpisode_ = 0;     // counts the times the simulation stalled
  uint64_t gaveUpEpisode_ = 0;    // the stall whose waiters were given up (0: none)
  StallPolicy stallPolicy_;
  // Under mu_: whether `c`'s waiter should give up now; reports once per stall.
  // `spinning`: the waiters wait for work that only spins (spinStalled_): no deadlock is called,
  // since a spin may end by itself (a loop that gives up after some tries), only the grace period.
  bool giveUp(std::chrono::steady_clock::time_point stalledSince, bool spinning);
  // The simulation thread is between runs of the kernel: a waiter returns only then, so that the
  // host never acts while simulated time could still move (that would make timestamps depend on
  // thread timing).
  bool simIdle_ = true;
  bool stopping_ = false;  // the simulation thread stops: the process is exiting, or ~Engine
  bool tearDown_ = false;  // ~Engine: the stopping simulation thread frees its context first
  bool threadExited_ = false;  // the simulation thread is done with the engine
  // At exit (for every engine still alive): waits (boundedly) until the simulation thread is
  // between kernel runs, then parks it there, so that nothing runs on a SystemC coroutine stack
  // while the process winds down (the leak checker's stack scan crashes on one).
  void quiesce();
  static void quiesceAll();
  // Posts a timer that completes `c` `duration()` after it is admitted, unless `c` has been
  // dropped by then (a host thread that stopped waiting for it).
  void completeAfter(const CompletionPtr& c, Work duration);
  uint64_t nowPs_ = 0;   // simulated time, published by the simulation thread
  uint64_t processes_ = 0, activations_ = 0;  // simulation thread only, published with nowPs_
  uint64_t publishedProcesses_ = 0, publishedActivations_ = 0;
  std::unique_ptr<Core> core_;  // made and used on the simulation thread
  std::once_flag startOnce_;
  std::atomic<bool> started_{false};
  std::thread thread_;
};

// The threads process `pid` has now (0 if it is gone).
int threadsOfProcess(int pid);

}  // namespace mcsim::model
