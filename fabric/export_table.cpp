// Exported descriptors and FABRIC handles (export_table.h).
#include "fabric/export_table.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "fabric/fabric_manager.h"

namespace mcsim::fabric {

namespace {
constexpr char kFabricMagic[8] = {'m', 'c', 's', 'i', 'm', 'F', 'A', 'B'};
}  // namespace

Status ExportTable::exportPosix(uint64_t id, int host, int* fd) {
  // A real descriptor: a sealed memfd whose content names the node's object.
  char name[64];
  std::snprintf(name, sizeof name, "mcsim-%s-%llu", isMulticastId(id) ? "multicast" : "allocation",
                static_cast<unsigned long long>(id & ~kMulticastIdBit));
  UniqueFd f(memfd_create(name, MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!f) return Status::kOutOfMemory;
  char body[96];
  const int n = std::snprintf(body, sizeof body, "mcsim shareable v1 object %llu\n",
                              static_cast<unsigned long long>(id));
  struct stat st {};
  if (::write(f.get(), body, static_cast<size_t>(n)) != n || fstat(f.get(), &st) != 0) return Status::kOutOfMemory;
  fcntl(f.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL);
  // The lock that says whether a copy of the descriptor is still open, and the node's own
  // description of the file to look at it through.
  struct flock lk {};
  lk.l_type = F_WRLCK;
  lk.l_whence = SEEK_SET;
  lk.l_len = 1;
  const std::string self = "/proc/self/fd/" + std::to_string(f.get());
  UniqueFd probe(open(self.c_str(), O_RDONLY | O_CLOEXEC));
  if (fcntl(f.get(), F_OFD_SETLK, &lk) != 0 || !probe) return Status::kOutOfMemory;
  exports_[FileKey{static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino)}] = Record{id, host, std::move(probe)};
  *fd = f.release();
  return Status::kOk;
}

bool ExportTable::objectOfFile(uint64_t dev, uint64_t ino, uint64_t* id, int* host) const {
  auto it = exports_.find(FileKey{dev, ino});
  if (it == exports_.end()) return false;
  *id = it->second.object;
  *host = it->second.host;
  return true;
}

// Whether the lock of an export is still held, i.e. a copy of the exported descriptor is open.
bool ExportTable::descriptorOpen(const Record& r) {
  struct flock l {};
  l.l_type = F_RDLCK;
  l.l_whence = SEEK_SET;
  l.l_len = 1;
  if (fcntl(r.probe.get(), F_OFD_GETLK, &l) != 0) return true;  // cannot tell: keep the memory
  return l.l_type != F_UNLCK;
}

bool ExportTable::stillOpen(uint64_t id) const {
  for (const auto& [key, r] : exports_) {
    if (r.object == id && descriptorOpen(r)) return true;
  }
  return false;
}

void ExportTable::forget(uint64_t id) {
  for (auto e = exports_.begin(); e != exports_.end();) {
    e = (e->second.object == id) ? exports_.erase(e) : std::next(e);
  }
}

void ExportTable::addToDigest(model::Digest& d) const {
  d.add(exports_.size());
  for (const auto& [key, r] : exports_) d.add(r.object);
}

uint64_t ExportTable::fabricCheck(uint64_t id, uint32_t hostField) const {
  return (id * 0x9e3779b97f4a7c15ull) ^ 0x6d6373696d464142ull ^ (identity_ * 0xff51afd7ed558ccdull) ^
         (hostField * 0xc2b2ae3d27d4eb4full);
}

// The host field (bytes 32-35): 0 for any host, else the tray + 2 (1: the whole node).
void ExportTable::encodeFabric(uint64_t id, uint8_t out[64], int host) const {
  const uint32_t hostField = static_cast<uint32_t>(host - kAnyHost);
  std::memset(out, 0, 64);
  std::memcpy(out, kFabricMagic, 8);
  std::memcpy(out + 8, &id, 8);
  const uint64_t check = fabricCheck(id, hostField);
  std::memcpy(out + 16, &check, 8);
  std::memcpy(out + 24, &identity_, 8);
  std::memcpy(out + 32, &hostField, 4);
}

bool ExportTable::decodeFabric(const uint8_t in[64], uint64_t* id, int* host) const {
  uint64_t check = 0, identity = 0;
  uint32_t hostField = 0;
  std::memcpy(id, in + 8, 8);
  std::memcpy(&check, in + 16, 8);
  std::memcpy(&identity, in + 24, 8);
  std::memcpy(&hostField, in + 32, 4);
  if (host != nullptr) *host = static_cast<int>(hostField) + kAnyHost;
  return std::memcmp(in, kFabricMagic, 8) == 0 && check == fabricCheck(*id, hostField) && identity == identity_;
}

}  // namespace mcsim::fabric
