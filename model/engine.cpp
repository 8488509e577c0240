#include "model/engine.h"
#include "model/hang_abort.h"
#include "model/thread_owned.h"

#include <dirent.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <utility>
#include <vector>

#define SC_INCLUDE_DYNAMIC_PROCESSES
#include <systemc>

// libsystemc refers to sc_main; mcsim never calls it, since the engine drives sc_start itself
// from its own thread. Defined weak so that a user's SystemC program can still bring its own.
extern "C" __attribute__((weak, visibility("default"))) int sc_main(int, char**) { return 0; }

namespace mcsim::model {

void Completion::waitDone() {
  if (done()) return;
  if (event_ == nullptr) event_ = new sc_core::sc_event();
  while (!done()) sc_core::wait(*event_);
}

void Completion::complete() {
  donePs_.store(Engine::simNowPs(), std::memory_order_release);
  done_.store(true, std::memory_order_release);
  if (event_ != nullptr) {
    // Immediate: the waiters become runnable in this delta, and the event is done with (the
    // kernel keeps no reference to an event once it has triggered its waiters). Deleting it here
    // means a completion never outlives an event of its engine's context.
    event_->notify();
    delete event_;
    event_ = nullptr;
  }
  std::vector<std::function<void()>> then;
  then.swap(whenDone_);
  for (auto& fn : then) fn();
  Engine::reached(*this);
}

void Completion::whenDone(std::function<void()> fn) {
  if (done()) {
    fn();
  } else {
    whenDone_.push_back(std::move(fn));
  }
}

// The SystemC side: the engine's simulation context, and in it one process that runs posted work
// in order, at the current simulated time, inside a process context (so that the work may spawn
// processes and notify events).
//
// Device work runs in a pool of thread processes (spawn): a process that finished a piece of work
// waits for the next instead of ending, since every SystemC thread process has a coroutine stack
// of its own (an mmap with a guard page: two mappings of the process's vm.max_map_count), and a
// process per queued operation let one long queue take the whole process down. Timers (run,
// advance) are no processes at all: one method process completes them as they fall due.
struct Engine::Core {
  sc_core::sc_simcontext* context = nullptr;  // owned; freed by endSimulation
  sc_core::sc_event* admitted = nullptr;      // an event of `context`
  std::deque<std::function<void()>> pending;  // touched only on the simulation thread
  bool ending = false;                        // endSimulation: the loop returns once idle

  // A process of the pool, and the work it is given (empty while idle).
  struct Worker {
    sc_core::sc_event wake;
    std::function<void()> job;
  };
  std::vector<std::unique_ptr<Worker>> workers;  // every process of the pool, idle or not
  std::vector<Worker*> idle;                      // waiting for work, the last to finish last
  std::deque<std::function<void()>> backlog;     // work spawned while kMaxWorkers were busy

  void serve(Worker& w) {
    for (;;) {
      if (!w.job) {
        idle.push_back(&w);
        while (!w.job && !ending) sc_core::wait(w.wake);
        if (!w.job) return;  // endSimulation: ended, so that deleting the context frees it
      }
      std::function<void()> job = std::move(w.job);
      w.job = nullptr;
      job();
      job = nullptr;  // what the work holds goes as it ends, not when the next work comes
      if (!backlog.empty()) {
        w.job = std::move(backlog.front());
        backlog.pop_front();
      }
    }
  }

  // Timers by the time they fall due (equal times in the order they were set). A timer whose
  // completion was dropped (no host thread waits for it any more) is skipped, and swept away
  // when the set has doubled since the last sweep, so that a program polling an idle stream for
  // ever keeps a bounded set.
  std::multimap<uint64_t, std::weak_ptr<Completion>> timers;
  size_t timersAfterSweep = 0;
  sc_core::sc_event* timerDue = nullptr;  // notified for the earliest timer

  void armTimer() {
    if (timers.empty()) return;
    const uint64_t now = Engine::simNowPs();
    const uint64_t at = timers.begin()->first;
    timerDue->notify(sc_core::sc_time(static_cast<double>(at > now ? at - now : 0), sc_core::SC_PS));
  }
  void addTimer(uint64_t at, const CompletionPtr& c) {
    if (timers.size() >= 2 * timersAfterSweep + 64) {
      for (auto it = timers.begin(); it != timers.end();) it = it->second.expired() ? timers.erase(it) : std::next(it);
      timersAfterSweep = timers.size();
    }
    timers.emplace(at, c);
    armTimer();  // (an earlier notification stays: sc_event keeps the earliest)
  }
  // The timer method process, at each timerDue.
  void fireTimers() {
    const uint64_t now = Engine::simNowPs();
    while (!timers.empty() && timers.begin()->first <= now) {
      const CompletionPtr c = timers.begin()->second.lock();
      timers.erase(timers.begin());
      if (c) c->complete();
    }
    armTimer();
  }

