// The relocatable objects a device-linked (-rdc) image was linked from, as the executor links
// them: their PTX, scanned once (ptx::PtxLinker), and the links of functions a kernel's link
// declared only, made at their first call (docs/ptx.md, "Linking a function at its first call").
//
// Known everywhere by a key made from their bytes as the image stores them (each object's fitting
// PTX entry, compressed, in a fatbin of its own: driver::prelinkedPtx's `stored`): the driver of
// every process that loads the image makes the same key. A process holds one set per key (a
// registry of the live sets, each kept alive by whoever holds it): the driver, which links its
// kernels with them, and the node, which links a function at its first call. The embedded node
// finds the driver's set there; a shared node, in another process, gets the stored bytes once
// (Node::loadObjects) and reads them itself (driver::readPtxFatbins), so that a second process
// with the same image sends nothing. The kernel's text names the set and the kernel
// (callLinkMarker), which is how the node knows what to link at a call.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "driver/module_image.h"
#include "ptx/ir.h"
#include "ptx/linker.h"

namespace mcsim::fabric {

// Bounds on what a node takes (docs/multiprocess.md, "Relocatable objects"): the stored bytes of
// one set (NCCL 2.28's: 23 MB), its objects (NCCL's: 127) and their PTX text (NCCL's: 131 MB),
// and what the sets a node holds and the sets being sent to it come to together.
constexpr uint64_t kMaxObjectsStoredBytes = uint64_t{256} << 20;
constexpr size_t kMaxObjects = 4096;
constexpr uint64_t kMaxObjectsTextBytes = uint64_t{1} << 30;
constexpr uint64_t kMaxObjectsNodeBytes = uint64_t{2} << 30;

class RelocatableObjects {
 public:
  // The key of stored bytes: "<digest>-<size>", the digest 16 hex digits (64-bit FNV-1a,
  // model::Digest, over the bytes).
  static std::string keyOf(const std::string& stored);
  // Whether `key` is a well-formed key of at most kMaxObjectsStoredBytes, and its size.
  static bool parseKey(const std::string& key, uint64_t* size);

  // The set a driver read from an image (`stored`, and the PTX of each object decompressed from it).
  // The registry's set of that key if there is one (the same bytes), else this one, registered.
  static std::shared_ptr<RelocatableObjects> fromImage(std::string stored, std::vector<driver::PtxEntry> ptx);
  // The set of `key` made from bytes sent to a node: refused (nullptr with `error`) unless they
  // are the key's bytes (size and digest) and read as objects within the bounds above. The
  // registry's set of that key if there is one, else this one, registered.
  static std::shared_ptr<RelocatableObjects> fromSent(const std::string& key, const std::string& stored,
                                                      std::string* error);
  // The registry's live set of `key`, or nullptr.
  static std::shared_ptr<RelocatableObjects> find(const std::string& key);
  // The live sets of this process, and their PTX text's bytes.
  static size_t liveSets();
  static uint64_t liveTextBytes();

  ~RelocatableObjects();
  const std::string& key() const { return key_; }
  // The stored bytes (a driver's set, for sending; empty in a set made from sent bytes, which
  // keeps only the text).
  const std::string& stored() const { return stored_; }
  uint64_t textBytes() const { return textBytes_; }
  size_t objects() const { return ptx_.size(); }
  uint32_t arch() const { return ptx_.empty() ? 0 : ptx_.front().arch; }

  // The objects scanned (once), for a kernel's link. Thread-safe.
  const ptx::PtxLinker* linker(std::string* error);
  // The link that adds `function` to `kernel`'s link at its first call (PtxLinker::linkOnCall),
  // made once per set and kept. Thread-safe.
  bool linkOnCall(const std::string& kernel, const std::string& function, std::string* text, std::string* error);
  // That link parsed (as module `name`), once per set for every context whose kernel calls it:
  // parsing NCCL's NVLS all-reduce function takes about a third of a second, and each of 8 GPUs'
  // contexts parsed it again before. Thread-safe.
  bool parsedCall(const std::string& kernel, const std::string& function, const std::string& name, ptx::Module* out,
                  std::string* error);

 private:
  RelocatableObjects(std::string key, std::string stored, std::vector<driver::PtxEntry> ptx);
  static std::shared_ptr<RelocatableObjects> registered(std::shared_ptr<RelocatableObjects> made);

  const std::string key_;
  const std::string stored_;
  const std::vector<driver::PtxEntry> ptx_;
  uint64_t textBytes_ = 0;
  bool registered_ = false;  // set under the registry's lock
  std::mutex mu_;
  bool scanned_ = false;
  std::string scanError_;
  std::unique_ptr<ptx::PtxLinker> linker_;
  std::map<std::pair<std::string, std::string>, std::string> calls_;  // (kernel, function) -> text
  std::mutex parsedMu_;  // apart from mu_: a parse takes long, and runs outside both
  std::map<std::string, std::shared_ptr<const ptx::Module>> parsed_;  // kernel, function, name ('\0' apart)
};

// The comment line that ends the text of `kernel`'s link when it declares functions to be linked
// at their first call: names the set and the kernel.
std::string callLinkMarker(const std::string& key, const std::string& kernel);
// Reads it back from the end of `text`; false when there is none.
bool readCallLinkMarker(const std::string& text, std::string* key, std::string* kernel);
// What the node does with a module's text that ends with a marker: sets `module`'s linkOnCall to link with the set `held` answers for the key (the sets the
// loading process holds); when it answers none, the call is refused saying the objects were not
// given to the node.
void attachCallLinker(const std::string& text, ptx::Module* module,
                      const std::function<std::shared_ptr<RelocatableObjects>(const std::string& key)>& held);

}  // namespace mcsim::fabric
