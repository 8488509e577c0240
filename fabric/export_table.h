// Shareable handles of the node's objects: exported POSIX descriptors and FABRIC handles.
//
// A POSIX export is a real descriptor, a sealed memfd whose content names the object; the node
// keeps a record of it by the file it refers to (device and inode numbers), which is how an
// import anywhere recognises it. The node cannot see every process's descriptor table (a
// descriptor may be open in a process that never attached, or be in flight in a Unix socket), so
// the export carries a lock that tells: an open-file-description lock taken on the exported
// descriptor is held for as long as any copy of it (dup, fork, SCM_RIGHTS, pidfd_getfd) is open
// anywhere, and a second description of the same file that the record keeps sees whether it is.
//
// A FABRIC handle is 64 bytes: a magic, the object's id, a check value, and the node's identity
// (a shared node's name), so that bytes this node never made, or another node's, name nothing.
//
// Guarded by the node's lock (node_host.cpp).
#pragma once

#include <cstdint>
#include <map>

#include "fabric/unique_fd.h"
#include "model/digest.h"
#include "model/status.h"

namespace mcsim::fabric {

class ExportTable {
 public:
  // A new descriptor for object `id` (the caller owns it), exported on host `host` (the
  // exporting process's compute tray, -1: the whole node), recorded; kOutOfMemory when the
  // system refuses one.
  Status exportPosix(uint64_t id, int host, int* fd);
  // The object an exported descriptor's file names, and the host it was exported on; false for a
  // file that is none of this node's exports.
  bool objectOfFile(uint64_t dev, uint64_t ino, uint64_t* id, int* host) const;
  // Whether a descriptor exported for `id` is still open somewhere.
  bool stillOpen(uint64_t id) const;
  // Forgets the export records of `id` (the object is gone).
  void forget(uint64_t id);
  size_t count() const { return exports_.size(); }
  void addToDigest(model::Digest& d) const;

  // FABRIC handles. The identity is a hash of the node's name (0: the embedded node).
  void setIdentity(uint64_t identity) { identity_ = identity; }
  // The bytes also name the host they are good on: kAnyHost for FABRIC handles (the IMEX domain
  // spans the rack), the exporting process's tray (-1: the whole node) for IPC handles, which the
  // real driver resolves on its own host only.
  static constexpr int kAnyHost = -2;
  void encodeFabric(uint64_t id, uint8_t out[64], int host = kAnyHost) const;
  // The object `in` names, and its host, if this node made it; false otherwise.
  bool decodeFabric(const uint8_t in[64], uint64_t* id, int* host = nullptr) const;

 private:
  struct FileKey {
    uint64_t dev;
    uint64_t ino;
    bool operator<(const FileKey& o) const { return dev != o.dev ? dev < o.dev : ino < o.ino; }
  };
  struct Record {
    uint64_t object = 0;
    int host = -1;   // the exporting process's tray (-1: the whole node)
    UniqueFd probe;  // the node's own description of the exported file, to look at the lock through
  };
  static bool descriptorOpen(const Record& r);
  uint64_t fabricCheck(uint64_t id, uint32_t hostField) const;

  std::map<FileKey, Record> exports_;  // ordered: the digest walks it
  uint64_t identity_ = 0;
};

}  // namespace mcsim::fabric