  void loop() {
    for (;;) {
      while (pending.empty() && !ending) sc_core::wait(*admitted);
      if (pending.empty()) return;
      while (!pending.empty()) {
        std::function<void()> fn = std::move(pending.front());
        pending.pop_front();
        fn();
      }
    }
  }
};

namespace {

std::atomic<int> gInternalThreads{0};
// The engine whose simulation thread this is (Engine::current).
thread_local Engine* tEngine = nullptr;
// The calling thread's pin (Engine::pin), if it has one: the engine and the run count.
thread_local Engine* tPinEngine = nullptr;
thread_local uint64_t tPinAt = 0;
// The report of the last wait this thread gave up (Engine::takeHangReport): a ThreadOwned string,
// since a wait may be given up in an atexit handler (model/thread_owned.h).
struct HangReportTag;
std::string& threadHangReport() { return threadOwned<std::string, HangReportTag>(); }

// The SystemC lock (see engine.h): held by a simulation thread for all of its SystemC work.
std::mutex& systemcMutex() {
  static std::mutex* mu = new std::mutex();  // leaked: a parked engine may hold it at exit
  return *mu;
}

// The engines started and not yet destroyed, in the order they started: at exit, each is parked.
std::mutex gEnginesMu;
std::vector<Engine*>& liveEngines() {
  static auto* engines = new std::vector<Engine*>();  // leaked: the atexit handler reads it
  return *engines;
}

// A run that no awaited completion pauses (a kernel that spins without being parked, waiting for
// work another process or thread posts meanwhile) would otherwise go on for ever, and the work
// that would release it would never be taken in. So a run also ends at its boundary: the first
// multiple of kRunQuantumPs after the next thing due. Boundaries are points of simulated time, so
// where runs end follows from the simulation alone, and a replay ends its runs at the same points
// (docs/multiprocess.md, "Simulated times replay exactly"). A single-threaded program posts
// nothing while it waits, so the runs a boundary adds take nothing in and change no time of its.
constexpr uint64_t kRunQuantumPs = 1000000;  // 1 us of simulated time
uint64_t runBoundaryPs(uint64_t nextDuePs) { return (nextDuePs / kRunQuantumPs + 1) * kRunQuantumPs; }

}  // namespace

// Holds the SystemC lock with an engine's context made current, and makes the previous context
// current again when it lets go.
class Engine::SystemC {
 public:
  explicit SystemC(sc_core::sc_simcontext* context)
      : lock_(systemcMutex()), previous_(sc_core::sc_curr_simcontext) {
    sc_core::sc_curr_simcontext = context;
  }
  ~SystemC() { sc_core::sc_curr_simcontext = previous_; }
  SystemC(const SystemC&) = delete;
  SystemC& operator=(const SystemC&) = delete;

 private:
  std::lock_guard<std::mutex> lock_;
  sc_core::sc_simcontext* previous_;
};

int Engine::internalThreads() { return gInternalThreads.load(); }

Engine* Engine::current() { return tEngine; }

Engine::Engine() = default;

void Engine::start() {
  std::call_once(startOnce_, [this] {
    static std::once_flag processOnce;
    std::call_once(processOnce, [] {
      // SystemC prints a banner on first use; applications' output must stay theirs alone.
      setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 1);
      std::atexit(&Engine::quiesceAll);
    });
    {
      std::lock_guard<std::mutex> lock(gEnginesMu);
      liveEngines().push_back(this);
    }
    gInternalThreads.fetch_add(1);
    thread_ = std::thread([this] { threadMain(); });
    started_.store(true, std::memory_order_release);
  });
}

