// Whether this host's kernel serves reads of untouched private anonymous memory from its shared
// zero page, as Linux does by default. Some kernels do not (the Firecracker guest kernel 6.18 of
// the development machine, 2026-11-28, backs every read fault with a page of its own); there, reads
// cost host memory and the tests that say they do not are skipped with this reason. Probed with a
// mapping of its own, independent of the code under test: read 64 pages, then ask
// /proc/self/smaps how many bytes of the mapping are anonymous (really backed).
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>

namespace mctest {

inline bool kernelServesReadsFromTheZeroPage() {
  static const bool answer = [] {
    const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE)), bytes = 64 * page;
    void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) return true;
    unsigned sum = 0;
    for (size_t i = 0; i < 64; ++i) sum += static_cast<volatile unsigned char*>(p)[i * page];
    unsigned long long anonymousKib = 0;
    if (FILE* f = std::fopen("/proc/self/smaps", "r")) {
      char line[512];
      bool inRegion = false;
      while (std::fgets(line, sizeof line, f) != nullptr) {
        unsigned long long lo = 0, hi = 0, v = 0;
        if (std::sscanf(line, "%llx-%llx", &lo, &hi) == 2 && line[0] != ' ') {
          inRegion = lo == reinterpret_cast<uintptr_t>(p);
        } else if (inRegion && std::sscanf(line, "Anonymous: %llu kB", &v) == 1) {
          anonymousKib = v;
          break;
        }
      }
      std::fclose(f);
    }
    munmap(p, bytes);
    return sum == 0 && anonymousKib == 0;
  }();
  return answer;
}

}  // namespace mctest
