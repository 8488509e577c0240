// One attached process's handle values (CUmemGenericAllocationHandle, multicast handles).
//
// A value names an object of the node (object_table.h) and counts the process's references
// through it; values are small, distinct from any address, and never reused within a process.
// The table also remembers the value the process first had for each object it knew: the real
// driver answers cuMemRetainAllocationHandle, and property queries of a released value whose
// memory is still mapped, with it.
//
// Guarded by the node's lock (node_host.cpp).
#pragma once

#include <cstdint>
#include <map>
#include <unordered_map>
#include <vector>

#include "model/digest.h"
#include "model/status.h"

namespace mcsim::fabric {

struct HandleEntry {
  uint64_t object = 0;  // an allocation or multicast object id
  uint64_t refs = 0;
  bool imported = false;
};

class HandleTable {
 public:
  // A new value for `object` with one reference.
  uint64_t add(uint64_t object, bool imported);
  HandleEntry* find(uint64_t value);
  // One reference of `value` less; when it was the last, the value goes and `*dropped` names the
  // object whose reference the caller gives back (0: none). kInvalidValue for an unknown value.
  Status release(uint64_t value, uint64_t* dropped);
  // The object a value first named, if this process still knows that object (`*object`).
  bool firstKnownAs(uint64_t value, uint64_t* object) const;
  // cuMemRetainAllocationHandle: one more reference on the value the process first had for
  // `object`, made anew if it was released (then `*fresh`: the caller takes a reference on the
  // object too). The process had a value for every object it can reach.
  uint64_t retainFirst(uint64_t object, bool* fresh);
  // The object is gone from the node: the process knows no value for it any more.
  void forget(uint64_t object) { firstValues_.erase(object); }
  // Detaching: the object of every value, in value order (each value holds one reference on its
  // object, however many the value has); the table is empty afterwards.
  std::vector<uint64_t> takeAll();
  // Every value with the object it names, in value order (the table is unchanged).
  std::vector<std::pair<uint64_t, uint64_t>> values() const;
  // The objects the values name, each once, in object order (the table is unchanged).
  std::vector<uint64_t> objects() const;

  size_t size() const { return values_.size(); }
  void addToDigest(model::Digest& d) const;

 private:
  std::unordered_map<uint64_t, HandleEntry> values_;
  std::map<uint64_t, uint64_t> firstValues_;  // object -> the value the process first had for it
  uint64_t next_ = 0;
};

}  // namespace mcsim::fabric