Engine::~Engine() {
  {
    std::lock_guard<std::mutex> lock(gEnginesMu);
    auto& live = liveEngines();
    for (size_t i = 0; i < live.size(); ++i) {
      if (live[i] == this) {
        live.erase(live.begin() + static_cast<std::ptrdiff_t>(i));
        break;
      }
    }
  }
  if (!thread_.joinable()) {
    // Never started, or parked by quiesce() at exit: its thread was joined, or left to finish the
    // run it was in, which it does before it touches the engine for the last time.
    if (started()) {
      std::unique_lock<std::mutex> lock(mu_);
      doneCv_.wait(lock, [this] { return threadExited_; });
    }
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    tearDown_ = true;
    cv_.notify_all();
    doneCv_.notify_all();
  }
  thread_.join();
  gInternalThreads.fetch_sub(1);
}

uint64_t Engine::simNowPs() { return static_cast<uint64_t>(sc_core::sc_time_stamp().value()); }

void Engine::spawn(std::function<void()> body) {
  ++processes_;
  Core& core = *core_;
  if (!core.idle.empty()) {
    Core::Worker* w = core.idle.back();
    core.idle.pop_back();
    w->job = std::move(body);
    w->wake.notify();  // runnable in this evaluation phase, as a process spawned now would be
    return;
  }
  if (core.workers.size() >= kMaxWorkers) {
    core.backlog.push_back(std::move(body));
    return;
  }
  core.workers.push_back(std::make_unique<Core::Worker>());
  Core::Worker* w = core.workers.back().get();
  w->job = std::move(body);
  sc_core::sc_spawn([&core, w] { core.serve(*w); }, sc_core::sc_gen_unique_name("worker"));
}

void Engine::spawnAfter(const std::vector<CompletionPtr>& after, std::function<void()> body) {
  struct Gate {
    size_t left = 1;  // one for this call, so that the body is spawned only once all are counted
    std::function<void()> body;
  };
  auto gate = std::make_shared<Gate>();
  gate->body = std::move(body);
  auto open = [this, gate] {
    if (--gate->left == 0) spawn(std::move(gate->body));
  };
  for (const CompletionPtr& c : after) {
    if (c->done()) continue;
    ++gate->left;
    c->whenDone(open);
  }
  open();
}

void Engine::waitUntil(uint64_t ps) {
  const uint64_t now = simNowPs();
  if (ps <= now) return;
  ++activations_;
  sc_core::wait(sc_core::sc_time(static_cast<double>(ps - now), sc_core::SC_PS));
}

void Engine::reached(Completion& c) {
  if (c.awaited.load() > 0) sc_core::sc_pause();  // the running simulation's: the caller's engine's
}

void Engine::retire(sc_core::sc_event* ev) {
  if (tEngine == this) {
    delete ev;
    return;
  }
  std::lock_guard<std::mutex> lock(mu_);
  retired_.push_back(ev);
}

void Engine::deleteRetired() {
  std::vector<sc_core::sc_event*> events;
  {
    std::lock_guard<std::mutex> lock(mu_);
    events.swap(retired_);
  }
  for (sc_core::sc_event* ev : events) delete ev;
}

void Engine::threadMain() {
  tEngine = this;
  simulate();
  // The last touch of the engine: ~Engine of an engine parked at exit waits for it.
  std::lock_guard<std::mutex> lock(mu_);
  threadExited_ = true;
  doneCv_.notify_all();
}

