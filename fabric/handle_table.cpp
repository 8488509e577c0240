// One process's handle values (handle_table.h).
#include "fabric/handle_table.h"

#include <algorithm>
#include <set>

namespace mcsim::fabric {

namespace {
// Handle values are small, distinct from any address, and never reused within a process.
constexpr uint64_t kHandleBase = 0x1000;
constexpr uint64_t kHandleStride = 0x10;
}  // namespace

uint64_t HandleTable::add(uint64_t object, bool imported) {
  const uint64_t value = kHandleBase + kHandleStride * next_++;
  values_[value] = HandleEntry{object, 1, imported};
  firstValues_.emplace(object, value);  // kept if the process had one before
  return value;
}

HandleEntry* HandleTable::find(uint64_t value) {
  auto it = values_.find(value);
  return it == values_.end() ? nullptr : &it->second;
}

Status HandleTable::release(uint64_t value, uint64_t* dropped) {
  *dropped = 0;
  auto it = values_.find(value);
  if (it == values_.end()) return Status::kInvalidValue;
  if (--it->second.refs == 0) {
    *dropped = it->second.object;
    values_.erase(it);
  }
  return Status::kOk;
}

bool HandleTable::firstKnownAs(uint64_t value, uint64_t* object) const {
  for (const auto& [id, first] : firstValues_) {
    if (first != value) continue;
    *object = id;
    return true;
  }
  return false;
}

uint64_t HandleTable::retainFirst(uint64_t object, bool* fresh) {
  const uint64_t first = firstValues_.at(object);
  auto h = values_.find(first);
  *fresh = h == values_.end();
  if (*fresh) {
    values_[first] = HandleEntry{object, 1, false};
  } else {
    ++h->second.refs;
  }
  return first;
}

std::vector<uint64_t> HandleTable::takeAll() {
  std::vector<uint64_t> objects;
  for (uint64_t value : model::sortedKeys(values_)) objects.push_back(values_.at(value).object);
  values_.clear();
  return objects;
}

std::vector<uint64_t> HandleTable::objects() const {
  std::set<uint64_t> objects;
  for (const auto& [value, h] : values_) objects.insert(h.object);
  return {objects.begin(), objects.end()};
}

void HandleTable::addToDigest(model::Digest& d) const {
  d.add(next_);
  d.add(values_.size());
  for (uint64_t value : model::sortedKeys(values_)) {
    const HandleEntry& h = values_.at(value);
    d.add(value).add(h.object).add(h.refs).add(h.imported ? 1 : 0);
  }
  d.add(firstValues_.size());
  for (const auto& [id, value] : firstValues_) d.add(id).add(value);
}

std::vector<std::pair<uint64_t, uint64_t>> HandleTable::values() const {
  std::vector<std::pair<uint64_t, uint64_t>> out;
  out.reserve(values_.size());
  for (const auto& [value, entry] : values_) out.emplace_back(value, entry.object);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace mcsim::fabric
