// `mcsim replay`, `mcsim diff` and `mcsim minimize`: the trace commands (docs/traces.md). The
// work is in traces/lib; this file is the command line around it.
#include <stdlib.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "driver_library.h"
#include "scratch_dir.h"
#ifndef MCSIM_TRACES_ONLY
#include "node_start.h"
#include "tool_settings.h"
#include "fabric/fault_plan.h"
#include "files/bounded_file.h"
#include "fabric/json_source.h"
#endif
#include "traces/lib/minimize.h"
#include "traces/lib/replayer.h"
#include "traces/lib/trace_diff.h"
#include "traces/lib/trace_reader.h"

namespace mcsim::tools {

namespace {

namespace fs = std::filesystem;
using trace::Trace;

// A text file the command reads (a fault plan, the node's log): "" or why it cannot be read.
std::string readText(const std::string& path, std::string* out) {
  files::FileRead read = files::readBoundedFile(path, files::kMaxTextInputBytes);
  if (!read.ok()) return read.why;
  *out = std::move(read.bytes);
  return "";
}

bool hasMulticast(const Trace& t) {
  for (const auto& r : t.records) {
    if (std::string(trace::callTable()[r.call].base).rfind("cuMulticast", 0) == 0) return true;
  }
  return false;
}

struct TargetChoice {
  std::string target = "sim";
  std::string library;
  std::string topology;
  std::string faults;
};

// Fills the replay options every command shares; "" or the problem (exit status 2).
std::string prepareReplay(const char* cmd, const TargetChoice& c, Trace* t, const ScratchDir& dir,
                          trace::ReplayOptions* o, const std::string& suffix = "") {
  if (!dir.ok()) return std::string(cmd) + ": cannot make a scratch directory";
  o->simulated = c.target == "sim";
  if (!c.library.empty()) {
    o->library = fs::absolute(c.library).string();
  } else {
    const DriverLibraryDir lib = findDriverLibraryDir(o->simulated ? "" : "record-real");
    if (lib.dir.empty()) return std::string(cmd) + ": " + lib.problem;
    o->library = lib.dir + "/" + kDriverLibraryName;
  }
  if (!fs::exists(o->library)) return std::string(cmd) + ": no " + o->library + " (build it first)";
  if (!o->simulated && hasMulticast(*t)) {
    if (!toolSettings().realMulticast) {
      return std::string(cmd) + ": " + t->path +
             " calls cuMulticast* functions, which are not replayed on a real driver unless MCSIM_REAL_MULTICAST=1";
    }
  }
  if (!c.faults.empty()) {
    o->overrideFaults = true;
    if (const std::string why = readText(c.faults, &o->faultsText); !why.empty()) {
      return std::string(cmd) + ": " + c.faults + ": cannot read the fault plan: " + why;
    }
#ifndef MCSIM_TRACES_ONLY
    // Refuse a plan the driver would refuse (every call would then fail with CUDA_ERROR_NO_DEVICE).
    try {
      fabric::parseFaultPlan(o->faultsText, c.faults);
    } catch (const fabric::InputError& e) {
      return std::string(cmd) + ": " + e.what();
    }
#endif
  }
  if (!c.topology.empty()) t->header["env"]["MCSIM_TOPOLOGY"] = c.topology;
  o->recordTo = dir.file("replay" + suffix + ".jsonl");
  o->faultsPath = dir.file("faults" + suffix + ".plan");
  o->outcomeTo = dir.file("outcome" + suffix + ".json");
  return "";
}

void addTargetOptions(CLI::App* cmd, TargetChoice* c) {
  cmd->add_option("--target", c->target, "Replay in mcsim (sim) or on the real driver (real)")
      ->check(CLI::IsMember({"sim", "real"}));
  cmd->add_option("--faults", c->faults, "Fault plan to replay under instead of the recorded one (mcsim)");
  cmd->add_option("--topology", c->topology, "Preset to replay on instead of the recorded one (mcsim)");
  cmd->add_option("--library", c->library, "The libcuda.so.1 to replay against (default: mcsim's, or record-real/)");
}

// ---- replay

struct ReplayArgs {
  std::vector<std::string> traces;
  TargetChoice target;
  std::string output;
  size_t explain = 5;
  double timeout = 300;
  bool resultsOnly = false;
};

int replayOnSharedNode(ReplayArgs& a, std::vector<Trace>& traces);

// A replay's own trace against the recorded one, as `mcsim replay` compares them.
struct ReplayComparison {
  std::string problem;  // the replay's own trace is unreadable
  Trace replayed;
  trace::DiffOptions options;
  trace::DiffResult result;
};

// Reads the replay's trace at `replayPath` (keeping a copy at `keepAs`, when given) and compares.
// Data digests are compared up to the first call whose host data the trace does not hold.
ReplayComparison compareWithReplay(const ReplayArgs& a, const Trace& t, const std::string& replayPath,
                                   const std::string& keepAs) {
  ReplayComparison c;
  if (std::string e = trace::readTrace(replayPath, &c.replayed); !e.empty()) {
    c.problem = "the replay's own trace is unreadable: " + e;
    return c;
  }
  c.replayed.path = keepAs.empty() ? "replay" : keepAs;
  if (!keepAs.empty()) fs::copy_file(replayPath, keepAs, fs::copy_options::overwrite_existing);
  c.options.exact = trace::bothSimulated(t, c.replayed) && !a.resultsOnly;
  c.options.compareLaunches = !a.resultsOnly;
  c.options.explain = a.explain;
  const std::vector<trace::UnrecordedData> unrecorded = trace::unrecordedHostData(t);
  if (!unrecorded.empty()) c.options.dataFrom = unrecorded.front().index;
  c.result = trace::diffTraces(t, c.replayed, c.options);
  return c;
}

// Which of the recorded settings the replay restores (the header's env: docs/traces.md), so that
// whoever replays a trace from elsewhere sees what it set.
void sayRestoredSettings(const Trace& t) {
  if (!t.header.contains("env") || t.header.at("env").empty()) return;
  std::string list;
  for (const auto& [name, value] : t.header.at("env").items()) {
    list += (list.empty() ? "" : ", ") + name + "=" + value.get<std::string>();
  }
  std::printf("settings restored from the trace: %s\n", list.c_str());
}

int replay(ReplayArgs& a) {
  std::vector<Trace> traces(a.traces.size());
  for (size_t i = 0; i < a.traces.size(); ++i) {
    if (std::string e = trace::readTrace(a.traces[i], &traces[i]); !e.empty()) {
      std::fprintf(stderr, "mcsim replay: %s\n", e.c_str());
      return kExitBadInput;
    }
  }
  // A run of several processes on a shared node replays on a node of its own, one process per
  // trace.
  if (traces.size() > 1 || !traces[0].nodeSettings.is_null()) return replayOnSharedNode(a, traces);
  Trace& t = traces[0];
  ScratchDir dir;
  trace::ReplayOptions o;
  o.timeoutSeconds = a.timeout;
  if (std::string e = prepareReplay("mcsim replay", a.target, &t, dir, &o); !e.empty()) {
    std::fprintf(stderr, "%s\n", e.c_str());
    return kExitBadInput;
  }
  if (o.simulated) sayRestoredSettings(t);
  const size_t unrecorded = trace::unrecordedHostData(t).size();
  std::printf("%s", trace::describeUnrecordedData(t, trace::unrecordedHostData(t)).c_str());
  const trace::ReplayOutcome r = trace::replayInChild(t, o);
  if (!r.finished) {
    std::fprintf(stderr, "mcsim replay: %s\n", r.problem.c_str());
    return kExitFailure;
  }
  ReplayComparison c = compareWithReplay(a, t, o.recordTo, a.output);
  if (!c.problem.empty()) {
    std::fprintf(stderr, "mcsim replay: %s\n", c.problem.c_str());
    return kExitFailure;
  }
  trace::DiffResult& res = c.result;
  if (!r.invariant.empty()) res.differences.insert(res.differences.begin(), {0, "invariant: " + r.invariant});
  if (r.abortedOnHang) std::printf("the replay aborted on a hang, as the recording did (MCSIM_ON_HANG=abort)\n");
  std::printf("%s", trace::describeDiff(res, t, c.replayed, "replayed", c.options, false).c_str());
  // The calls whose host data the trace lacks were named before the replay: only others are news.
  if (r.approximated > unrecorded) {
    std::printf("%llu calls replayed approximately; the first: %s\n", static_cast<unsigned long long>(r.approximated),
                r.firstApproximation.c_str());
  }
  return res.differences.empty() ? kExitOk : kExitFailure;
}

// ---- replay of a run on a shared node

// The admission order the traces of one run on a shared node recorded, checked: "" or why they
// cannot be replayed together (exit status 2).
std::string runSchedule(const std::vector<Trace>& traces, std::vector<trace::NodeAdmission>* schedule) {
  std::map<uint64_t, std::string> where;  // admission number -> "trace:line"
  for (const Trace& t : traces) {
    if (t.nodeSettings.is_null()) {
      return t.path + ": not recorded on a shared node (its end record has no \"node\"); a trace of one process "
                      "replays alone";
    }
    const trace::Json& s0 = traces[0].nodeSettings;
    for (const char* key : {"name", "topology", "seed", "faults"}) {
      if (t.nodeSettings.value(key, trace::Json()) != s0.value(key, trace::Json())) {
        return t.path + ": recorded on another node than " + traces[0].path + " (its " + key + " is " +
               t.nodeSettings.value(key, trace::Json()).dump() + ", not " + s0.value(key, trace::Json()).dump() + ")";
      }
    }
    for (const trace::Record& r : t.records) {
      for (const trace::NodeAdmission& n : trace::nodeAdmissionsInOrder(r)) {
        const std::string here = t.path + ":" + std::to_string(r.line);
        auto [it, fresh] = where.emplace(n.number, here);
        if (!fresh) {
          return here + ": node admission " + std::to_string(n.number) + " is also in " + it->second +
                 " (a trace given twice, or traces of different runs?)";
        }
        schedule->push_back(n);
      }
    }
  }
  std::sort(schedule->begin(), schedule->end(),
            [](const trace::NodeAdmission& x, const trace::NodeAdmission& y) { return x.number < y.number; });
  // How many processes had come and gone on the node before the first of these attached (each
  // end record says how many before its own process).
  int64_t leftBefore = -1;
  for (const Trace& t : traces) {
    const trace::Json v = t.nodeSettings.value("left_before", trace::Json(0));
    const int64_t n = v.is_number_unsigned() ? static_cast<int64_t>(v.get<uint64_t>()) : 0;
    leftBefore = leftBefore < 0 ? n : std::min(leftBefore, n);
  }
  // Every traced request is in some trace: no request can have come after more finished ones
  // than the traces hold before it.
  for (size_t i = 0; i < schedule->size(); ++i) {
    const trace::NodeAdmission& n = (*schedule)[i];
    if (n.finishedBefore > i && leftBefore > 0) {
      // Not a process missing from this run: requests of an earlier run on the same node.
      return where.at(n.number) + ": node admission " + std::to_string(n.number) + " came after " +
             std::to_string(n.finishedBefore) + " traced requests had finished, but the traces hold only " +
             std::to_string(i) + " before it: the node had served " + std::to_string(leftBefore) +
             " processes, gone before the first of these attached, so this run was not the node's first. A replay "
             "starts a node of its own and replays a run from the node's start: record each run on a node started for "
             "it (mcsim node stop, then mcsim node start), or give the traces of the earlier processes too";
    }
    if (n.finishedBefore > i) {
      return where.at(n.number) + ": node admission " + std::to_string(n.number) + " came after " +
             std::to_string(n.finishedBefore) + " traced requests had finished, but the traces hold only " +
             std::to_string(i) + " before it: the traces of some processes of the run are missing (record every "
             "process, MCSIM_RECORD=trace-%p.jsonl, and give them all; a child forked without exec records beside "
             "its parent, TRACE-PID.jsonl)";
    }
    // The node's simulation only runs on: a later request cannot have come at an earlier count.
    if (i > 0 && n.simRuns < (*schedule)[i - 1].simRuns) {
      return where.at(n.number) + ": node admission " + std::to_string(n.number) + " came after " +
             std::to_string(n.simRuns) + " simulation runs, fewer than admission " +
             std::to_string((*schedule)[i - 1].number) + " (" + where.at((*schedule)[i - 1].number) + ") came after (" +
             std::to_string((*schedule)[i - 1].simRuns) + "): traces of different runs?";
    }
  }
  return "";
}

int replayOnSharedNode(ReplayArgs& a, std::vector<Trace>& traces) {
#ifdef MCSIM_TRACES_ONLY
  (void)a;
  (void)traces;
  std::fprintf(stderr, "mcsim replay: this build has no shared nodes to replay several processes on\n");
  return kExitBadInput;
#else
  const char* cmd = "mcsim replay";
  if (a.target.target != "sim") {
    std::fprintf(stderr, "%s: a run on a shared node replays in mcsim only (--target sim)\n", cmd);
    return kExitBadInput;
  }
  std::vector<trace::NodeAdmission> schedule;
  if (std::string e = runSchedule(traces, &schedule); !e.empty()) {
    std::fprintf(stderr, "%s: %s\n", cmd, e.c_str());
    return kExitBadInput;
  }
  ScratchDir dir;
  std::vector<trace::ReplayOptions> opts(traces.size());
  // The processes take their node's settings; --faults and --topology are the node's.
  TargetChoice processChoice = a.target;
  processChoice.faults.clear();
  processChoice.topology.clear();
  for (size_t i = 0; i < traces.size(); ++i) {
    opts[i].timeoutSeconds = a.timeout;
    if (std::string e = prepareReplay(cmd, processChoice, &traces[i], dir, &opts[i], "-" + std::to_string(i)); !e.empty()) {
      std::fprintf(stderr, "%s\n", e.c_str());
      return kExitBadInput;
    }
  }
  const trace::Json& settings = traces[0].nodeSettings;
  NodeOptions node;
  node.name = "replay-" + std::to_string(::getpid());
  node.topology = a.target.topology.empty() ? settings.at("topology").get<std::string>() : a.target.topology;
  node.seed = settings.at("seed").get<uint64_t>();
  node.exitWith = ::getpid();
  node.processes = static_cast<int>(traces.size());
  node.quiet = true;
  if (!a.target.faults.empty()) {
    node.faults = a.target.faults;
  } else if (settings.contains("faults") && settings.at("faults").is_string()) {
    node.faults = dir.file("node-faults.plan");
    std::ofstream(node.faults) << settings.at("faults").get<std::string>();
  }
  // What-if replays (another plan or topology) take calls in as they come: the recorded order
  // belongs to the recorded node.
  const bool follow = a.target.faults.empty() && a.target.topology.empty();
  if (follow) {
    node.follow = dir.file("admissions.txt");
    std::ofstream out(node.follow);
    for (const trace::NodeAdmission& n : schedule) {
      out << n.number << " " << n.finishedBefore << " " << n.simRuns << "\n";
    }
  }
  if (settings.contains("hang_grace_s") && settings.at("hang_grace_s").is_number()) {
    ::setenv("MCSIM_HANG_GRACE_S", settings.at("hang_grace_s").dump().c_str(), 1);
  }
  if (startNode(node) != kExitOk) {
    std::fprintf(stderr, "%s: cannot start a node to replay on\n", cmd);
    return kExitFailure;
  }
  for (const Trace& t : traces) {
    const std::string unrecorded = trace::describeUnrecordedData(t, trace::unrecordedHostData(t));
    if (!unrecorded.empty()) std::printf("%s: %s", t.path.c_str(), unrecorded.c_str());
  }
  std::vector<trace::ReplayChild> children;
  for (size_t i = 0; i < traces.size(); ++i) {
    opts[i].nodeName = node.name;
    opts[i].peerDir = dir.path();
    opts[i].peers = static_cast<int>(traces.size());
    children.push_back(trace::startReplayChild(traces[i], opts[i]));
  }
  std::vector<trace::ReplayOutcome> outcomes;
  for (size_t i = 0; i < traces.size(); ++i) outcomes.push_back(trace::awaitReplayChild(children[i], opts[i]));
  stopNode(node);
  std::string log;
  readText(nodeLogPath(node.name), &log);
  const size_t gaveUp = log.find("gave the recorded admission order up: ");
  if (!a.output.empty()) fs::create_directories(a.output);
  size_t differences = 0;
  int status = kExitOk;
  for (size_t i = 0; i < traces.size(); ++i) {
    const Trace& t = traces[i];
    if (!outcomes[i].finished) {
      std::printf("%s: %s\n", t.path.c_str(), outcomes[i].problem.c_str());
      status = kExitFailure;
      continue;
    }
    const std::string keep =
        a.output.empty() ? std::string() : (fs::path(a.output) / fs::path(t.path).filename()).string();
    const ReplayComparison c = compareWithReplay(a, t, opts[i].recordTo, keep);
    if (!c.problem.empty()) {
      std::printf("%s: %s\n", t.path.c_str(), c.problem.c_str());
      status = kExitFailure;
      continue;
    }
    differences += c.result.differences.size();
    std::printf("%s: %s", t.path.c_str(), trace::describeDiff(c.result, t, c.replayed, "replayed", c.options, false).c_str());
    if (outcomes[i].approximated > trace::unrecordedHostData(t).size()) {
      std::printf("  %llu calls replayed approximately; the first: %s\n",
                  static_cast<unsigned long long>(outcomes[i].approximated), outcomes[i].firstApproximation.c_str());
    }
  }
  if (gaveUp != std::string::npos) {
    const size_t end = log.find('\n', gaveUp);
    std::printf("the node %s\n", log.substr(gaveUp, end == std::string::npos ? std::string::npos : end - gaveUp).c_str());
    status = kExitFailure;
  }
  std::printf("replayed %zu processes on a shared node (%s admission order): %zu differences\n", traces.size(),
              follow ? "the recorded" : "their own", differences);
  return differences == 0 ? status : kExitFailure;
#endif
}

// ---- diff

struct DiffArgs {
  std::string a, b;
  bool exact = false, resultsOnly = false;
  size_t explain = 5;
};

int diff(const DiffArgs& a) {
  Trace ta, tb;
  for (auto [path, t] : {std::pair{&a.a, &ta}, std::pair{&a.b, &tb}}) {
    if (std::string e = trace::readTrace(*path, t); !e.empty()) {
      std::fprintf(stderr, "mcsim diff: %s\n", e.c_str());
      return kExitBadInput;
    }
  }
  trace::DiffOptions d;
  d.exact = a.exact || (!a.resultsOnly && trace::bothSimulated(ta, tb));
  d.compareLaunches = !a.resultsOnly;
  d.explain = a.explain;
  const trace::DiffResult res = trace::diffTraces(ta, tb, d);
  std::printf("%s", trace::describeDiff(res, ta, tb, "compared", d, true).c_str());
  return res.differences.empty() ? kExitOk : kExitFailure;
}

// ---- minimize

struct MinimizeArgs {
  std::string trace;
  std::string until;
  std::string output;
  TargetChoice target;
  int maxReplays = 500;
  double timeout = 60;
};

int minimize(MinimizeArgs& a) {
  Trace t;
  if (std::string e = trace::readTrace(a.trace, &t); !e.empty()) {
    std::fprintf(stderr, "mcsim minimize: %s\n", e.c_str());
    return kExitBadInput;
  }
  trace::MinimizeOptions o;
  if (std::string e = trace::parseCondition(a.until, &o.until); !e.empty()) {
    std::fprintf(stderr, "mcsim minimize: --until %s\n", e.c_str());
    return kExitBadInput;
  }
  ScratchDir dir;
  if (std::string e = prepareReplay("mcsim minimize", a.target, &t, dir, &o.replay); !e.empty()) {
    std::fprintf(stderr, "%s\n", e.c_str());
    return kExitBadInput;
  }
  o.replay.stderrTo = dir.file("stderr.txt");
  o.replay.timeoutSeconds = a.timeout;
  o.maxReplays = a.maxReplays;
  if (!a.target.faults.empty()) t.header["faults"] = o.replay.faultsText;  // the minimal trace carries its plan
  const trace::MinimizeResult res = trace::minimizeTrace(t, o);
  if (!res.problem.empty()) {
    std::fprintf(stderr, "mcsim minimize: %s\n", res.problem.c_str());
    return kExitFailure;
  }
  const std::string out = a.output.empty() ? a.trace + ".min.jsonl" : a.output;
  std::ofstream(out) << trace::writeTrace(t.header, res.records);
  std::printf("minimized %zu calls to %zu (%s) in %d replays: %s\n", t.records.size(), res.records.size(),
              trace::describeCondition(o.until).c_str(), res.replays, out.c_str());
  if (res.stoppedAtBudget) {
    std::printf("stopped at the budget of %d replays with calls left to try: the result fails the same way but may "
                "not be minimal; to go on from it: mcsim minimize %s --until %s --max-replays %d -o %s\n",
                a.maxReplays, out.c_str(), a.until.c_str(), a.maxReplays, (out + ".min.jsonl").c_str());
  }
  return kExitOk;
}

}  // namespace

Command addReplayCommand(CLI::App& parent) {
  auto a = std::make_shared<ReplayArgs>();
  CLI::App* cmd = parent.add_subcommand("replay", "Replay a trace and compare every result and data digest with it");
  cmd->add_option("traces", a->traces,
                  "The trace (JSON Lines, docs/traces.md); or the traces of every process of a run on a shared node, "
                  "replayed together in the recorded admission order")
      ->required();
  addTargetOptions(cmd, &a->target);
  cmd->add_option("-o,--output", a->output,
                  "Keep the replay's own trace here (several traces: a directory, one file per trace)");
  cmd->add_option("--explain", a->explain, "How many differences to explain (default 5)");
  cmd->add_option("--timeout", a->timeout, "Seconds before the replay is given up (default 300)");
  cmd->add_flag("--results-only", a->resultsOnly,
                "Only results and data digests count, not outputs or simulated times (default across targets)");
  return {cmd, [a] { return replay(*a); }};
}

Command addDiffCommand(CLI::App& parent) {
  auto a = std::make_shared<DiffArgs>();
  CLI::App* cmd = parent.add_subcommand("diff", "Compare two traces call by call: results, data digests, durations");
  cmd->add_option("a", a->a, "The first trace")->required();
  cmd->add_option("b", a->b, "The second trace")->required();
  cmd->add_flag("--exact", a->exact, "Arguments, outputs and simulated times must match too");
  cmd->add_flag("--results-only", a->resultsOnly, "Only results and data digests count (default across targets)");
  cmd->add_option("--explain", a->explain, "How many differences to explain (default 5)");
  return {cmd, [a] { return diff(*a); }};
}

Command addMinimizeCommand(CLI::App& parent) {
  auto a = std::make_shared<MinimizeArgs>();
  CLI::App* cmd = parent.add_subcommand("minimize", "Shrink a failing trace to a minimal one that fails the same way");
  cmd->add_option("trace", a->trace, "The failing trace")->required();
  cmd->add_option("--until", a->until, "The failure: result=CUDA_ERROR_X[@call], deadlock or invariant")->required();
  addTargetOptions(cmd, &a->target);
  cmd->add_option("-o,--output", a->output, "Where the minimal trace goes (default TRACE.min.jsonl)");
  cmd->add_option("--max-replays", a->maxReplays, "Give up shrinking after this many replays (default 500)");
  cmd->add_option("--timeout", a->timeout, "Seconds before one replay is given up (default 60)");
  return {cmd, [a] { return minimize(*a); }};
}

}  // namespace mcsim::tools