void Engine::simulate() {
  core_ = std::make_unique<Core>();
  Core& core = *core_;
  {
    std::lock_guard<std::mutex> lock(systemcMutex());
    core.context = new sc_core::sc_simcontext();
  }
  {
    SystemC systemc(core.context);
    sc_core::sc_set_time_resolution(1, sc_core::SC_PS);
    // Starting with nothing to do is normal here (a waiter on work that needs a host action).
    sc_core::sc_report_handler::set_actions(sc_core::SC_ID_NO_SC_START_ACTIVITY_, sc_core::SC_DO_NOTHING);
    core.admitted = new sc_core::sc_event();
    core.timerDue = new sc_core::sc_event();
    sc_core::sc_spawn([&core] { core.loop(); }, "mcsim_engine");
    sc_core::sc_spawn_options timerOptions;
    timerOptions.spawn_method();
    timerOptions.dont_initialize();
    timerOptions.set_sensitivity(core.timerDue);
    sc_core::sc_spawn([&core] { core.fireTimers(); }, "mcsim_timers", &timerOptions);
    sc_core::sc_start(sc_core::SC_ZERO_TIME);
  }
  std::vector<std::function<void()>> batch;
  for (;;) {
    batch.clear();  // keeps its capacity for the posts it is swapped in for
    bool run = false;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || mayStartRun(pins_.empty() ? UINT64_MAX : *pins_.begin()); });
      if (stopping_) {
        doneCv_.notify_all();
        if (!tearDown_) return;  // the process is exiting; quiesce() joins this thread
        lock.unlock();
        endSimulation();
        return;
      }
      batch.swap(posted_);
      unpinnedPosts_ = 0;
      if (!batch.empty()) {
        stalled_ = false;
        spinStalled_ = false;
      }
      simIdle_ = false;
      ++runsStarted_;
      doneCv_.notify_all();  // a pinned post may wait for this run to have started
    }
    SystemC systemc(core.context);
    if (!batch.empty()) {
      for (auto& fn : batch) core.pending.push_back(std::move(fn));
      core.admitted->notify(sc_core::SC_ZERO_TIME);
      // Admit at the current time only: run the delta cycles the posted work causes.
      // (sc_start(SC_ZERO_TIME) with nothing due now would move on to the next timed event.)
      const uint64_t at = simNowPs();
      while (sc_core::sc_pending_activity_at_current_time()) sc_core::sc_start(sc_core::SC_ZERO_TIME);
      if (simNowPs() != at) std::fprintf(stderr, "mcsim: internal error: admission moved simulated time\n");
    }
    deleteRetired();
    {
      // Work posted while this batch was being admitted is admitted first: time must not run
      // ahead of work the host queued before it began to wait. (Not a pinned thread's: it is for
      // the next run, whatever moment it came in.)
      std::lock_guard<std::mutex> lock(mu_);
      run = needsRun() && unpinnedPosts_ == 0;
    }
    spinBroken_ = !spinOnly_;
    if (run && sc_core::sc_pending_activity()) {
      // Runs until an awaited completion pauses it, nothing is left to simulate, or time reaches
      // the run's boundary (runBoundaryPs), whichever comes first.
      const uint64_t now = simNowPs();
      const uint64_t next = now + static_cast<uint64_t>(sc_core::sc_time_to_pending_activity().value());
      const uint64_t boundary = runBoundaryPs(next);
      sc_core::sc_start(sc_core::sc_time(static_cast<double>(boundary - now), sc_core::SC_PS),
                        sc_core::SC_EXIT_ON_STARVATION);
    }
    const bool activityLeft = sc_core::sc_pending_activity();
    // Only spinning work from this run's start to its end (noteSpinOnly): nothing but new work
    // from a host thread can change that.
    const bool onlySpun = run && activityLeft && spinOnly_ && !spinBroken_;
    std::lock_guard<std::mutex> lock(mu_);
    if (run && !activityLeft && !stalled_) {
      stalled_ = true;
      ++stallEpisode_;
    }
    if (onlySpun && !spinStalled_) {
      spinStalled_ = true;
      ++stallEpisode_;
    } else if (run && !onlySpun) {
      spinStalled_ = false;
    }
    simIdle_ = true;
    ++runs_;
    nowPs_ = simNowPs();
    publishedProcesses_ = processes_;
    publishedActivations_ = activations_;
    doneCv_.notify_all();
  }
}

// A run that no awaited completion pauses (a kernel that spins without being parked, waiting for
// work another process or thread posts meanwhile) would otherwise go on for ever, and the work
// that would release it would never be taken in: so a run also ends at the first multiple of
// kRunQuantumPs after the next thing due. The boundaries are points of simulated time, so where
// runs end follows from the simulation alone, and a replay ends its runs at the same points. A
// run ends there only when it has not paused before; a single-threaded program posts nothing
// while it waits, so the runs a boundary adds take nothing in, and its times do not change.
void Engine::endSimulation() {
  Core& core = *core_;
  {
    SystemC systemc(core.context);
    // The loop process sees `ending` and returns (deltas at the current time only: whatever
    // else is scheduled later is not run), so that deleting the context collects it.
    // So do the pool's idle processes; busy ones wait for something that never comes.
    core.ending = true;
    core.admitted->notify(sc_core::SC_ZERO_TIME);
    for (Core::Worker* w : core.idle) w->wake.notify(sc_core::SC_ZERO_TIME);
    while (sc_core::sc_pending_activity_at_current_time()) sc_core::sc_start(sc_core::SC_ZERO_TIME);
    deleteRetired();
    core.timers.clear();
    core.workers.clear();
    delete core.timerDue;
    delete core.admitted;
    // Frees ended processes with the rest. SystemC cannot free a thread process that still waits
    // (device work that never finished); it stays allocated, and so does what it holds.
    delete core.context;
  }
  core_.reset();
}

