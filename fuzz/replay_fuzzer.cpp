// libFuzzer target for replay semantics: a trace, replayed end to end against mcsim's libcuda.so.1
// as `mcsim replay` replays it (traces/lib/replayer.h: in a child process, the driver loaded
// there), with this build's driver instrumented like the target (ASan, UBSan, coverage). For any
// input the trace reader accepts:
//   - the replay runs to its end: no crash, no sanitizer report, no failure to run; a trace of one
//     thread also never hangs (hang grace 1 s; the replay is given 5 s and 2 s a call);
//   - no failing call changes the state digest (the replayer's own check, one thread);
//   - the replay's own trace reads back, replays to its end in turn, and that second replay
//     records exactly the same calls, results, outputs, data digests and simulated times (mcsim
//     replays an mcsim trace bit-exactly), unless it had to approximate host data.
// A replay whose process takes more than 2 GiB of memory (or asks malloc for as much: libFuzzer's
// limit, which the child inherits) is stopped and not counted (a trace may legitimately ask for
// more memory than this machine backs).
//
// The driver runs in the child, where libFuzzer in this process cannot see its coverage: the
// child folds every loaded module's coverage counters (their __sancov_cntrs sections) into a
// shared buffer before it exits, and this process adds them to its extra counters
// (__libfuzzer_extra_counters), so the fuzzer is led by what the driver did. Built only with
// -DMCSIM_BUILD_FUZZERS=ON and clang; run by scripts/fuzz.sh (docs/reliability.md, "Fuzzing").
#include <dirent.h>
#include <elf.h>
#include <fcntl.h>
#include <link.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "traces/lib/replayer.h"
#include "traces/lib/trace_diff.h"
#include "traces/lib/trace_reader.h"

namespace {

using namespace mcsim::trace;

constexpr size_t kCoverageBytes = size_t{1} << 16;
// libFuzzer collects these after every input, as it does its own counters.
__attribute__((section("__libfuzzer_extra_counters"))) uint8_t gChildCoverage[kCoverageBytes];
uint8_t* gShared = nullptr;  // the child's coverage, folded (MAP_SHARED)
std::string gDir;            // this process's scratch directory

// ---- In the child: its coverage counters, folded into gShared ----

struct Section {
  uint8_t* begin;
  size_t size;
  uint64_t salt;
};

// The __sancov_cntrs section of the ELF file `path` loaded at `base`.
void findCounters(const std::string& path, uintptr_t base, std::vector<Section>* out) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return;
  Elf64_Ehdr eh;
  std::vector<Elf64_Shdr> sh;
  std::string names;
  bool ok = ::pread(fd, &eh, sizeof eh, 0) == static_cast<ssize_t>(sizeof eh) && std::memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0 &&
            eh.e_shentsize == sizeof(Elf64_Shdr) && eh.e_shstrndx < eh.e_shnum;
  if (ok) {
    sh.resize(eh.e_shnum);
    const auto bytes = static_cast<ssize_t>(sh.size() * sizeof(Elf64_Shdr));
    ok = ::pread(fd, sh.data(), static_cast<size_t>(bytes), static_cast<off_t>(eh.e_shoff)) == bytes;
  }
  if (ok) {
    const Elf64_Shdr& strs = sh[eh.e_shstrndx];
    names.resize(strs.sh_size);
    ok = ::pread(fd, names.data(), names.size(), static_cast<off_t>(strs.sh_offset)) == static_cast<ssize_t>(names.size());
  }
  ::close(fd);
  if (!ok) return;
  for (const Elf64_Shdr& s : sh) {
    if (s.sh_name < names.size() && std::strcmp(names.c_str() + s.sh_name, "__sancov_cntrs") == 0) {
      out->push_back({reinterpret_cast<uint8_t*>(base + s.sh_addr), s.sh_size, std::hash<std::string>()(path)});
    }
  }
}

void foldChildCoverage() {
  std::vector<std::pair<std::string, uintptr_t>> objects;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        auto* list = static_cast<std::vector<std::pair<std::string, uintptr_t>>*>(data);
        const std::string name = info->dlpi_name != nullptr && info->dlpi_name[0] != '\0' ? info->dlpi_name : "/proc/self/exe";
        list->emplace_back(name, static_cast<uintptr_t>(info->dlpi_addr));
        return 0;
      },
      &objects);
  std::vector<Section> sections;
  for (const auto& [path, base] : objects) findCounters(path, base, &sections);
  for (const Section& s : sections) {
    for (size_t i = 0; i < s.size; ++i) {
      if (s.begin[i] == 0) continue;
      uint8_t& slot = gShared[(s.salt + i * 0x9E3779B1u) % kCoverageBytes];
      slot = std::max(slot, s.begin[i]);
    }
  }
}

// ---- In this process ----

[[noreturn]] void finding(const std::string& what, const std::string& childErr) {
  std::fprintf(stderr, "replay_fuzzer: %s\n", what.c_str());
  if (!childErr.empty()) std::fprintf(stderr, "the replay's standard error:\n%s\n", childErr.c_str());
  std::abort();
}

