// `mcsim campaign`: runs the sample workloads (tools/workloads) under randomized fault plans, one
// plan per seed, FoundationDB style, and checks the invariants every run reports: a failing call
// changes nothing, nothing leaks, memory no failing call touched keeps its data, no crash, no hang.
// A sample of the runs is made twice to check that a seed reproduces its run, and the campaign
// checks that every fault point fired somewhere. docs/faults.md describes it for users.
#include <fmt/format.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "child_process.h"
#include "cli_checks.h"
#include "commands.h"
#include "driver_library.h"
#include "fabric/fault_plan.h"
#include "fabric/json_source.h"
#include "model/digest.h"
#include "plan_generator.h"
#include "scratch_dir.h"
#include "tool_settings.h"
#include "traces/lib/replayer.h"
#include "traces/lib/trace_reader.h"

extern char** environ;

namespace mcsim::tools {

namespace {

namespace fs = std::filesystem;

struct WorkloadKind {
  const char* name;
  int devices;       // devices it uses (device= filters stay below)
  uint64_t horizon;  // about how many driver calls a run without faults makes
};
const std::vector<WorkloadKind> kWorkloads = {{"nccl", 8, 250}, {"pytorch", 8, 200}, {"vmm", 4, 110}};

// A run that does not end within --timeout is made again under a limit this many times as long
// before it counts as a hang (Campaign::runPatiently).
constexpr double kPatience = 4;

struct CampaignOptions {
  uint64_t seeds = 0;
  uint64_t firstSeed = 0;
  std::string workload = "all";
  unsigned jobs = 0;
  int checkRepro = -1;  // -1: 10% of the runs, at least 2
  bool requireCoverage = false;
  double hangGrace = 0.3;
  double timeout = 20;
  double pointOn = 0.3;
  std::string workloadDir;
  std::string reportDir;  // where failing runs' reports go ("": a new mcsim-campaign-XXXXXX in the temp directory)
  bool dryRun = false;
  bool verbose = false;
  std::vector<std::string> program;  // `-- PROGRAM ARGS`: a user's program instead of the samples
};

struct Workload {
  std::string name;  // the sample's name, or a user's program's file name
  int devices = 8;
  uint64_t horizon = 200;
  std::string path;
  std::vector<std::string> args;  // a user's program's arguments
  // A user's program (`mcsim campaign -- PROGRAM ARGS`): it prints no mcsim-* lines, so the
  // campaign checks it from outside (checkProgramRun).
  bool program = false;
  std::vector<std::string> entryPoints;
};

struct Job {
  uint64_t seed = 0;
  const Workload* workload = nullptr;
};

struct RunResult {
  uint64_t seed = 0;
  const Workload* workload = nullptr;
  std::string plan;
  std::vector<std::string> violations;
  std::string digest;
  std::map<std::string, uint64_t> fired;
  double seconds = 0;
  int exitStatus = 0;  // a user's program's
  std::string output;  // what the run printed (stdout and stderr, interleaved): its report when it fails
};

std::string shellQuote(const std::string& s) {
  if (!s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-+=/.,:@%") ==
                        std::string::npos) {
    return s;
  }
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string selfPath() {
  std::error_code ec;
  const fs::path p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string("mcsim") : p.string();
}

// Variables the campaign sets for each run; everything else of its own environment passes through.
// Over a user's program it records each run and reads what was left at exit too.
bool setByCampaign(const std::string& name) {
  return name == "MCSIM_FAULTS" || name == "MCSIM_FAULTS_FILE" || name == "MCSIM_SEED" ||
         name == "MCSIM_HANG_GRACE_S" || name == "LD_LIBRARY_PATH" || name == "MCSIM_RECORD" ||
         name == "MCSIM_LEAK_CHECK" || name == "MCSIM_NODE";
}

// A run's calls and results, thread by thread, as one digest (the reproducibility check), from its
// trace: FNV-1a over each thread's (call, result) sequence, in thread order.
std::string traceDigest(const trace::Trace& t) {
  std::map<int, std::vector<const trace::Record*>> byThread;
  for (const trace::Record& r : t.records) byThread[r.thread].push_back(&r);
  model::Digest d;
  for (const auto& [thread, records] : byThread) {
    d.add(static_cast<uint64_t>(thread));
    for (const trace::Record* r : records) {
      d.add(std::string(trace::callTable()[r->call].symbol));
      d.add(r->result);
    }
  }
  return fmt::format("{:016x}", d.value());
}

class Campaign {
 public:
  Campaign(const CampaignOptions& o, std::string libDir) : o_(o), libDir_(std::move(libDir)) {
    for (char** e = environ; *e != nullptr; ++e) {
      const std::string kv = *e;
      const std::string name = kv.substr(0, kv.find('='));
      if (setByCampaign(name)) continue;
      inherited_.push_back(kv);
      if (name.compare(0, 6, "MCSIM_") == 0) passedMcsim_.push_back(kv);
    }
    std::sort(passedMcsim_.begin(), passedMcsim_.end());
    const char* old = std::getenv("LD_LIBRARY_PATH");
    ldPath_ = (old != nullptr && *old != '\0') ? libDir_ + ":" + old : libDir_;
  }

  // A user's program: one run without faults, recorded, says which entry points it calls, how
  // many calls it makes and how many devices it uses; it must succeed. "" or the problem.
  std::string loadProgram(const std::vector<std::string>& command) {
    if (!scratch_.ok()) return "cannot make a scratch directory";
    Workload w;
    w.program = true;
    w.path = command.front();
    w.args.assign(command.begin() + 1, command.end());
    w.name = fs::path(w.path).filename().string();
    const std::string tracePath = scratch_.file("baseline.jsonl");
    std::vector<std::string> env = environment(0, "");
    env.push_back("MCSIM_RECORD=" + tracePath);
    std::vector<std::string> argv = {w.path};
    argv.insert(argv.end(), w.args.begin(), w.args.end());
    const ChildResult r = runChild(argv, env, o_.timeout);
    if (!r.started) return "cannot start " + w.path + ": " + r.output;
    if (r.timedOut || r.signal != 0 || r.exitStatus != 0) {
      return w.path + " fails without faults (" +
             (r.timedOut ? fmt::format("no exit within {} s", o_.timeout)
                         : r.signal != 0 ? fmt::format("killed by signal {}", r.signal) : fmt::format("exit status {}", r.exitStatus)) +
             "): a campaign needs a program that succeeds when nothing is injected. Its output:\n" + r.output;
    }
    trace::Trace t;
    if (const std::string why = trace::readTrace(tracePath, &t); !why.empty()) {
      return "the run of " + w.path + " without faults left no readable trace: " + why;
    }
    std::set<std::string> points;
    int devices = 1;
    for (const trace::Record& r2 : t.records) {
      const trace::CallDesc& d = trace::callTable()[r2.call];
      points.insert(d.base);
      if (std::string(d.base) == "cuDeviceGet" && r2.args.contains("ordinal") && r2.args.at("ordinal").is_number_integer()) {
        devices = std::max(devices, r2.args.at("ordinal").get<int>() + 1);
      }
    }
    if (points.empty()) return w.path + " makes no driver call: there is nothing to inject faults into";
    w.entryPoints.assign(points.begin(), points.end());
    w.devices = devices;
    w.horizon = t.records.size();
    workloads_.push_back(std::move(w));
    return "";
  }

  // Finds the workloads' programs and asks each for its entry points. "" or the problem.
  std::string loadWorkloads(const std::string& dir) {
    for (const WorkloadKind& k : kWorkloads) {
      if (o_.workload != "all" && o_.workload != k.name) continue;
      Workload w;
      w.name = k.name;
      w.devices = k.devices;
      w.horizon = k.horizon;
      w.path = (fs::path(dir) / (std::string("mcsim_workload_") + k.name)).string();
      const ChildResult r = runChild({w.path, "--points"}, environment(0, ""), o_.timeout);
      if (!r.started || r.exitStatus != 0) {
        return "cannot ask " + w.path + " for its entry points: " +
               (r.started ? "exit status " + std::to_string(r.exitStatus) : r.output) +
               " (build the workloads, or point --workload-dir at them)";
      }
      std::istringstream in(r.output);
      for (std::string line; std::getline(in, line);) {
        if (!line.empty()) w.entryPoints.push_back(line);
      }
      workloads_.push_back(std::move(w));
    }
    return "";
  }

  std::string planFor(uint64_t seed, const Workload& w) const {
    PlanSettings s;
    s.pointOn = o_.pointOn;
    s.devices = w.devices;
    s.horizon = w.horizon;
    return generatePlan(seed, w.name, w.entryPoints, s);
  }

  std::vector<std::string> environment(uint64_t seed, const std::string& plan) const {
    std::vector<std::string> env = inherited_;
    env.push_back("LD_LIBRARY_PATH=" + ldPath_);
    env.push_back("MCSIM_FAULTS=" + plan);
    env.push_back("MCSIM_SEED=" + std::to_string(seed));
    env.push_back("MCSIM_HANG_GRACE_S=" + graceText());
    return env;
  }

  std::string graceText() const { return fmt::format("{}", o_.hangGrace); }

  // The command that runs `seed` again, by hand.
  std::string reproCommand(const RunResult& r) const {
    std::string cmd = "MCSIM_FAULTS=" + shellQuote(r.plan) + " MCSIM_SEED=" + std::to_string(r.seed) +
                      " MCSIM_HANG_GRACE_S=" + graceText();
    for (const std::string& kv : passedMcsim_) {
      const auto eq = kv.find('=');
      cmd += " " + kv.substr(0, eq) + "=" + shellQuote(kv.substr(eq + 1));
    }
    cmd += " " + shellQuote(selfPath()) + " run -- " + shellQuote(r.workload->path);
    for (const std::string& a : r.workload->args) cmd += " " + shellQuote(a);
    return cmd;
  }

  RunResult runOne(const Job& job) const {
    RunResult res;
    res.seed = job.seed;
    res.workload = job.workload;
    res.plan = planFor(job.seed, *job.workload);
    const uint64_t seed = job.seed;
    // A plan the driver would refuse is a bug of the generator: say so rather than run it.
    try {
      fabric::parseFaultPlan(res.plan, "MCSIM_FAULTS");
    } catch (const fabric::InputError& e) {
      res.violations.push_back(std::string("the generated plan does not parse: ") + e.what());
      return res;
    }
    if (res.workload->program) {
      checkProgramRun(&res);
      noteOutcome(res);
      return res;
    }
    const ChildResult c = runPatiently({res.workload->path}, environment(seed, res.plan));
    res.seconds = c.seconds;
    res.output = c.output;
    bool ok = false;
    std::istringstream in(c.output);
    for (std::string line; std::getline(in, line);) {
      if (line.rfind("mcsim-digest: ", 0) == 0) {
        res.digest = line.substr(14);
      } else if (line.rfind("mcsim-fired: ", 0) == 0) {
        std::istringstream f(line.substr(13));
        std::string point;
        uint64_t n = 0;
        if (f >> point >> n) res.fired[point] += n;
      } else if (line == "mcsim-invariants: ok") {
        ok = true;
      } else if (line.rfind("mcsim-invariants: violation ", 0) == 0) {
        res.violations.push_back(line.substr(28));
      }
    }
    if (!c.started) {
      res.violations.push_back("cannot start: " + c.output);
    } else if (c.timedOut) {
      res.violations.push_back(fmt::format("hang: no exit within {} s, nor within {} s when made again (killed)",
                                           o_.timeout, o_.timeout * kPatience));
    } else if (c.signal != 0) {
      res.violations.push_back(fmt::format("crash: killed by signal {} ({})", c.signal, strsignal(c.signal)));
    } else if (!ok && res.violations.empty()) {
      res.violations.push_back(fmt::format("no mcsim-invariants line (exit status {})", c.exitStatus));
    } else if (ok && c.exitStatus != 0) {
      res.violations.push_back(fmt::format("exit status {} after mcsim-invariants: ok", c.exitStatus));
    }
    noteOutcome(res);
    return res;
  }

  // A run, under --timeout. Runs take tens of milliseconds alone, but beside a full machine they
  // take what the machine leaves them, and a verdict must not depend on that: a run made again is
  // the same run (it depends on its seed alone), so one that did not end within the limit is made
  // again under a limit kPatience times as long before it counts as a hang, and one that could not
  // be started (fork or exec refused for want of memory or processes) or was killed from outside
  // (SIGKILL: the kernel's out-of-memory killer; mcsim never sends it) is made again once.
  ChildResult runPatiently(const std::vector<std::string>& argv, const std::vector<std::string>& env) const {
    ChildResult c = runChild(argv, env, o_.timeout);
    if (c.timedOut) {
      c = runChild(argv, env, o_.timeout * kPatience);
    } else if (!c.started || c.signal == SIGKILL) {
      c = runChild(argv, env, o_.timeout);
    }
    return c;
  }

  // As each run ends: every run's outcome with -v, and a failing run's at once on stderr, so that a
  // campaign stopped before its summary (a test's time limit) still says what failed.
  void noteOutcome(const RunResult& res) const {
    std::lock_guard<std::mutex> lock(printMu_);
    if (o_.verbose) {
      fmt::print("seed {} ({}): {:.2f} s, trace {}, {}\n", res.seed, res.workload->name, res.seconds,
                 res.digest.empty() ? "(none)" : res.digest, res.violations.empty() ? "ok" : res.violations.front());
      std::fflush(stdout);
    }
    if (!res.violations.empty()) {
      fmt::print(stderr, "mcsim campaign: seed {} ({}) failed: {}\n", res.seed, res.workload->name, res.violations.front());
      std::fflush(stderr);
    }
  }

  // Runs `runs` on `jobs` threads; results in the order of `runs`.
  std::vector<RunResult> runAll(const std::vector<Job>& runs, unsigned jobs) const {
    std::vector<RunResult> results(runs.size());
    std::atomic<size_t> next{0};
    auto worker = [&] {
      for (size_t i; (i = next.fetch_add(1)) < runs.size();) results[i] = runOne(runs[i]);
    };
    std::vector<std::thread> threads;
    for (unsigned j = 0; j < std::max(1u, std::min<unsigned>(jobs, static_cast<unsigned>(runs.size()))); ++j) {
      threads.emplace_back(worker);
    }
    for (auto& t : threads) t.join();
    return results;
  }

  // A run of a user's program, checked from outside (docs/faults.md): it must not crash or hang;
  // without a fault fired it must exit 0; when it exits 0 it must have released everything
  // (MCSIM_LEAK_CHECK's report at exit); and a replay of its trace must find that no failing
  // call changed the state (single-threaded programs). The fired rules are the plan's less those
  // the driver reports at exit as never fired.
  void checkProgramRun(RunResult* res) const {
    const std::string tracePath = scratch_.file(fmt::format("run-{}-{}.jsonl", res->seed, runNumber_.fetch_add(1)));
    std::vector<std::string> env = environment(res->seed, res->plan);
    env.push_back("MCSIM_RECORD=" + tracePath);
    env.push_back("MCSIM_LEAK_CHECK=full");
    std::vector<std::string> argv = {res->workload->path};
    argv.insert(argv.end(), res->workload->args.begin(), res->workload->args.end());
    const ChildResult c = runPatiently(argv, env);
    res->seconds = c.seconds;
    res->output = c.output;
    std::multiset<std::string> unfired;  // the texts of the rules the driver reports never fired
    std::string leak;
    std::istringstream in(c.output);
    for (std::string line; std::getline(in, line);) {
      const std::string never = "mcsim: fault rule at MCSIM_FAULTS:";
      const size_t text = line.find("): ");
      if (line.rfind(never, 0) == 0 && text != std::string::npos) {
        unfired.insert(line.substr(text + 3));
      } else if (line.rfind("mcsim: at exit the program still held ", 0) == 0 && leak.empty()) {
        leak = line.substr(7);
        if (!leak.empty() && leak.back() == ':') leak.pop_back();
      }
    }
    uint64_t firedRules = 0;
    for (const fabric::FaultRule& rule : fabric::parseFaultPlan(res->plan, "MCSIM_FAULTS")) {
      if (const auto it = unfired.find(rule.text); it != unfired.end()) {
        unfired.erase(it);
        continue;
      }
      ++firedRules;
      res->fired[rule.text.substr(0, rule.text.find_first_of(" :"))] += 1;
    }
    if (!c.started) {
      res->violations.push_back("cannot start: " + c.output);
      return;
    }
    if (c.timedOut) {
      res->violations.push_back(fmt::format("hang: no exit within {} s, nor within {} s when made again (killed)",
                                            o_.timeout, o_.timeout * kPatience));
    } else if (c.signal != 0) {
      res->violations.push_back(fmt::format("crash: killed by signal {} ({})", c.signal, strsignal(c.signal)));
    } else if (c.exitStatus != 0 && firedRules == 0) {
      res->violations.push_back(fmt::format("exit status {} with no fault fired", c.exitStatus));
    } else if (c.exitStatus == 0 && !leak.empty()) {
      res->violations.push_back("leak: exit status 0, but " + leak);
    }
    res->exitStatus = c.exitStatus;
    trace::Trace t;
    if (!trace::readTrace(tracePath, &t).empty()) return;  // it crashed or hung: reported above
    res->digest = traceDigest(t);
    if (t.threads > 1) return;  // the replay checks the invariant on single-threaded traces only
    trace::ReplayOptions o;
    o.library = libDir_ + "/" + kDriverLibraryName;
    o.recordTo = tracePath + ".replay.jsonl";
    o.faultsPath = tracePath + ".plan";
    o.outcomeTo = tracePath + ".outcome.json";
    o.stderrTo = tracePath + ".stderr.txt";
    o.timeoutSeconds = o_.timeout;
    const trace::ReplayOutcome r = trace::replayInChild(t, o);
    if (!r.invariant.empty()) res->violations.push_back("invariant: " + r.invariant);
  }

  // Keeps a failing run's report (what it printed, after its plan and reproduction command) in the
  // campaign's report directory, made when the first run fails; prints where, and the report's
  // last lines, so that a failure is diagnosable from the campaign's output alone. `suffix` tells
  // a run made again apart.
  void keepReport(const RunResult& r, const std::string& suffix) {
    constexpr size_t kShownLines = 40;
    if (reportDir_.empty()) {
      std::string dir = o_.reportDir;
      if (dir.empty()) {
        std::string tmpl = (fs::temp_directory_path() / "mcsim-campaign-XXXXXX").string();
        if (::mkdtemp(tmpl.data()) != nullptr) dir = tmpl;
      } else {
        std::error_code ec;
        fs::create_directories(dir, ec);
      }
      reportDir_ = dir.empty() ? "-" : dir;
    }
    std::vector<std::string> lines;
    std::istringstream in(r.output);
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    if (reportDir_ != "-") {
      const std::string path = fmt::format("{}/seed-{}-{}{}.txt", reportDir_, r.seed, r.workload->name, suffix);
      if (FILE* f = std::fopen(path.c_str(), "w")) {
        fmt::print(f, "seed {} ({}), {:.2f} s\n", r.seed, r.workload->name, r.seconds);
        for (const std::string& v : r.violations) fmt::print(f, "violation {}\n", v);
        fmt::print(f, "{}\n--- what the run printed ---\n{}", reproCommand(r), r.output);
        std::fclose(f);
        fmt::print("  report: {} ({} lines{})\n", path, lines.size(),
                   lines.size() > kShownLines ? fmt::format(", the last {} below", kShownLines) : std::string());
      }
    }
    for (size_t i = lines.size() > kShownLines ? lines.size() - kShownLines : 0; i < lines.size(); ++i) {
      fmt::print("  | {}\n", lines[i]);
    }
  }

  std::set<std::string> allPoints() const {
    std::set<std::string> points(fabricFaultPoints().begin(), fabricFaultPoints().end());
    for (const Workload& w : workloads_) points.insert(w.entryPoints.begin(), w.entryPoints.end());
    return points;
  }

  const std::vector<Workload>& workloads() const { return workloads_; }

 private:
  const CampaignOptions& o_;
  std::string libDir_;
  std::string ldPath_;
  std::vector<std::string> inherited_;
  std::vector<std::string> passedMcsim_;
  std::vector<Workload> workloads_;
  mutable std::mutex printMu_;
  ScratchDir scratch_;  // a user's program's traces
  std::string reportDir_;  // failing runs' reports (keepReport), kept after the campaign; "-": none could be made
  mutable std::atomic<uint64_t> runNumber_{0};
};

std::string describeFired(const std::map<std::string, uint64_t>& fired) {
  std::string s;
  for (const auto& [p, n] : fired) s += (s.empty() ? "" : " ") + p + "=" + std::to_string(n);
  return s.empty() ? "none" : s;
}

int campaign(const CampaignOptions& o) {
  using Clock = std::chrono::steady_clock;
  const auto started = Clock::now();
  const DriverLibraryDir lib = findDriverLibraryDir();
  if (lib.dir.empty()) {
    std::fprintf(stderr, "mcsim campaign: %s\n", lib.problem.c_str());
    return kExitFailure;
  }
  std::string dir = o.workloadDir;
  if (dir.empty()) {
    const std::string& env = toolSettings().workloadDir;
    dir = !env.empty() ? env : fs::path(selfPath()).parent_path().string();
  }
  Campaign c(o, lib.dir);
  if (const std::string problem = o.program.empty() ? c.loadWorkloads(dir) : c.loadProgram(o.program); !problem.empty()) {
    std::fprintf(stderr, "mcsim campaign: %s\n", problem.c_str());
    return kExitFailure;
  }

  // Every seed runs every workload chosen, each under a plan of its own.
  std::vector<Job> jobsList;
  for (uint64_t i = 0; i < o.seeds; ++i) {
    for (const Workload& w : c.workloads()) jobsList.push_back({o.firstSeed + i, &w});
  }
  if (o.dryRun) {
    for (const Job& j : jobsList) fmt::print("seed {} ({}): {}\n", j.seed, j.workload->name, c.planFor(j.seed, *j.workload));
    return kExitOk;
  }
  const unsigned jobs = o.jobs != 0 ? o.jobs : std::max(1u, std::thread::hardware_concurrency());
  std::string names;
  for (const Workload& w : c.workloads()) names += std::string(names.empty() ? "" : ", ") + w.name;
  fmt::print("mcsim campaign: {} seeds from {}, each over {} ({} runs at a time)\n", o.seeds, o.firstSeed, names, jobs);
  std::fflush(stdout);

  const std::vector<RunResult> results = c.runAll(jobsList, jobs);
  uint64_t runs = results.size(), violations = 0;
  for (const RunResult& r : results) {
    if (r.violations.empty()) continue;
    ++violations;
    fmt::print("seed {} ({}): violation {}\n", r.seed, r.workload->name, r.violations.front());
    for (size_t i = 1; i < r.violations.size() && i < 5; ++i) fmt::print("    and {}\n", r.violations[i]);
    fmt::print("  {}\n", c.reproCommand(r));
    c.keepReport(r, "");
  }

  // Reproducibility: a sample of the runs, run again, must make the same calls with the same
  // results and fire the same rules.
  const uint64_t want = o.checkRepro >= 0 ? static_cast<uint64_t>(o.checkRepro)
                                          : std::max<uint64_t>(2, (jobsList.size() + 9) / 10);
  const uint64_t k = std::min<uint64_t>(want, jobsList.size());
  std::vector<Job> again;
  std::vector<size_t> againIndex;
  for (uint64_t i = 0; i < k; ++i) {
    const size_t at = static_cast<size_t>(i * jobsList.size() / k);
    again.push_back(jobsList[at]);
    againIndex.push_back(at);
  }
  const std::vector<RunResult> second = c.runAll(again, jobs);
  runs += second.size();
  uint64_t differ = 0;
  for (size_t i = 0; i < second.size(); ++i) {
    const RunResult& a = results[againIndex[i]];
    const RunResult& b = second[i];
    std::string what;
    if (a.digest != b.digest) {
      what = "trace digest " + (a.digest.empty() ? "(none)" : a.digest) + ", then " + (b.digest.empty() ? "(none)" : b.digest);
    } else if (a.fired != b.fired) {
      what = "fired " + describeFired(a.fired) + ", then " + describeFired(b.fired);
    } else if (a.violations != b.violations) {
      what = "invariants " + (a.violations.empty() ? std::string("ok") : a.violations.front()) + ", then " +
             (b.violations.empty() ? std::string("ok") : b.violations.front());
    }
    if (what.empty()) continue;
    ++differ;
    ++violations;
    fmt::print("seed {} ({}): violation not reproducible: {}\n", a.seed, a.workload->name, what);
    fmt::print("  {}\n", c.reproCommand(a));
    c.keepReport(a, ".first");
    c.keepReport(b, ".again");
  }
  fmt::print("reproducibility: {} of {} runs made again gave the same trace\n", second.size() - differ, second.size());
  if (!o.program.empty()) {
    // A program that gives up with a non-zero status once an injected call fails is doing its job;
    // how often it did, for the user to judge.
    uint64_t gaveUp = 0;
    for (const RunResult& r : results) gaveUp += r.exitStatus != 0 && !r.fired.empty() ? 1 : 0;
    fmt::print("program: {} of {} runs exited with a non-zero status after a fault fired\n", gaveUp, results.size());
  }

  // Coverage: every fault point must have fired in some run.
  std::map<std::string, uint64_t> fired, firedRuns;
  for (const RunResult& r : results) {
    for (const auto& [p, n] : r.fired) {
      fired[p] += n;
      firedRuns[p] += n != 0;
    }
  }
  std::vector<std::string> never;
  const std::set<std::string> points = c.allPoints();
  for (const std::string& p : points) {
    if (fired[p] == 0) never.push_back(p);
  }
  std::string neverText;
  for (const std::string& p : never) neverText += " " + p;
  fmt::print("coverage: {} of {} fault points fired{}{}\n", points.size() - never.size(), points.size(),
             never.empty() ? "" : "; never fired:", neverText);
  // The points that fired in the fewest runs: how close the campaign came to missing one.
  std::vector<std::pair<uint64_t, std::string>> rarest;
  for (const std::string& p : points) {
    if (firedRuns[p] != 0) rarest.emplace_back(firedRuns[p], p);
  }
  std::sort(rarest.begin(), rarest.end());
  std::string rarestText;
  for (size_t i = 0; i < rarest.size() && i < 3; ++i) {
    rarestText += fmt::format("{}{} ({} run{})", i == 0 ? "" : ", ", rarest[i].second, rarest[i].first,
                              rarest[i].first == 1 ? "" : "s");
  }
  if (!rarestText.empty()) fmt::print("coverage: fired in the fewest runs: {}\n", rarestText);
  if (o.requireCoverage && !never.empty()) {
    violations += never.size();
    fmt::print("coverage: violation: {} fault point{} never fired (--require-coverage)\n", never.size(),
               never.size() == 1 ? "" : "s");
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - started).count();
  fmt::print("time: {:.1f} s\n", seconds);
  fmt::print("{} runs, {} invariant violations\n", runs, violations);
  std::fflush(stdout);
  return violations == 0 ? kExitOk : kExitFailure;
}

}  // namespace

Command addCampaignCommand(CLI::App& parent) {
  auto o = std::make_shared<CampaignOptions>();
  CLI::App* cmd = parent.add_subcommand(
      "campaign",
      "Run the sample workloads, or your program (-- PROGRAM ARGS), under random fault plans, one per seed, and check the "
      "invariants");
  cmd->add_option("--seeds", o->seeds, "How many seeds to try (each runs every workload chosen)")
      ->required()
      ->check(CLI::Range(uint64_t{1}, uint64_t{1} << 40));
  cmd->add_option("--first-seed", o->firstSeed, "The first seed (the others follow it)")->capture_default_str();
  std::vector<std::string> names = {"all"};
  for (const WorkloadKind& k : kWorkloads) names.push_back(k.name);
  cmd->add_option("--workload", o->workload, "The workload to run, or all (each seed runs each workload)")
      ->check(CLI::IsMember(names))
      ->capture_default_str();
  cmd->add_option("--jobs,-j", o->jobs, "Runs at a time (default: the number of processors)");
  cmd->add_option("--check-repro", o->checkRepro, "Runs to make twice to check reproducibility (default: 10%, at least 2)")
      ->check(wholeNumberAtLeast(0));
  cmd->add_flag("--require-coverage", o->requireCoverage, "Count every fault point that never fired as a violation");
  cmd->add_option("--hang-grace", o->hangGrace, "MCSIM_HANG_GRACE_S of each run, in seconds")
      ->check(secondsAboveZero())
      ->capture_default_str();
  cmd->add_option("--timeout", o->timeout, "Seconds after which a run counts as hung and is killed")
      ->check(secondsAboveZero())
      ->capture_default_str();
  cmd->add_option("--point-probability", o->pointOn, "The most a fault point is switched on in a run (each run draws a quarter, half or all of it)")
      ->check(CLI::Range(0.0, 1.0))
      ->capture_default_str();
  cmd->add_option("--workload-dir", o->workloadDir,
                  "Where the mcsim_workload_* programs are (default: MCSIM_WORKLOAD_DIR, else beside mcsim)");
  cmd->add_option("--report-dir", o->reportDir,
                  "Where to keep each failing run's report (default: a new mcsim-campaign-XXXXXX in the temporary directory)");
  cmd->add_flag("--dry-run", o->dryRun, "Print each seed's workload and plan; run nothing");
  cmd->add_flag("--verbose,-v", o->verbose, "Print every run's outcome");
  cmd->add_option("program", o->program,
                  "A program of your own and its arguments, after --, to run instead of the sample workloads")
      ->excludes("--workload")
      ->excludes("--workload-dir");
  // Everything from the program's name on is the program's, options included.
  cmd->positionals_at_end();
  return {cmd, [o] { return campaign(*o); }};
}

}  // namespace mcsim::tools