void Engine::quiesceAll() {
  std::lock_guard<std::mutex> lock(gEnginesMu);
  for (Engine* e : liveEngines()) e->quiesce();
}

void Engine::quiesce() {
  bool idle = false;
  {
    std::unique_lock<std::mutex> lock(mu_);
    stopping_ = true;
    cv_.notify_all();
    doneCv_.notify_all();
    idle = doneCv_.wait_for(lock, std::chrono::seconds(2), [this] { return simIdle_; });
  }
  if (!thread_.joinable() || thread_.get_id() == std::this_thread::get_id()) return;
  // Joined, so that the thread is gone before the process exits: LeakSanitizer's exit-time scan
  // crashed about one run in a hundred on a simulation thread still tearing itself down. A
  // parked thread is no better: SystemC's coroutine switches leave ASan holding a released
  // coroutine stack as the thread's stack. A simulation still busy after the grace period
  // (another thread called exit() mid-run) is left to the process exit.
  if (idle) {
    thread_.join();
  } else {
    thread_.detach();
  }
}

void Engine::post(std::function<void()> fn) {
  start();
  std::unique_lock<std::mutex> lock(mu_);
  if (tPinEngine == this) {
    // Into the intake of run tPinAt + 1: run tPinAt must have started (a replay's may not yet).
    waitForPin(lock, [this] { return runsStarted_ >= tPinAt; });
  } else {
    ++unpinnedPosts_;
  }
  posted_.push_back(std::move(fn));
  // The simulation thread takes posted work in only for a host thread that waits (hasWork): with
  // none waiting, waking it would only make it take the lock and sleep again, on every call.
  if (needsRun()) cv_.notify_all();
}

// Posted work is taken in when a host thread next needs the simulation (a wait, a poll, a clock
// advance), not as soon as it is posted: taken in at once, a batch held whatever the host had
// posted by the moment the simulation thread woke, and work of one batch runs its zero-time steps
// (a kernel's first slice) before the next batch exists, so wall time decided the order of
// simulated events (runtime.ptx_spin.host_pause). Taken in at a wait, everything posted since the
// last run is one batch, in the order posted.
bool Engine::hasWork() const { return needsRun() && (!posted_.empty() || !stalled_); }

bool Engine::mayStartRun(uint64_t pinnedAt) const {
  return runsStarted_ < pinnedAt && runsStarted_ < runLimit_ && hasWork();
}

uint64_t Engine::pin(uint64_t runs) {
  std::lock_guard<std::mutex> lock(mu_);
  if (tPinEngine != nullptr) return tPinAt;
  tPinAt = runs == kRunsNow ? runsStarted_ : runs;
  tPinEngine = this;
  pins_.insert(tPinAt);
  return tPinAt;
}

bool Engine::canStartTowards(uint64_t at) const {
  // A lower pin is another thread's, passing through (its post or read comes first); it is
  // released without anything of this thread's.
  if (!pins_.empty() && *pins_.begin() < at && runsStarted_ >= *pins_.begin()) return true;
  return mayStartRun(at);
}

void Engine::waitForPin(std::unique_lock<std::mutex>& lock, const std::function<bool()>& reached) {
  while (!stopping_ && !reached()) {
    // A run in progress ends by itself; a run to come starts only if something can start it.
    if (simIdle_ && !canStartTowards(tPinAt)) return;
    doneCv_.wait(lock);
  }
}

void Engine::settleLocked(std::unique_lock<std::mutex>& lock) {
  if (tPinEngine == this) waitForPin(lock, [this] { return simIdle_ && runs_ >= tPinAt; });
}

void Engine::settle() {
  if (tPinEngine != this) return;
  std::unique_lock<std::mutex> lock(mu_);
  settleLocked(lock);
}

void Engine::releaseLocked() {
  if (tPinEngine != this) return;
  tPinEngine = nullptr;
  pins_.erase(pins_.find(tPinAt));
  cv_.notify_all();
  doneCv_.notify_all();
}

