#include "traces/lib/replayer.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <filesystem>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <thread>
#include <vector>

#include "mcsim/mcsim.h"
#include "traces/lib/trace_format.h"

namespace mcsim::trace {

namespace {

using Clock = std::chrono::steady_clock;

struct Target {
  void* lib = nullptr;
  uint64_t (*admitted)() = nullptr;
  uint64_t (*finished)() = nullptr;
  void (*close)() = nullptr;
  void (*nodePlan)(const uint64_t*, const uint64_t*, size_t) = nullptr;  // mcsim_trace_node_plan
  // mcsim's C API (mcsim/mcsim.h), present in mcsim's libcuda.so.1 only.
  decltype(&mcsim_initialized) initialized = nullptr;
  decltype(&mcsim_get_state_digest) getStateDigest = nullptr;
  uint64_t stateDigest() const {
    uint64_t d = 0;
    getStateDigest(&d);
    return d;
  }
  std::vector<void*> fns;
};

std::string readAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The child's side of a replay.
class Replay {
 public:
  Replay(const Trace& t, const ReplayOptions& o, Target& target) : t_(t), o_(o), target_(target), done_(t.records.size()) {
    for (auto& d : done_) d.store(false);
    // Image files (cuModuleLoad's) the replay cannot find as recorded are written here.
    arena_.setFileDir(o.recordTo + ".files");
  }

  void run() {
    if (t_.threads <= 1) {
      for (size_t i = 0; i < t_.records.size(); ++i) issue(i);
      return;
    }
    // One replay thread per recorded thread, each issuing its calls in order; call i is issued
    // once the target has admitted calls 0..i-1, which reproduces the recorded admission order
    // even where calls block (a bind waits for a device another thread adds later); and once as
    // many calls have finished as had when it was recorded, which reproduces the interleaving.
    std::map<int, std::vector<size_t>> byThread;
    for (size_t i = 0; i < t_.records.size(); ++i) byThread[t_.records[i].thread].push_back(i);
    std::vector<std::thread> threads;
    for (auto& [thread, calls] : byThread) {
      threads.emplace_back([this, list = calls] {
        for (size_t i : list) {
          const uint64_t fin = t_.records[i].fin;
          while (target_.admitted() < i || target_.finished() < fin) {
            std::this_thread::sleep_for(std::chrono::microseconds(20));
          }
          issue(i);
        }
      });
    }
    for (auto& th : threads) th.join();
  }

  void report(std::ostream& out) const {
    std::lock_guard<std::mutex> lock(mu_);
    out << Json{{"approximated", approximated_}, {"first_approximation", firstApproximation_}, {"invariant", invariant_}}.dump()
        << "\n";
  }

 private:
  void issue(size_t i) {
    const Record& r = t_.records[i];
    const CallDesc& d = callTable()[r.call];
    // The names this call uses come from calls that may still be running on other threads.
    for (int p : r.producers) {
      while (!done_[static_cast<size_t>(p)].load()) std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
    uint64_t slots[32] = {};
    bool approximate = false;
    std::string problem;
    {
      std::lock_guard<std::mutex> lock(mu_);
      try {
        problem = decodeInputs(d, r.args, binder_, arena_, slots, &approximate);
      } catch (const std::exception& e) {
        problem = e.what();
      }
      if (!problem.empty() || approximate) {
        if (approximated_++ == 0) {
          firstApproximation_ = t_.path + ":" + std::to_string(r.line) + ": " + d.symbol + ": " +
                                (problem.empty() ? "host data not recorded, replayed with a filler" : problem);
        }
      }
    }
    const bool check = o_.checkInvariants && t_.threads <= 1 && target_.getStateDigest != nullptr && target_.initialized() != 0 &&
                       o_.nodeName.empty();
    const uint64_t before = check ? target_.stateDigest() : 0;
    if (!o_.nodeName.empty() && target_.nodePlan != nullptr) {
      // The node admission numbers the call's requests are to take, as recorded.
      const uint64_t clock[2] = {r.clock[0].number, r.clock[1].number};
      std::vector<uint64_t> requests;
      for (const NodeAdmission& a : r.node) requests.push_back(a.number);
      target_.nodePlan(clock, requests.data(), requests.size());
    }
    const int received = receiveShared(r, d, slots);
    const CUresult result = target_.fns[static_cast<size_t>(r.call)] != nullptr
                                ? d.thunk(target_.fns[static_cast<size_t>(r.call)], slots)
                                : CUDA_ERROR_NOT_FOUND;
    if (received >= 0) ::close(received);
    if (result == CUDA_SUCCESS) publishShared(r, d, slots);
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (check && result != CUDA_SUCCESS && target_.stateDigest() != before && invariant_.empty()) {
        invariant_ = t_.path + ":" + std::to_string(r.line) + ": " + d.symbol +
                     " failed but changed the state digest (a failing call must change nothing)";
      }
      if (result == CUDA_SUCCESS && r.out.is_object()) {
        try {
          bindOutputs(d, slots, r.out, binder_);
        } catch (const std::exception&) {
        }
      }
    }
    done_[i].store(true);
  }

