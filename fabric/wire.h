// Plain data in bytes, for a shared node's transport (node_ipc.h, node_channel.h).
//
// The encoding is explicit, the same on every host:
//   - an integer or an enum: its own width (int32_t 4 bytes, uint64_t 8, an enum its underlying
//     type's), little-endian, two's complement;
//   - bool: one byte, 0 or 1 (any other value is a garbled message);
//   - double: the 8 bytes of its IEEE-754 bit pattern, as a uint64_t;
//   - std::string and std::vector<T>: a uint32_t count, then the bytes or the elements;
//   - std::array<uint8_t, N>: its N bytes (fixed size, no count);
//   - a struct: its fields in the order its wire::Fields visits them (node_channel.h).
// A reader that runs past the end, meets a count larger than the rest of the message could hold
// (every element takes at least one byte) or a bool that is neither 0 nor 1 reads zeros from
// then on and says so with ok() == false: a malformed or truncated message is refused, never read
// out of bounds, and no count it carries is trusted as a size to allocate.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

namespace mcsim::fabric::wire {

class Writer;
class Reader;

// A type's wire form: static void put(Writer&, const T&) and static void get(Reader&, T*).
template <typename T, typename = void>
struct Codec;

// The fields of a struct, in wire order: specialise with
//   template <typename S, typename V> static void visit(S& s, V&& v) { v(s.a, s.b, ...); }
// (S is the struct, const or not), and the struct crosses as its fields.
template <typename T>
struct Fields;

class Writer {
 public:
  // Writes into `buf` (capacity `cap`); past it, the writer only counts (fits() == false).
  Writer(uint8_t* buf, size_t cap) : buf_(buf), cap_(cap) {}
  // Writes into a growing vector.
  explicit Writer(std::vector<uint8_t>* grow) : grow_(grow) {}

  template <typename T>
  Writer& put(const T& v) {
    Codec<T>::put(*this, v);
    return *this;
  }
  // An unsigned value of `width` bytes, little-endian.
  Writer& little(uint64_t v, size_t width) {
    uint8_t b[8];
    for (size_t i = 0; i < width; ++i) b[i] = static_cast<uint8_t>(v >> (8 * i));
    return bytes(b, width);
  }
  // A count (of string bytes or vector elements); one beyond uint32_t cannot be written.
  Writer& count(uint64_t n) {
    if (n > UINT32_MAX) overflow_ = true;
    return little(n, 4);
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

  template <typename T>
  T get() {
    T v{};
    Codec<T>::get(*this, &v);
    return v;
  }
  template <typename T>
  Reader& read(T* v) {
    Codec<T>::get(*this, v);
    return *this;
  }
  bool getBool() { return get<bool>(); }
  double getDouble() { return get<double>(); }
  std::string getString() { return get<std::string>(); }
  template <typename T>
  std::vector<T> getVector() {
    return get<std::vector<T>>();
  }

  // An unsigned value of `width` bytes, little-endian.
  uint64_t little(size_t width) {
    uint8_t b[8] = {};
    bytes(b, width);
    uint64_t v = 0;
    for (size_t i = 0; i < width; ++i) v |= static_cast<uint64_t>(b[i]) << (8 * i);
    return v;
  }
  // A count of items that each take at least one byte: refused (0, !ok()) when the rest of the
  // message cannot hold that many.
  uint64_t count() {
    const uint64_t n = little(4);
    if (n > size_ - pos_) {
      fail();
      return 0;
    }
    return n;
  }
  void bytes(void* out, size_t n) {
    if (n > size_ - pos_) {
      fail();
      std::memset(out, 0, n);
      return;
    }
    if (n != 0) std::memcpy(out, buf_ + pos_, n);
    pos_ += n;
  }
  // A pointer to the next `n` bytes, which stay where they are; nullptr when there are fewer.
  const uint8_t* view(size_t n) {
    if (n > size_ - pos_) {
      fail();
      return nullptr;
    }
    const uint8_t* p = buf_ + pos_;
    pos_ += n;
    return p;
  }
  // The message is malformed: nothing more is read from it.
  void fail() {
    ok_ = false;
    pos_ = size_;
  }

  bool ok() const { return ok_; }
  // Whether every byte was read (a message with bytes left over is malformed too).
  bool atEnd() const { return pos_ == size_; }

 private:
  const uint8_t* buf_;
  size_t size_;
  size_t pos_ = 0;
  bool ok_ = true;
};

template <typename T>
struct Codec<T, std::enable_if_t<(std::is_integral_v<T> && !std::is_same_v<T, bool>) || std::is_enum_v<T>>> {
  static_assert(sizeof(T) <= 8, "no integer wider than 64 bits crosses");
  static void put(Writer& w, T v) { w.little(static_cast<uint64_t>(v), sizeof(T)); }
  static void get(Reader& r, T* v) {
    const uint64_t x = r.little(sizeof(T));
    if constexpr (std::is_enum_v<T>) {
      *v = static_cast<T>(static_cast<std::underlying_type_t<T>>(x));
    } else {
      *v = static_cast<T>(x);  // two's complement: the low bytes of a signed value come back whole
    }
  }
};

template <>
struct Codec<bool> {
  static void put(Writer& w, bool v) { w.little(v ? 1 : 0, 1); }
  static void get(Reader& r, bool* v) {
    const uint64_t x = r.little(1);
    if (x > 1) r.fail();
    *v = x == 1;
  }
};

template <>
struct Codec<double> {
  static void put(Writer& w, double v) {
    uint64_t x = 0;
    std::memcpy(&x, &v, sizeof x);
    w.little(x, 8);
  }
  static void get(Reader& r, double* v) {
    const uint64_t x = r.little(8);
    std::memcpy(v, &x, sizeof x);
  }
};

template <>
struct Codec<std::string> {
  static void put(Writer& w, const std::string& s) { w.count(s.size()).bytes(s.data(), s.size()); }
  static void get(Reader& r, std::string* s) {
    const uint64_t n = r.count();
    const uint8_t* p = r.view(n);
    s->assign(p != nullptr ? reinterpret_cast<const char*>(p) : "", p != nullptr ? n : 0);
  }
};

template <typename T>
struct Codec<std::vector<T>> {
  static void put(Writer& w, const std::vector<T>& v) {
    w.count(v.size());
    for (const T& x : v) w.put(x);
  }
  static void get(Reader& r, std::vector<T>* v) {
    const uint64_t n = r.count();
    v->clear();
    // Element by element: a count that lies about what follows ends the loop at the first
    // element that is not there.
    for (uint64_t i = 0; i < n && r.ok(); ++i) v->push_back(r.get<T>());
  }
};

template <size_t N>
struct Codec<std::array<uint8_t, N>> {
  static void put(Writer& w, const std::array<uint8_t, N>& a) { w.bytes(a.data(), N); }
  static void get(Reader& r, std::array<uint8_t, N>* a) { r.bytes(a->data(), N); }
};

template <typename T>
struct Codec<T, std::void_t<decltype(sizeof(Fields<T>))>> {
  static void put(Writer& w, const T& s) {
    Fields<T>::visit(s, [&w](const auto&... f) { (w.put(f), ...); });
  }
  static void get(Reader& r, T* s) {
    Fields<T>::visit(*s, [&r](auto&... f) { (r.read(&f), ...); });
  }
};

}  // namespace mcsim::fabric::wire