void Engine::release() {
  if (tPinEngine == nullptr) return;  // (the embedded node's threads are never pinned: no lock taken for them)
  Engine& e = *tPinEngine;
  std::lock_guard<std::mutex> lock(e.mu_);
  e.releaseLocked();
}

void Engine::limitRuns(uint64_t runs) {
  std::lock_guard<std::mutex> lock(mu_);
  runLimit_ = runs;
  cv_.notify_all();
  doneCv_.notify_all();
}

bool Engine::needsRun() const {
  for (const Waiter* w : waiters_) {
    if (!w->satisfied()) return true;
  }
  return false;
}

void Engine::removeWaiter(const Waiter* w) {
  for (size_t i = 0; i < waiters_.size(); ++i) {
    if (waiters_[i] == w) {
      waiters_.erase(waiters_.begin() + static_cast<std::ptrdiff_t>(i));
      return;
    }
  }
}

void Engine::wakeWaiters() {
  std::lock_guard<std::mutex> lock(mu_);
  doneCv_.notify_all();
}

uint64_t Engine::wait(const CompletionPtr& c, const std::atomic<bool>* cancelled) {
  start();
  {
    std::unique_lock<std::mutex> lock(mu_);
    // A pinned thread's wait begins after its run: where a run pauses depends on what is awaited.
    settleLocked(lock);
    c->awaited.fetch_add(1);
    const Waiter w{c.get(), nullptr};
    waiters_.push_back(&w);
    releaseLocked();
    cv_.notify_all();
    // Wait for the publication that follows the pause: nowPs_ must not lag the completion. (Work
    // other threads posted meanwhile is taken in at that same time, and changes nothing the
    // waiter reads; a replaying shared node may keep that run from starting until the waiter has
    // finished.)
    // Once the process is exiting (quiesce) nothing runs any more: waits return at once, so that
    // a static destructor that synchronizes cannot hang the exit.
    const auto finished = [&] {
      return stopping_ || (c->done() && simIdle_) || (cancelled != nullptr && cancelled->load());
    };
    // Polling lets a waiter notice a stall; the period only bounds how soon it is reported.
    constexpr auto kPoll = std::chrono::milliseconds(20);
    uint64_t episode = 0;
    std::chrono::steady_clock::time_point since;
    bool gaveUp = false;
    while (!doneCv_.wait_for(lock, kPoll, finished)) {
      // Stalled: the simulation has nothing left to do. Spinning: it goes on, every run with only
      // spinning work, so it is not waited to be idle.
      const bool stall = stalled_ && simIdle_ && posted_.empty();
      const bool spin = !stall && spinStalled_ && posted_.empty();
      if (!stall && !spin) continue;
      if (episode != stallEpisode_) {
        episode = stallEpisode_;
        since = std::chrono::steady_clock::now();
      }
      if (gaveUpEpisode_ == stallEpisode_ || giveUp(since, spin)) {
        gaveUp = true;
        break;
      }
    }
    removeWaiter(&w);
    if (gaveUp || (cancelled != nullptr && cancelled->load() && !c->done())) {
      if (gaveUp) threadHangReport() = lastReport_;
      c->awaited.fetch_sub(1);
      return kGaveUp;
    }
  }
  c->awaited.fetch_sub(1);
  return c->donePs();
}

void Engine::setStallPolicy(StallPolicy policy) {
  std::lock_guard<std::mutex> lock(mu_);
  stallPolicy_ = std::move(policy);
}

std::string Engine::takeHangReport() { return std::exchange(threadHangReport(), std::string()); }

void Engine::noteSpinOnly(bool only) {
  spinOnly_ = only;
  spinBroken_ = spinBroken_ || !only;
}

int threadsOfProcess(int pid) {
  int n = 0;
  const std::string dir = "/proc/" + std::to_string(pid) + "/task";
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) n += (e->d_name[0] != '.');
    closedir(d);
  }
#if defined(__SANITIZE_THREAD__)
  // ThreadSanitizer starts a background thread of its own in a process when the process first
  // creates a thread, and it never calls the driver: not counted, or no deadlock would ever be
  // seen. In a ThreadSanitizer build every process of the run is one of its own, so a process with
  // more than one thread has it (docs/reliability.md).
  if (n > 1) --n;
#endif
  return n;
}

int Engine::applicationThreads() { return threadsOfProcess(static_cast<int>(getpid())) - internalThreads(); }

