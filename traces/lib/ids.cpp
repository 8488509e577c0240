#include "traces/lib/ids.h"

#include <cctype>

namespace mcsim::trace {

const char* handlePrefix(HandleKind k) {
  switch (k) {
    case HandleKind::kCtx: return "ctx";
    case HandleKind::kMem: return "mem";
    case HandleKind::kPool: return "pool";
    case HandleKind::kStream: return "stream";
    case HandleKind::kEvent: return "event";
    case HandleKind::kModule: return "module";
    case HandleKind::kFunction: return "func";
    case HandleKind::kLibrary: return "library";
    case HandleKind::kKernel: return "kernel";
    case HandleKind::kOther: return "obj";
    case HandleKind::kNone: break;
  }
  return "handle";
}

std::string Names::handle(HandleKind k, uint64_t v) const {
  auto it = handles_.find({static_cast<int>(k), v});
  return it == handles_.end() ? std::string() : it->second;
}

std::string Names::outHandle(HandleKind k, uint64_t v, bool fresh) {
  const std::pair<int, uint64_t> key{static_cast<int>(k), v};
  if (!fresh) {
    auto it = handles_.find(key);
    if (it != handles_.end()) return it->second;
  }
  std::string name = handlePrefix(k) + std::to_string(++handleCount_[static_cast<int>(k)]);
  handles_[key] = name;
  return name;
}

std::string Names::newRegion(bool host, uint64_t base, uint64_t size) {
  auto& m = regions_[host ? 1 : 0];
  // A new region replaces any older one it overlaps (the range was freed and handed out again).
  const uint64_t end = base + (size == 0 ? 1 : size);
  auto it = m.upper_bound(base);
  if (it != m.begin()) {
    auto prev = std::prev(it);
    if (prev->first + std::max<uint64_t>(prev->second.size, 1) > base) it = prev;
  }
  while (it != m.end() && it->first < end) it = m.erase(it);
  std::string name = (host ? "host" : "va") + std::to_string(++regionCount_[host ? 1 : 0]);
  m[base] = Region{name, size};
  return name;
}

std::string Names::address(bool host, uint64_t a) const {
  const auto& m = regions_[host ? 1 : 0];
  auto it = m.upper_bound(a);
  if (it == m.begin()) return "";
  --it;
  if (a - it->first > it->second.size) return "";
  const uint64_t off = a - it->first;
  return off == 0 ? it->second.name : it->second.name + "+" + std::to_string(off);
}

std::string Names::outAddress(bool host, uint64_t a) {
  std::string s = address(host, a);
  return s.empty() ? newRegion(host, a, 0) : s;
}

std::string Names::newFd(int fd) {
  std::string name = "fd" + std::to_string(++fdCount_);
  fds_[fd] = name;
  return name;
}

std::string Names::fd(int fd) const {
  auto it = fds_.find(fd);
  return it == fds_.end() ? std::string() : it->second;
}

std::string Names::newBlob(const std::string& bytes, const char* prefix) {
  std::string name = prefix + std::to_string(++blobCount_);
  blobs_[bytes] = name;
  return name;
}

std::string Names::blob(const std::string& bytes) const {
  auto it = blobs_.find(bytes);
  return it == blobs_.end() ? std::string() : it->second;
}

std::optional<ParsedName> parseName(const std::string& text) {
  size_t i = 0;
  while (i < text.size() && std::islower(static_cast<unsigned char>(text[i]))) ++i;
  if (i == 0 || i == text.size()) return std::nullopt;
  const size_t digits = i;
  while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
  if (i == digits || i - digits > 9) return std::nullopt;
  ParsedName p;
  p.prefix = text.substr(0, digits);
  p.base = text.substr(0, i);
  if (i == text.size()) return p;
  if (text[i] != '+' || i + 1 == text.size() || text.size() - i - 1 > 19) return std::nullopt;
  for (size_t j = i + 1; j < text.size(); ++j) {
    if (!std::isdigit(static_cast<unsigned char>(text[j]))) return std::nullopt;
  }
  p.offset = std::stoull(text.substr(i + 1));
  return p;
}

}  // namespace mcsim::trace
