// Stable names for the values a trace must not contain: object handles, device and host addresses
// and OS handles differ from run to run (and between mcsim and a real driver), so the recorder
// writes `mem3`, `va2+4096`, `host1`, `fd1` instead, numbered in the order the objects appear.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "traces/lib/call_desc.h"

namespace mcsim::trace {

const char* handlePrefix(HandleKind k);  // "ctx", "mem", ...

// The recorder's side: live value -> name.
class Names {
 public:
  // A handle that a call takes: its name, or "" when the value was never seen (written raw).
  std::string handle(HandleKind k, uint64_t v) const;
  // An output handle: a new name (`fresh`, or the value was never seen) or the known one.
  std::string outHandle(HandleKind k, uint64_t v, bool fresh);

  // Regions: device ("va") and pinned host ("host") ranges. An address is written as the name of
  // the region holding it plus an offset; one past the end counts as inside (an end pointer).
  std::string newRegion(bool host, uint64_t base, uint64_t size);
  // "" when no region holds `a`.
  std::string address(bool host, uint64_t a) const;
  // An output address: inside a known region, or the start of a new unsized one.
  std::string outAddress(bool host, uint64_t a);

  // The name a function or kernel handle was looked up by (cuModuleGetFunction's or
  // cuLibraryGetKernel's `name`), so that a launch can be named without asking the driver.
  void setLabel(HandleKind k, uint64_t v, const std::string& label) { labels_[{static_cast<int>(k), v}] = label; }
  std::string label(HandleKind k, uint64_t v) const {
    auto it = labels_.find({static_cast<int>(k), v});
    return it == labels_.end() ? std::string() : it->second;
  }

  std::string newFd(int fd);
  std::string fd(int fd) const;
  // FABRIC and IPC handles: 64 opaque bytes, named "fabric1" / "ipc1" (`prefix`), numbered together.
  std::string newBlob(const std::string& bytes, const char* prefix = "fabric");
  std::string blob(const std::string& bytes) const;

 private:
  struct Region {
    std::string name;
    uint64_t size;
  };
  std::map<std::pair<int, uint64_t>, std::string> handles_;
  std::map<std::pair<int, uint64_t>, std::string> labels_;
  std::map<int, int> handleCount_;
  std::map<uint64_t, Region> regions_[2];
  int regionCount_[2] = {0, 0};
  std::map<int, std::string> fds_;
  int fdCount_ = 0;
  std::map<std::string, std::string> blobs_;
  int blobCount_ = 0;
};

// A parsed name: prefix, number, offset ("va2+4096" -> {"va", 2, 4096}).
struct ParsedName {
  std::string prefix;
  uint64_t offset = 0;
  std::string base;  // the name without the offset ("va2")
};
std::optional<ParsedName> parseName(const std::string& text);

}  // namespace mcsim::trace