bool Engine::giveUp(std::chrono::steady_clock::time_point stalledSince, bool spinning) {
  size_t stuck = 0;
  for (const Waiter* w : waiters_) stuck += w->satisfied() ? 0 : 1;
  const bool deadlock = !spinning && static_cast<int>(stuck) >= applicationThreads();
  const double quiet = std::chrono::duration<double>(std::chrono::steady_clock::now() - stalledSince).count();
  if (!deadlock && quiet < stallPolicy_.graceSeconds) return false;
  char verdict[256];
  if (deadlock) {
    std::snprintf(verdict, sizeof verdict,
                  "deadlock: every thread of this process waits for GPU work that can never finish");
  } else if (spinning) {
    std::snprintf(verdict, sizeof verdict,
                  "suspected hang: every kernel running spun for %g s on memory that did not change, and nothing else ran, while threads waited for it (MCSIM_HANG_GRACE_S)",
                  stallPolicy_.graceSeconds);
  } else {
    std::snprintf(verdict, sizeof verdict,
                  "suspected hang: GPU work made no progress for %g s while threads waited for it (MCSIM_HANG_GRACE_S)",
                  stallPolicy_.graceSeconds);
  }
  std::string report = std::string("mcsim: ") + verdict + " (simulated time " + std::to_string(nowPs_ / 1000000) +
                       " us)\n";
  if (stallPolicy_.describe) report += stallPolicy_.describe();
  report += stallPolicy_.abortOnHang
                ? "mcsim: aborting (MCSIM_ON_HANG=abort)\n"
                : "mcsim: the waiting calls fail with CUDA_ERROR_LAUNCH_TIMEOUT, which their contexts keep (MCSIM_ON_HANG=abort aborts instead)\n";
  std::fputs(report.c_str(), stderr);
  std::fflush(stderr);
  if (stallPolicy_.abortOnHang) abortOnHang();
  lastReport_ = std::move(report);
  gaveUpEpisode_ = stallEpisode_;
  doneCv_.notify_all();
  return true;
}

void Engine::completeAfter(const CompletionPtr& c, Work duration) {
  // The timer holds `c` weakly: a host thread that stopped waiting (advance() whose `until` came
  // first) drops it, and the timer goes with it.
  post([this, weak = std::weak_ptr<Completion>(c), duration = std::move(duration)] {
    const CompletionPtr timer = weak.lock();
    if (!timer) return;
    const uint64_t end = simNowPs() + duration();
    ++processes_;
    if (end > simNowPs()) ++activations_;
    core_->addTimer(end, timer);
  });
}

uint64_t Engine::advance(uint64_t ps, const CompletionPtr& until) {
  // Awaited before it is posted: even a simulation another thread keeps running pauses there.
  // (A pinned thread's timer goes into the run after its own, and `until` is awaited once that
  // run has ended, so that the run in progress pauses where it would have without this wait.)
  auto timer = std::make_shared<Completion>();
  timer->awaited.fetch_add(1);
  const bool pinned = tPinEngine == this;
  if (until && !pinned) until->awaited.fetch_add(1);
  completeAfter(timer, [ps] { return ps; });
  uint64_t reached = 0;
  {
    std::unique_lock<std::mutex> lock(mu_);
    if (pinned) {
      settleLocked(lock);
      if (until) until->awaited.fetch_add(1);
    }
    const Waiter w{timer.get(), until.get()};
    waiters_.push_back(&w);
    releaseLocked();
    cv_.notify_all();
    auto doneAt = [&](const CompletionPtr& x) { return x && x->done(); };
    doneCv_.wait(lock, [&] { return stopping_ || ((doneAt(timer) || doneAt(until)) && simIdle_); });
    removeWaiter(&w);
    reached = nowPs_;
  }
  timer->awaited.fetch_sub(1);
  if (until) until->awaited.fetch_sub(1);
  return reached;
}

uint64_t Engine::run(Work work) {
  auto c = std::make_shared<Completion>();
  completeAfter(c, std::move(work));
  return wait(c);
}

uint64_t Engine::nowPs() {
  std::unique_lock<std::mutex> lock(mu_);
  settleLocked(lock);
  return nowPs_;
}

EngineStats Engine::stats() {
  std::lock_guard<std::mutex> lock(mu_);
  return EngineStats{publishedProcesses_, publishedActivations_, nowPs_};
}

}  // namespace mcsim::model
