// Events shared between processes (ipc_event_table.h).
#include "fabric/ipc_event_table.h"

namespace mcsim::fabric {

uint64_t IpcEventTable::create(uint64_t process) {
  const uint64_t key = kIpcEventKeyBit | ++next_;
  Event& e = events_[key];
  e.creator = process;
  e.holds[process] = 1;
  return key;
}

Status IpcEventTable::open(uint64_t key, uint64_t process) {
  auto it = events_.find(key);
  if (it == events_.end()) return Status::kInvalidValue;
  if (it->second.creator == process) return Status::kOwnProcess;
  ++it->second.holds[process];
  return Status::kOk;
}

Status IpcEventTable::release(uint64_t key, uint64_t process) {
  auto it = events_.find(key);
  if (it == events_.end()) return Status::kInvalidValue;
  auto h = it->second.holds.find(process);
  if (h == it->second.holds.end()) return Status::kInvalidValue;
  if (--h->second == 0) it->second.holds.erase(h);
  if (it->second.holds.empty()) events_.erase(it);
  return Status::kOk;
}

void IpcEventTable::releaseAll(uint64_t process) {
  for (auto it = events_.begin(); it != events_.end();) {
    it->second.holds.erase(process);
    it = it->second.holds.empty() ? events_.erase(it) : std::next(it);
  }
}

const IpcEventTable::Event* IpcEventTable::heldBy(uint64_t key, uint64_t process) const {
  auto it = events_.find(key);
  if (it == events_.end() || it->second.holds.count(process) == 0) return nullptr;
  return &it->second;
}

Status IpcEventTable::record(uint64_t key, uint64_t process, WorkDone w) {
  if (heldBy(key, process) == nullptr) return Status::kInvalidValue;
  events_[key].latest = std::move(w);
  return Status::kOk;
}

Status IpcEventTable::latest(uint64_t key, uint64_t process, WorkDone* w) const {
  const Event* e = heldBy(key, process);
  if (e == nullptr) return Status::kInvalidValue;
  *w = e->latest;
  return Status::kOk;
}

void IpcEventTable::addToDigest(model::Digest& d) const {
  d.add(events_.size());
  for (const auto& [key, e] : events_) {
    d.add(key).add(e.creator).add(e.latest != nullptr).add(e.holds.size());
    for (const auto& [process, n] : e.holds) d.add(process).add(n);
  }
}

}  // namespace mcsim::fabric
