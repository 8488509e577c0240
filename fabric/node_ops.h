// The node boundary's operations (node_ops.def) as the shared node's wire sees them: their Op
// numbers, the request that starts every message, the requests and replies of the transport's own
// operations, and how a NODE_OP's parameters cross (written once, generically, for every line).
//
// A request on a channel (node_channel.h) is a RequestHeader, then the operation's inputs in
// declaration order. Its answer is the request's Admission (kAdmissionBytes), the Status (for
// kHang followed by the report), and, when the Status is kOk, the return value (a Return other
// than Status or void) and the outputs in declaration order. Encodings: wire.h.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "fabric/node.h"
#include "fabric/node_channel.h"
#include "fabric/node_op_macros.h"
#include "fabric/wire.h"

namespace mcsim::fabric::channel {

// One number per NODE_OP and NODE_WIRE line, in the order of the .def.
enum class Op : uint32_t {
  kNone = 0,
#define NODE_OP(Return, name, params) name,
#define NODE_CALL(Return, name, params)
#define NODE_WIRE(name, inputs, outputs) name,
#include "fabric/node_ops.def"
  kCount,
};

// The operation's name in the .def ("?" for a number that is none).
inline const char* opName(Op op) {
  static const char* const kNames[] = {
      "none",
#define NODE_OP(Return, name, params) #name,
#define NODE_CALL(Return, name, params)
#define NODE_WIRE(name, inputs, outputs) #name,
#include "fabric/node_ops.def"
  };
  const auto i = static_cast<size_t>(op);
  return i < sizeof kNames / sizeof kNames[0] ? kNames[i] : "?";
}

// What every request starts with.
struct RequestHeader {
  Op op = Op::kNone;
  int64_t thread = 0;               // the calling thread's id (deadlock reports name it)
  uint64_t tag = 0;                 // the admission number a replay wants it to take (0: none)
  bool traced = false;              // whether it is traced (admission.h)
  std::vector<uint64_t> released;   // node ids of device work whose completions the client dropped
  std::vector<uint64_t> freed;      // segment blocks the client is done with
};

// What every answer starts with: an Admission, three uint64_t (node_ops_test checks the two agree).
constexpr size_t kAdmissionBytes = 3 * sizeof(uint64_t);

// The inputs and outputs of each NODE_WIRE line, as structs.
template <Op>
struct Request;
template <Op>
struct Reply;
#define NODE_OP(Return, name, params)
#define NODE_CALL(Return, name, params)
#define NODE_WIRE(name, inputs, outputs)         \
  template <>                                    \
  struct Request<Op::name> {                     \
    MCSIM_NODE_MEMBERS(inputs)                   \
  };                                             \
  template <>                                    \
  struct Reply<Op::name> {                       \
    MCSIM_NODE_MEMBERS(outputs)                  \
  };
#include "fabric/node_ops.def"

}  // namespace mcsim::fabric::channel

