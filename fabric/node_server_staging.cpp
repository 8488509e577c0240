#include "fabric/node_server_staging.h"

#include <boost/interprocess/managed_shared_memory.hpp>

#include <new>

namespace mcsim::fabric::server {

namespace bip = boost::interprocess;

struct Staging::Segment {
  bip::managed_shared_memory memory;
};

Staging::Staging() = default;
Staging::~Staging() = default;

bool Staging::removeStale(const std::string& name) {
  try {
    bip::shared_memory_object old(bip::open_only, name.c_str(), bip::read_only);
  } catch (const bip::interprocess_exception&) {
    return false;
  }
  bip::shared_memory_object::remove(name.c_str());
  return true;
}

std::string Staging::create(const std::string& name, uint64_t bytes) {
  try {
    segment_ = std::make_unique<Segment>(
        Segment{bip::managed_shared_memory(bip::create_only, name.c_str(), bytes, nullptr, bip::permissions(0600))});
    header_ = segment_->memory.construct<channel::SegmentHeader>(channel::kHeaderName)();
  } catch (const bip::interprocess_exception& e) {
    return "cannot make the segment /dev/shm/" + name + ": " + e.what();
  }
  name_ = name;
  return "";
}

void Staging::removeName() { bip::shared_memory_object::remove(name_.c_str()); }

uint64_t Staging::size() { return segment_->memory.get_size(); }

uint64_t Staging::used() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    sweep();
  }
  return segment_->memory.get_size() - segment_->memory.get_free_memory();
}

channel::Channel* Staging::newChannel() {
  try {
    return segment_->memory.construct<channel::Channel>(bip::anonymous_instance)();
  } catch (const bip::interprocess_exception&) {
    return nullptr;
  }
}

void Staging::destroyChannel(channel::Channel* c) { segment_->memory.destroy_ptr(c); }

uint64_t Staging::offsetOf(const void* p) const {
  return static_cast<uint64_t>(segment_->memory.get_handle_from_address(p));
}

uint8_t* Staging::blockAt(uint64_t offset) {
  return static_cast<uint8_t*>(
      segment_->memory.get_address_from_handle(static_cast<bip::managed_shared_memory::handle_t>(offset)));
}

uint64_t Staging::newBlock(uint64_t owner, uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!graveyard_.empty()) sweep();
  void* p = segment_->memory.allocate(bytes == 0 ? 1 : bytes, std::nothrow);
  if (p == nullptr) return 0;
  const uint64_t offset = offsetOf(p);
  blocks_[owner][offset] = Block{bytes, nullptr};
  return offset;
}

void Staging::freeBlock(uint64_t owner, uint64_t offset) {
  std::lock_guard<std::mutex> lock(mu_);
  auto held = blocks_.find(owner);
  if (held == blocks_.end()) return;
  auto it = held->second.find(offset);
  if (it == held->second.end()) return;
  held->second.erase(it);
  segment_->memory.deallocate(blockAt(offset));
}

uint8_t* Staging::ownBlock(uint64_t owner, uint64_t offset, uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  auto held = blocks_.find(owner);
  if (held == blocks_.end()) return nullptr;
  auto it = held->second.find(offset);
  if (it == held->second.end() || it->second.bytes < bytes) return nullptr;
  return blockAt(offset);
}

void Staging::handOver(uint64_t owner, uint64_t offset, WorkDone user) {
  std::lock_guard<std::mutex> lock(mu_);
  auto held = blocks_.find(owner);
  if (held == blocks_.end()) return;
  auto it = held->second.find(offset);
  if (it == held->second.end()) return;
  Block b = std::move(it->second);
  held->second.erase(it);
  b.user = std::move(user);
  graveyard_.push_back({offset, std::move(b)});
}

void Staging::setUser(uint64_t owner, uint64_t offset, WorkDone user) {
  std::lock_guard<std::mutex> lock(mu_);
  auto held = blocks_.find(owner);
  if (held == blocks_.end()) return;
  auto it = held->second.find(offset);
  if (it != held->second.end()) it->second.user = std::move(user);
}

void Staging::reclaim(uint64_t owner) {
  std::lock_guard<std::mutex> lock(mu_);
  auto held = blocks_.find(owner);
  if (held != blocks_.end()) {
    for (auto& [offset, b] : held->second) graveyard_.push_back({offset, std::move(b)});
    blocks_.erase(held);
  }
  sweep();
}

size_t Staging::blockCount(uint64_t owner) {
  std::lock_guard<std::mutex> lock(mu_);
  auto held = blocks_.find(owner);
  return held == blocks_.end() ? 0 : held->second.size();
}

void Staging::sweep() {
  for (auto it = graveyard_.begin(); it != graveyard_.end();) {
    if (!it->second.user || it->second.user->done()) {
      segment_->memory.deallocate(blockAt(it->first));
      it = graveyard_.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace mcsim::fabric::server