  // ---- Shareable handles between the replayed processes of a shared node's run

  std::string publication(const std::string& identity) const {
    std::string name = "shared-";
    for (char c : identity) name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
    return o_.peerDir + "/" + name;
  }

  // A handle this call exported (recorded as `r.shared`) is published for the other processes:
  // a descriptor as "PID FD" (they open it through /proc), a FABRIC handle as its bytes in hex.
  void publishShared(const Record& r, const CallDesc& d, const uint64_t* slots) {
    if (o_.peerDir.empty() || r.shared.empty()) return;
    uint64_t type = 0;
    const int i = shareableParam(d, slots, true, &type);
    if (i < 0) return;
    std::string text;
    if (type == CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) {
      text = std::to_string(::getpid()) + " " + std::to_string(*reinterpret_cast<const int*>(slots[i]));
    } else {
      text = toHex(reinterpret_cast<const void*>(slots[i]), sizeof(CUmemFabricHandle));
    }
    const std::string path = publication(r.shared), tmp = path + ".tmp" + std::to_string(::getpid());
    std::ofstream(tmp) << text;
    std::rename(tmp.c_str(), path.c_str());
  }

  // A handle this call imports that came from another process (the trace has only its raw value)
  // is taken from that process's publication, waiting for it. Returns a descriptor to close after
  // the call, or -1.
  int receiveShared(const Record& r, const CallDesc& d, uint64_t* slots) {
    if (o_.peerDir.empty() || r.shared.empty()) return -1;
    uint64_t type = 0;
    const int i = shareableParam(d, slots, false, &type);
    if (i < 0 || !r.args.contains(d.params[i].name) || !r.args.at(d.params[i].name).is_object()) return -1;
    const std::string path = publication(r.shared);
    const auto deadline = Clock::now() + std::chrono::duration<double>(o_.timeoutSeconds);
    std::string text;
    // A publication appears whole (it is renamed into place) and is never empty.
    while ((text = readAll(path)).empty()) {
      if (Clock::now() > deadline) return -1;
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (type == CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR) {
      std::istringstream in(text);
      long pid = 0;
      int fd = -1;
      if (!(in >> pid >> fd)) return -1;
      // The exporting process's descriptor, opened anew: the same file, which is what the node
      // knows a descriptor by.
      const int mine = ::open(("/proc/" + std::to_string(pid) + "/fd/" + std::to_string(fd)).c_str(), O_RDONLY | O_CLOEXEC);
      if (mine >= 0) slots[i] = static_cast<uint64_t>(mine);
      return mine;
    }
    std::vector<uint8_t> bytes;
    if (!fromHex(text, &bytes) || bytes.size() != sizeof(CUmemFabricHandle)) return -1;
    std::lock_guard<std::mutex> lock(mu_);
    slots[i] = reinterpret_cast<uint64_t>(arena_.copy(bytes));
    return -1;
  }

  const Trace& t_;
  const ReplayOptions& o_;
  Target& target_;
  std::vector<std::atomic<bool>> done_;
  mutable std::mutex mu_;
  Binder binder_;
  Arena arena_;
  uint64_t approximated_ = 0;
  std::string firstApproximation_;
  std::string invariant_;
};

void setEnv(const char* name, const std::string& v) { ::setenv(name, v.c_str(), 1); }

// In the child: the environment the target reads, then load, replay, close the trace.
int childMain(const Trace& t, const ReplayOptions& o) {
  if (o.simulated) {
    for (const char* name : kRecordedEnvironment) ::unsetenv(name);
    ::unsetenv("MCSIM_FAULTS");
    ::unsetenv("MCSIM_FAULTS_FILE");
    if (t.header.contains("env")) {
      for (const auto& [name, value] : t.header.at("env").items()) {
        // The reader refused any other name; checked again here, where the setting takes effect.
        if (value.is_string() && isRecordedSetting(name)) setEnv(name.c_str(), value.get<std::string>());
      }
    }
    std::string plan;
    if (o.overrideFaults) {
      plan = o.faultsText;
    } else if (t.header.contains("faults") && t.header.at("faults").is_string()) {
      plan = t.header.at("faults").get<std::string>();
    }
    if (!plan.empty()) {
      std::ofstream(o.faultsPath) << plan;
      setEnv("MCSIM_FAULTS_FILE", o.faultsPath);
    }
  }
  // The node to replay on: the one given, never one the environment names.
  if (o.nodeName.empty()) {
    ::unsetenv("MCSIM_NODE");
  } else {
    setEnv("MCSIM_NODE", o.nodeName);
  }
  setEnv("MCSIM_RECORD", o.recordTo);
  setEnv("MCSIM_RECORD_DATA", std::to_string(t.header.value("data_limit", uint64_t{65536})));
  ::unsetenv("MCSIM_RECORD_OUTPUT_DATA");
  if (t.header.value("images", std::string()) == "full") {
    setEnv("MCSIM_RECORD_IMAGES", "full");
  } else {
    ::unsetenv("MCSIM_RECORD_IMAGES");
  }

  Target target;
  target.lib = ::dlopen(o.library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (target.lib == nullptr) {
    std::fprintf(stderr, "mcsim replay: cannot load %s: %s\n", o.library.c_str(), ::dlerror());
    return 3;
  }
  target.admitted = reinterpret_cast<uint64_t (*)()>(::dlsym(target.lib, "mcsim_trace_admitted"));
  target.finished = reinterpret_cast<uint64_t (*)()>(::dlsym(target.lib, "mcsim_trace_finished"));
  target.close = reinterpret_cast<void (*)()>(::dlsym(target.lib, "mcsim_trace_close"));
  target.nodePlan = reinterpret_cast<void (*)(const uint64_t*, const uint64_t*, size_t)>(
      ::dlsym(target.lib, "mcsim_trace_node_plan"));
  if (target.admitted == nullptr || target.finished == nullptr || target.close == nullptr) {
    std::fprintf(stderr, "mcsim replay: %s is not a recording libcuda.so.1 (no mcsim_trace_* hooks)\n", o.library.c_str());
    return 3;
  }
  if (o.simulated) {
    target.initialized = reinterpret_cast<decltype(&mcsim_initialized)>(::dlsym(target.lib, "mcsim_initialized"));
    target.getStateDigest =
        reinterpret_cast<decltype(&mcsim_get_state_digest)>(::dlsym(target.lib, "mcsim_get_state_digest"));
    if (target.initialized == nullptr) target.getStateDigest = nullptr;
  }
  for (size_t i = 0; i < callCount(); ++i) target.fns.push_back(::dlsym(target.lib, callTable()[i].symbol));
  // Every call must reach the target's recorder, or the admission turns of later calls never come.
  for (const Record& r : t.records) {
    if (target.fns[static_cast<size_t>(r.call)] == nullptr) {
      std::fprintf(stderr, "mcsim replay: %s has no %s (%s:%d)\n", o.library.c_str(), callTable()[r.call].symbol,
                   t.path.c_str(), r.line);
      return 3;
    }
  }

  Replay replay(t, o, target);
  replay.run();
  target.close();
  if (o.peers > 1) {
    // Stay until every process of the run is done: what this one exported must stay open for
    // the others to import.
    std::ofstream(o.peerDir + "/done-" + std::to_string(::getpid())) << "done";
    const auto deadline = Clock::now() + std::chrono::duration<double>(o.timeoutSeconds);
    for (;;) {
      int done = 0;
      for (const auto& e : std::filesystem::directory_iterator(o.peerDir)) {
        done += e.path().filename().string().rfind("done-", 0) == 0 ? 1 : 0;
      }
      if (done >= o.peers || Clock::now() > deadline) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
  std::ofstream out(o.outcomeTo);
  replay.report(out);
  return 0;
}

double steadySeconds() { return std::chrono::duration<double>(Clock::now().time_since_epoch()).count(); }

}  // namespace

ReplayOutcome replayInChild(const Trace& t, const ReplayOptions& o) { return awaitReplayChild(startReplayChild(t, o), o); }

ReplayChild startReplayChild(const Trace& t, const ReplayOptions& o) {
  ReplayChild child;
  child.startedAt = steadySeconds();
  child.abortsOnHang = o.simulated && t.header.contains("env") &&
                       t.header.at("env").value("MCSIM_ON_HANG", std::string()) == "abort";
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) {
    child.problem = "cannot fork";
    return child;
  }
  if (pid == 0) {
    if (!o.stderrTo.empty()) {
      const int fd = ::open(o.stderrTo.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd >= 0) ::dup2(fd, 2);
    }
    int code = 4;
    try {
      code = childMain(t, o);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "mcsim replay: %s\n", e.what());
    }
    if (o.atChildEnd) o.atChildEnd();
    std::fflush(nullptr);
    ::_exit(code);
  }
  child.pid = pid;
  return child;
}

ReplayOutcome awaitReplayChild(const ReplayChild& child, const ReplayOptions& o) {
  ReplayOutcome res;
  if (child.pid < 0) {
    res.problem = child.problem;
    return res;
  }
  const pid_t pid = child.pid;
  const double deadline = child.startedAt + o.timeoutSeconds;
  int status = 0;
  for (;;) {
    const pid_t w = ::waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
    if (steadySeconds() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      res.problem = "the replay did not finish within " + std::to_string(static_cast<int>(o.timeoutSeconds)) + " s";
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (!o.stderrTo.empty()) res.stderrText = readAll(o.stderrTo);
  if (!res.problem.empty()) return res;
  if (WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT && child.abortsOnHang) {
    // As recorded: the process aborted on the hang, and its trace ends with the calls that hung.
    res.finished = true;
    res.abortedOnHang = true;
    return res;
  }
  if (WIFSIGNALED(status)) {
    res.problem = std::string("the replay was ended by signal ") + strsignal(WTERMSIG(status));
    return res;
  }
  if (WEXITSTATUS(status) != 0) {
    res.problem = "the replay could not run (status " + std::to_string(WEXITSTATUS(status)) + ")";
    return res;
  }
  res.finished = true;
  try {
    const Json j = Json::parse(readAll(o.outcomeTo));
    res.approximated = j.value("approximated", uint64_t{0});
    res.firstApproximation = j.value("first_approximation", std::string());
    res.invariant = j.value("invariant", std::string());
  } catch (const std::exception&) {
    res.problem = "the replay left no report";
    res.finished = false;
  }
  return res;
}

}  // namespace mcsim::trace
