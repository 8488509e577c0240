// Sizes as people write them, one grammar for every place mcsim reads one (fault-plan arguments,
// `mcsim bench --sizes`): a number, whole or with a fraction, and an optional binary unit; and
// sizes as mcsim prints them for people (`mcsim topo`, the leak report at exit).
// Header-only, so that programs which link nothing of mcsim's (the all-reduce benchmark) share it.
#pragma once

#include <cerrno>
#include <cstdio>
#include <cstdint>
#include <cstdlib>
#include <string>

namespace mcsim::settings {

// "4096", "512B", "4K", "4KB", "4KiB", "1.5M", "2GiB", "1T": units are binary whichever way they
// are spelt (K, KB and KiB are all 1024; the letter may be lower case), as GPU tools count
// memory. A fraction must come out a whole number of bytes ("1.5K" is 1536, "1.1B" is
// refused). False for anything else, and for a value of 2^64 or more.
inline bool parseByteSize(const std::string& s, uint64_t* bytes) {
  size_t end = 0;
  while (end < s.size() && ((s[end] >= '0' && s[end] <= '9') || s[end] == '.')) ++end;
  const std::string num = s.substr(0, end);
  std::string unit = s.substr(end);
  if (unit.size() == 3 && unit[1] == 'i' && unit[2] == 'B') unit.resize(1);       // KiB
  else if (unit.size() == 2 && unit[1] == 'B' && unit[0] != 'B') unit.resize(1);  // KB
  int shift = 0;
  if (unit.empty() || unit == "B") shift = 0;
  else if (unit == "K" || unit == "k") shift = 10;
  else if (unit == "M" || unit == "m") shift = 20;
  else if (unit == "G" || unit == "g") shift = 30;
  else if (unit == "T" || unit == "t") shift = 40;
  else return false;
  const size_t dot = num.find('.');
  if (num.empty() || num.front() == '.' || num.back() == '.' || dot != num.rfind('.')) return false;
  if (dot == std::string::npos) {
    if (num.size() > 20) return false;
    errno = 0;
    const unsigned long long n = std::strtoull(num.c_str(), nullptr, 10);
    if (errno == ERANGE || n > (UINT64_MAX >> shift)) return false;
    *bytes = static_cast<uint64_t>(n) << shift;
    return true;
  }
  const double x = std::strtod(num.c_str(), nullptr) * static_cast<double>(uint64_t{1} << shift);
  if (!(x < 1.8e19) || x != static_cast<double>(static_cast<uint64_t>(x))) return false;
  *bytes = static_cast<uint64_t>(x);
  return true;
}

// Sizes for people: "2 MiB", "79.6 GiB", "512 bytes": binary units; whole numbers print without
// decimals, others with one.
inline std::string formatByteSize(uint64_t bytes) {
  static const char* const kUnits[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int unit = 0;
  uint64_t scale = 1;
  while (unit + 1 < 6 && bytes >= scale * 1024) {
    scale *= 1024;
    ++unit;
  }
  char text[48];
  if (bytes % scale == 0) {
    std::snprintf(text, sizeof text, "%llu %s", static_cast<unsigned long long>(bytes / scale), kUnits[unit]);
  } else {
    std::snprintf(text, sizeof text, "%.1f %s", static_cast<double>(bytes) / static_cast<double>(scale), kUnits[unit]);
  }
  return text;
}

}  // namespace mcsim::settings
