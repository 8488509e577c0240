// The seeded random source. One seed (MCSIM_SEED) feeds every random choice through named,
// derived streams, so adding a consumer of randomness never shifts the draws of another.
#pragma once

#include <cstdint>
#include <string_view>

namespace mcsim::model {

// SplitMix64: small, fast, and good enough for fault triggers and workload choices.
class RandomStream {
 public:
  explicit RandomStream(uint64_t state) : state_(state) {}
  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  // Uniform in [0, 1).
  double uniform() { return static_cast<double>(next() >> 11) * (1.0 / 9007199254740992.0); }

 private:
  uint64_t state_;
};

// The stream named `name` under `seed`: the same pair always gives the same stream.
inline RandomStream deriveStream(uint64_t seed, std::string_view name) {
  uint64_t h = 0xcbf29ce484222325ull ^ seed;
  for (char c : name) {
    h ^= static_cast<uint8_t>(c);
    h *= 0x100000001b3ull;
  }
  return RandomStream(h);
}

}  // namespace mcsim::model