struct Run {
  ReplayOutcome outcome;
  bool tooMuchMemory = false;
};

// One replay of `t`, recording its own trace to DIR/NAME.jsonl, its coverage added to ours.
Run replay(const Trace& t, const std::string& name) {
  ReplayOptions o;
  o.library = MCSIM_FUZZ_LIBCUDA;
  o.recordTo = gDir + "/" + name + ".jsonl";
  o.faultsPath = gDir + "/" + name + ".plan";
  o.outcomeTo = gDir + "/" + name + ".outcome";
  o.stderrTo = gDir + "/" + name + ".stderr";
  o.timeoutSeconds = 5 + 2.0 * static_cast<double>(t.records.size());
  o.atChildEnd = foldChildCoverage;
  std::filesystem::remove_all(o.recordTo + ".files");
  std::memset(gShared, 0, kCoverageBytes);
  Run run;
  const ReplayChild child = startReplayChild(t, o);
  // Stops a child that takes more than 2 GiB of this machine's memory.
  std::atomic<bool> done{false};
  std::thread watch([&] {
    const std::string statm = "/proc/" + std::to_string(child.pid) + "/statm";
    const long page = ::sysconf(_SC_PAGESIZE);
    while (!done.load() && child.pid > 0) {
      if (FILE* f = std::fopen(statm.c_str(), "r")) {
        unsigned long size = 0, resident = 0;
        const int got = std::fscanf(f, "%lu %lu", &size, &resident);
        std::fclose(f);
        if (got == 2 && resident * static_cast<unsigned long>(page) > (2ul << 30)) {
          run.tooMuchMemory = true;
          ::kill(child.pid, SIGKILL);
          return;
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  });
  run.outcome = awaitReplayChild(child, o);
  done.store(true);
  watch.join();
  // libFuzzer's own malloc limit, which the child inherits, counts the same way.
  if (run.outcome.stderrText.find("libFuzzer: out-of-memory") != std::string::npos) run.tooMuchMemory = true;
  for (size_t i = 0; i < kCoverageBytes; ++i) gChildCoverage[i] = std::max(gChildCoverage[i], gShared[i]);
  return run;
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  char tmpl[] = "/tmp/mcsim-replay-fuzz-XXXXXX";
  if (::mkdtemp(tmpl) == nullptr) std::abort();
  gDir = tmpl;
  void* p = ::mmap(nullptr, kCoverageBytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) std::abort();
  gShared = static_cast<uint8_t*>(p);
  std::atexit([] { std::filesystem::remove_all(gDir); });
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Trace t;
  if (!parseTrace(std::string(reinterpret_cast<const char*>(data), size), "fuzz", &t).empty()) return 0;
  // What this fuzzer fixes: hangs are reported after 1 s and never abort the process, host data
  // is recorded in full (so that the second replay needs no filler), and the replay is on the
  // embedded node (a shared node's run is several traces).
  Json& env = t.header["env"];
  if (!env.is_object()) env = Json::object();
  env["MCSIM_HANG_GRACE_S"] = "1";
  env.erase("MCSIM_ON_HANG");
  t.header["data_limit"] = 1u << 20;
  t.nodeSettings = nullptr;

  const Run first = replay(t, "first");
  if (first.tooMuchMemory) return 0;
  const ReplayOutcome& r1 = first.outcome;
  if (!r1.finished) {
    // Threads that wait for each other in an order no run could have had (a fuzzed `fin`) may
    // wait for ever: only a trace of one thread must always finish.
    if (t.threads > 1 && r1.problem.find("did not finish") != std::string::npos) return 0;
    finding("the replay failed: " + r1.problem, r1.stderrText);
  }
  if (!r1.invariant.empty()) finding("invariant violated: " + r1.invariant, r1.stderrText);

  Trace recorded;
  if (const std::string why = readTrace(gDir + "/first.jsonl", &recorded); !why.empty()) {
    finding("the replay's own trace is refused: " + why, r1.stderrText);
  }
  const Run second = replay(recorded, "second");
  if (second.tooMuchMemory) return 0;
  const ReplayOutcome& r2 = second.outcome;
  if (!r2.finished) finding("the replay of the replay's own trace failed: " + r2.problem, r2.stderrText);
  if (!r2.invariant.empty()) finding("invariant violated replaying the replay's trace: " + r2.invariant, r2.stderrText);
  if (r2.approximated != 0) return 0;
  Trace again;
  if (const std::string why = readTrace(gDir + "/second.jsonl", &again); !why.empty()) {
    finding("the second replay's own trace is refused: " + why, r2.stderrText);
  }
  DiffOptions d;
  d.exact = true;
  const DiffResult diff = diffTraces(recorded, again, d);
  if (!diff.differences.empty()) {
    finding("replaying the replay's own trace gave another trace:\n" + describeDiff(diff, recorded, again, "replayed", d, false),
            r2.stderrText);
  }
  return 0;
}
