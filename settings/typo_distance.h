// How far a word is from the one that was meant: what names a likely typo in a setting's name or
// a preset's key. Header-only and free of cuda.h, for the preset loader as well as the settings.
#pragma once

#include <algorithm>
#include <string>
#include <vector>

namespace mcsim::settings {

// Optimal string alignment distance: insertions, deletions, substitutions and swaps of
// neighbours each cost one (MCSIM_TOPLOGY is one from MCSIM_TOPOLOGY, MCSIM_SEDE one from
// MCSIM_SEED, prots one from ports).
inline size_t typoDistance(const std::string& a, const std::string& b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

}  // namespace mcsim::settings
