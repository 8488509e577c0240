// A small incremental digest (64-bit FNV-1a over typed fields) for state and trace digests.
// Fields are fed in a fixed order by the caller, never by iterating unordered containers.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string_view>
#include <vector>

namespace mcsim::model {

class Digest {
 public:
  Digest& add(uint64_t v) {
    for (int i = 0; i < 8; ++i) mix(static_cast<uint8_t>(v >> (8 * i)));
    return *this;
  }
  Digest& add(std::string_view s) {
    add(static_cast<uint64_t>(s.size()));
    for (char c : s) mix(static_cast<uint8_t>(c));
    return *this;
  }
  uint64_t value() const { return h_; }

 private:
  void mix(uint8_t b) {
    h_ ^= b;
    h_ *= 0x100000001b3ull;
  }
  uint64_t h_ = 0xcbf29ce484222325ull;
};

// The keys of a map, sorted: how a digest walks a hash map.
template <typename Map>
std::vector<typename Map::key_type> sortedKeys(const Map& m) {
  std::vector<typename Map::key_type> keys;
  keys.reserve(m.size());
  for (const auto& kv : m) keys.push_back(kv.first);
  std::sort(keys.begin(), keys.end());
  return keys;
}

}  // namespace mcsim::model
