// The shared segment of a node process (node_channel.h): it makes the segment and its header,
// gives memory for request channels, and keeps the blocks in which host data of copies crosses
// (a source too large for a request, a destination the process copies out).
//
// A block belongs to the process that asked for it until that process frees it, a copy takes it
// over (a staged source), or the process goes; a block that no process holds any more goes back
// to the segment once the device work that reads or writes it is done. Its own lock guards the
// blocks; it is taken under no other lock of the node process and holds none while it is taken.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "fabric/node.h"
#include "fabric/node_channel.h"

namespace mcsim::fabric::server {

class Staging {
 public:
  Staging();
  ~Staging();
  Staging(const Staging&) = delete;
  Staging& operator=(const Staging&) = delete;

  // Removes the segment `name` if one is there (left by a node that died); whether it was.
  static bool removeStale(const std::string& name);
  // Makes the segment `name` (/dev/shm, mode 0600) of `bytes`, with its header. "" or the problem.
  std::string create(const std::string& name, uint64_t bytes);
  // Removes the segment's name (its memory lives on while attached processes map it).
  void removeName();
  channel::SegmentHeader& header() { return *header_; }
  // In bytes: the segment and what is allocated in it (blocks of finished work given back first).
  uint64_t size();
  uint64_t used();

  // Memory for one more request channel; nullptr when the segment is full.
  channel::Channel* newChannel();
  void destroyChannel(channel::Channel* c);
  // Where something in the segment lies, as the processes name it.
  uint64_t offsetOf(const void* p) const;

  // A block of `bytes` for process `owner`; its offset, 0 when the segment is full.
  uint64_t newBlock(uint64_t owner, uint64_t bytes);
  // `owner` is done with its block (nothing when it holds none at `offset`).
  void freeBlock(uint64_t owner, uint64_t offset);
  // The block of `owner` at `offset`, if it holds one there of at least `bytes`; else nullptr.
  uint8_t* ownBlock(uint64_t owner, uint64_t offset, uint64_t bytes);
  uint8_t* blockAt(uint64_t offset);
  // Device work `user` reads the block (a staged source): it leaves `owner` now and goes back to
  // the segment once `user` is done.
  void handOver(uint64_t owner, uint64_t offset, WorkDone user);
  // Device work `user` writes the block (a host destination): it stays `owner`'s, and outlives
  // `user` should `owner` go first.
  void setUser(uint64_t owner, uint64_t offset, WorkDone user);
  // `owner` is gone: each of its blocks goes back once the work that uses it is done.
  void reclaim(uint64_t owner);
  size_t blockCount(uint64_t owner);

 private:
  struct Block {
    uint64_t bytes = 0;
    WorkDone user;  // device work that reads or writes it, if any: the block outlives it
  };
  void sweep();  // under mu_

  struct Segment;  // the Boost.Interprocess managed segment
  std::unique_ptr<Segment> segment_;
  std::string name_;
  channel::SegmentHeader* header_ = nullptr;

  std::mutex mu_;  // guards what follows
  std::map<uint64_t, std::map<uint64_t, Block>> blocks_;  // owner -> offset -> block
  // Blocks no process holds any more, waiting for the device work that uses them.
  std::vector<std::pair<uint64_t, Block>> graveyard_;
};

}  // namespace mcsim::fabric::server
