#include "model/engine.h"

#include <atomic>
#include <cstdlib>
#include <systemc>

// libsystemc refers to sc_main; mcsim never calls it, since the engine drives sc_start itself
// from its own thread. Defined weak so that a user's SystemC program can still bring its own.
extern "C" __attribute__((weak, visibility("default"))) int sc_main(int, char**) { return 0; }

namespace mcsim::model {

struct Engine::Job {
  Work work;
  bool done = false;
  uint64_t finishedPs = 0;
};

// The SystemC side: one process that takes admitted jobs in order, runs each, and waits out
// the simulated duration it reports.
struct Engine::Core : sc_core::sc_module {
  sc_core::sc_event admitted;
  std::deque<std::shared_ptr<Job>> pending;  // touched only on the simulation thread
  std::function<void(const std::shared_ptr<Job>&)> onDone;

  explicit Core(const sc_core::sc_module_name& name) : sc_core::sc_module(name) {
    SC_HAS_PROCESS(Core);
    SC_THREAD(loop);
  }
  void loop() {
    for (;;) {
      while (pending.empty()) wait(admitted);
      std::shared_ptr<Job> job = pending.front();
      pending.pop_front();
      const uint64_t ps = job->work();
      if (ps > 0) wait(sc_core::sc_time(static_cast<double>(ps), sc_core::SC_PS));
      job->finishedPs = static_cast<uint64_t>(sc_core::sc_time_stamp().value());
      onDone(job);
    }
  }
};

namespace {
std::atomic<int> gInternalThreads{0};
}  // namespace

int Engine::internalThreads() { return gInternalThreads.load(); }

Engine& Engine::instance() {
  // Intentionally leaked: the simulation thread must outlive every static destructor that might
  // still call the driver during process exit.
  static Engine* engine = new Engine();
  return *engine;
}

Engine::Engine() {
  // SystemC prints a banner on first use; applications' output must stay theirs alone.
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 1);
  gInternalThreads.fetch_add(1);
  thread_ = std::thread([this] { threadMain(); });
  thread_.detach();
}

Engine::~Engine() = default;

void Engine::threadMain() {
  sc_core::sc_set_time_resolution(1, sc_core::SC_PS);
  core_ = std::make_unique<Core>("mcsim_engine");
  Core& core = *core_;
  core.onDone = [this](const std::shared_ptr<Job>& job) {
    std::lock_guard<std::mutex> lock(mu_);
    job->done = true;
    nowPs_ = job->finishedPs;
    cv_.notify_all();
  };
  sc_core::sc_start(sc_core::SC_ZERO_TIME);
  for (;;) {
    std::deque<std::shared_ptr<Job>> batch;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stopping_ || !queue_.empty(); });
      if (stopping_) return;
      batch.swap(queue_);
    }
    for (auto& job : batch) core.pending.push_back(std::move(job));
    core.admitted.notify(sc_core::SC_ZERO_TIME);
    sc_core::sc_start();  // runs until no activity is left, then returns with time preserved
  }
}

uint64_t Engine::run(Work work) {
  auto job = std::make_shared<Job>();
  job->work = std::move(work);
  std::unique_lock<std::mutex> lock(mu_);
  queue_.push_back(job);
  cv_.notify_all();
  cv_.wait(lock, [&] { return job->done; });
  return job->finishedPs;
}

uint64_t Engine::nowPs() {
  std::lock_guard<std::mutex> lock(mu_);
  return nowPs_;
}

}  // namespace mcsim::model