namespace mcsim::fabric::wire {

template <>
struct Fields<channel::RequestHeader> {
  template <typename S, typename V>
  static void visit(S& s, V&& v) {
    v(s.op, s.thread, s.tag, s.traced, s.released, s.freed);
  }
};

#define NODE_OP(Return, name, params)
#define NODE_CALL(Return, name, params)
#define NODE_WIRE(name, inputs, outputs)                   \
  template <>                                              \
  struct Fields<channel::Request<channel::Op::name>> {     \
    template <typename S, typename V>                      \
    static void visit(S& s, V&& v) {                       \
      (void)s;                                             \
      v(MCSIM_NODE_FIELDS(inputs));                        \
    }                                                      \
  };                                                       \
  template <>                                              \
  struct Fields<channel::Reply<channel::Op::name>> {       \
    template <typename S, typename V>                      \
    static void visit(S& s, V&& v) {                       \
      (void)s;                                             \
      v(MCSIM_NODE_FIELDS(outputs));                       \
    }                                                      \
  };
#include "fabric/node_ops.def"

// How each kind of NODE_OP parameter crosses. `Value` is what the node holds while it serves the
// call; arg(value) is the parameter as the Node interface takes it (the client has that already).
template <typename T>
struct In {  // IN(T, name)
  static constexpr bool kInput = true;
  using Value = std::decay_t<T>;
  static void send(Writer& w, const Value& a) { w.put(a); }
  static void read(Reader& r, Value* v) { r.read(v); }
  static const Value& arg(Value& v) { return v; }
};
template <typename T>
struct Out {  // OUT(T, name)
  static constexpr bool kInput = false;
  using Value = T;
  static void write(Writer& w, const Value& v) { w.put(v); }
  static void receive(Reader& r, T* a) { r.read(a); }
  static T* arg(Value& v) { return &v; }
};
template <size_t N>
struct InBytes {  // IN_BYTES(N, name)
  static constexpr bool kInput = true;
  using Value = std::array<uint8_t, N>;
  static void send(Writer& w, const uint8_t* a) { w.bytes(a, N); }
  static void read(Reader& r, Value* v) { r.read(v); }
  static const uint8_t* arg(Value& v) { return v.data(); }
};
template <size_t N>
struct OutBytes {  // OUT_BYTES(N, name)
  static constexpr bool kInput = false;
  using Value = std::array<uint8_t, N>;
  static void write(Writer& w, const Value& v) { w.put(v); }
  static void receive(Reader& r, uint8_t* a) { r.bytes(a, N); }
  static uint8_t* arg(Value& v) { return v.data(); }
};
template <typename... K>
struct Kinds {};

// Whether a NODE_OP's Return crosses back as a value (anything but Status and void).
template <typename R>
constexpr bool kReturnsValue = !std::is_same_v<R, Status> && !std::is_void_v<R>;

// ---- The client's side: the call's arguments, as the Node interface took them.

template <typename... K, typename... A>
void sendInputs(Kinds<K...>, Writer& w, const A&... a) {
  [[maybe_unused]] auto one = [&w](auto kind, const auto& x) {
    if constexpr (decltype(kind)::kInput) decltype(kind)::send(w, x);
  };
  (one(K{}, a), ...);
}

template <typename R, typename... K, typename... A>
void receiveOutputs(Kinds<K...>, Reader& r, R* result, const A&... a) {
  if constexpr (kReturnsValue<R>) r.read(result);
  [[maybe_unused]] auto one = [&r](auto kind, const auto& x) {
    if constexpr (!decltype(kind)::kInput) decltype(kind)::receive(r, x);
  };
  (one(K{}, a), ...);
}

// ---- The node's side: the values it reads, the call, the answer.

template <typename... K>
using Values = std::tuple<typename K::Value...>;

template <typename... K, size_t... I>
void readInputs(Kinds<K...>, Reader& r, Values<K...>& v, std::index_sequence<I...>) {
  [[maybe_unused]] auto one = [&r](auto kind, auto& x) {
    if constexpr (decltype(kind)::kInput) decltype(kind)::read(r, &x);
  };
  (one(K{}, std::get<I>(v)), ...);
}

template <typename... K, size_t... I>
void writeOutputs(Kinds<K...>, Writer& w, Values<K...>& v, std::index_sequence<I...>) {
  [[maybe_unused]] auto one = [&w](auto kind, auto& x) {
    if constexpr (!decltype(kind)::kInput) decltype(kind)::write(w, x);
  };
  (one(K{}, std::get<I>(v)), ...);
}

template <typename R, typename... K, size_t... I, typename Call>
R invokeWith(Kinds<K...>, Values<K...>& v, std::index_sequence<I...>, Call& call) {
  return call(K::arg(std::get<I>(v))...);
}

// Serves one NODE_OP: reads its inputs from `r` (a malformed request, or one with bytes left
// over, is answered kInvalidValue and not called), calls `call` with them, and answers through
// `reply` (which writes the Status and returns the writer for what follows).
template <typename R, typename... K, typename Call, typename ReplyFn>
void serve(Kinds<K...> kinds, Reader& r, ReplyFn&& reply, Call&& call) {
  const auto index = std::index_sequence_for<K...>{};
  Values<K...> values{};
  readInputs(kinds, r, values, index);
  if (!r.ok() || !r.atEnd()) {
    reply(Status::kInvalidValue);
    return;
  }
  if constexpr (std::is_same_v<R, Status>) {
    const Status s = invokeWith<R>(kinds, values, index, call);
    Writer& w = reply(s);
    if (s == Status::kOk) writeOutputs(kinds, w, values, index);
  } else if constexpr (std::is_void_v<R>) {
    invokeWith<R>(kinds, values, index, call);
    writeOutputs(kinds, reply(Status::kOk), values, index);
  } else {
    const R result = invokeWith<R>(kinds, values, index, call);
    Writer& w = reply(Status::kOk);
    w.put(result);
    writeOutputs(kinds, w, values, index);
  }
}

}  // namespace mcsim::fabric::wire
