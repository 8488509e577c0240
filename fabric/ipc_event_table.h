// Events shared between processes (cuIpcGetEventHandle, cuIpcOpenEventHandle). An event made
// with CU_EVENT_INTERPROCESS has a node-wide record here: its last record point, which a record
// in any process that holds it replaces, and which a wait, query or synchronize in any of them
// reads. The holders are processes (each open, and the creating event, is one hold); the record
// goes with the last hold. The handle's 64 bytes are a FABRIC handle's encoding (export_table.h)
// of the event's key, whose kIpcEventKeyBit keeps it apart from allocation ids.
//
// Guarded by the node's lock (node_host.cpp).
#pragma once

#include <cstdint>
#include <map>

#include "fabric/node.h"
#include "model/digest.h"
#include "model/status.h"

namespace mcsim::fabric {

constexpr uint64_t kIpcEventKeyBit = uint64_t{1} << 62;

class IpcEventTable {
 public:
  // A new shared event, held by `process`, which made it; its key.
  uint64_t create(uint64_t process);
  // One more hold of `key` by `process`: kInvalidValue for no such event, kOwnProcess where
  // `process` made it (the real driver refuses to open an event in its own process).
  Status open(uint64_t key, uint64_t process);
  // One hold less; kInvalidValue where `process` holds none.
  Status release(uint64_t key, uint64_t process);
  // Every hold of `process` (it detached).
  void releaseAll(uint64_t process);
  // The last record point: set by a record, read by waits (nullptr: never recorded).
  Status record(uint64_t key, uint64_t process, WorkDone w);
  Status latest(uint64_t key, uint64_t process, WorkDone* w) const;
  // Whether `key` names a live shared event (for an export).
  bool exists(uint64_t key) const { return events_.count(key) != 0; }
  size_t count() const { return events_.size(); }
  void addToDigest(model::Digest& d) const;

 private:
  struct Event {
    uint64_t creator = 0;
    WorkDone latest;
    std::map<uint64_t, uint64_t> holds;  // process -> holds
  };
  const Event* heldBy(uint64_t key, uint64_t process) const;

  std::map<uint64_t, Event> events_;  // ordered: the digest walks it
  uint64_t next_ = 0;
};

}  // namespace mcsim::fabric
