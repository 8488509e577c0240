// Plain data in bytes, for a shared node's transport (node_ipc.h, node_channel.h): little-endian
// host integers, strings and byte runs written one after another. A reader that runs past the end
// (a malformed or truncated message) reads zeros and says so with ok() == false; nothing it
// reads is ever trusted as a size to allocate without that check.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

namespace mcsim::fabric::wire {

class Writer {
 public:
  // Writes into `buf` (capacity `cap`); past it, the writer only counts (fits() == false).
  Writer(uint8_t* buf, size_t cap) : buf_(buf), cap_(cap) {}
  // Writes into a growing vector.
  explicit Writer(std::vector<uint8_t>* grow) : grow_(grow) {}

  template <typename T, std::enable_if_t<std::is_integral_v<T> || std::is_enum_v<T>, int> = 0>
  Writer& put(T v) {
    const uint64_t x = static_cast<uint64_t>(v);
    return bytes(&x, sizeof x);
  }
  Writer& put(bool v) { return put<uint64_t>(v ? 1 : 0); }
  Writer& put(double v) {
    uint64_t x = 0;
    std::memcpy(&x, &v, sizeof x);
    return put(x);
  }
  Writer& put(const std::string& s) {
    put<uint64_t>(s.size());
    return bytes(s.data(), s.size());
  }
  template <typename T>
  Writer& put(const std::vector<T>& v) {
    put<uint64_t>(v.size());
    for (const T& x : v) put(x);
    return *this;
  }
  Writer& bytes(const void* p, size_t n) {
    if (grow_ != nullptr) {
      const auto* b = static_cast<const uint8_t*>(p);
      grow_->insert(grow_->end(), b, b + n);
    } else if (used_ + n <= cap_) {
      if (n != 0) std::memcpy(buf_ + used_, p, n);
    } else {
      overflow_ = true;
    }
    used_ += n;
    return *this;
  }

  size_t size() const { return used_; }
  bool fits() const { return !overflow_; }

 private:
  uint8_t* buf_ = nullptr;
  size_t cap_ = 0;
  std::vector<uint8_t>* grow_ = nullptr;
  size_t used_ = 0;
  bool overflow_ = false;
};

class Reader {
 public:
  Reader(const uint8_t* buf, size_t size) : buf_(buf), size_(size) {}

  template <typename T, std::enable_if_t<std::is_integral_v<T> || std::is_enum_v<T>, int> = 0>
  T get() {
    uint64_t x = 0;
    bytes(&x, sizeof x);
    return static_cast<T>(x);
  }
  bool getBool() { return get<uint64_t>() != 0; }
  double getDouble() {
    const uint64_t x = get<uint64_t>();
    double v = 0;
    std::memcpy(&v, &x, sizeof v);
    return v;
  }
  std::string getString() {
    const uint64_t n = get<uint64_t>();
    if (n > size_ - pos_) {
      ok_ = false;
      pos_ = size_;
      return std::string();
    }
    std::string s(reinterpret_cast<const char*>(buf_ + pos_), n);
    pos_ += n;
    return s;
  }
  // A count of items that each take at least `minBytes`: refused (0, !ok()) if the rest of the
  // message cannot hold that many.
  uint64_t getCount(size_t minBytes = 8) {
    const uint64_t n = get<uint64_t>();
    if (minBytes != 0 && n > (size_ - pos_) / minBytes) {
      ok_ = false;
      pos_ = size_;
      return 0;
    }
    return n;
  }
  template <typename T>
  std::vector<T> getVector() {
    std::vector<T> v(getCount());
    for (T& x : v) x = get<T>();
    return v;
  }
  void bytes(void* out, size_t n) {
    if (n > size_ - pos_) {
      ok_ = false;
      std::memset(out, 0, n);
      pos_ = size_;
      return;
    }
    std::memcpy(out, buf_ + pos_, n);
    pos_ += n;
  }
  // A pointer to the next `n` bytes, which stay where they are; nullptr when there are fewer.
  const uint8_t* view(size_t n) {
    if (n > size_ - pos_) {
      ok_ = false;
      pos_ = size_;
      return nullptr;
    }
    const uint8_t* p = buf_ + pos_;
    pos_ += n;
    return p;
  }

  bool ok() const { return ok_; }

 private:
  const uint8_t* buf_;
  size_t size_;
  size_t pos_ = 0;
  bool ok_ = true;
};

}  // namespace mcsim::fabric::wire
