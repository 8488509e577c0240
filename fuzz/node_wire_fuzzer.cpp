// libFuzzer target for the shared node's wire messages: any bytes a client writes into its request
// channel are decoded as the node decodes them (node_server_dispatch.cpp: the RequestHeader, then
// the inputs of its Op) and are either refused (Reader::ok() false, or bytes left over) or a
// request that encodes back to exactly the same bytes; never a read outside them, an allocation a
// count in them asks for, a crash or undefined behaviour (built with ASan/UBSan). Run by
// scripts/fuzz.sh (docs/reliability.md, "Fuzzing").
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <utility>
#include <vector>

#include "fabric/node_ops.h"
#include "fabric/wire.h"

namespace {

using namespace mcsim::fabric;
using channel::Op;

// Writes a NODE_OP's inputs as the client does (sendInputs), from the values the node read.
template <typename... K, size_t... I>
void writeInputs(wire::Kinds<K...>, wire::Writer& w, wire::Values<K...>& v, std::index_sequence<I...>) {
  [[maybe_unused]] auto one = [&w](auto kind, auto& x) {
    if constexpr (decltype(kind)::kInput) decltype(kind)::send(w, decltype(kind)::arg(x));
  };
  (one(K{}, std::get<I>(v)), ...);
}

// The inputs of a NODE_OP after the header: read; if whole, written back.
template <typename... K>
bool roundTripOp(wire::Kinds<K...> kinds, wire::Reader& r, wire::Writer& w) {
  const auto index = std::index_sequence_for<K...>{};
  wire::Values<K...> values{};
  wire::readInputs(kinds, r, values, index);
  if (!r.ok() || !r.atEnd()) return false;
  writeInputs(kinds, w, values, index);
  return true;
}

// The inputs of a transport request (NODE_WIRE).
template <Op op>
bool roundTripWire(wire::Reader& r, wire::Writer& w) {
  channel::Request<op> q;
  r.read(&q);
  if (!r.ok() || !r.atEnd()) return false;
  w.put(q);
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  wire::Reader r(data, size);
  channel::RequestHeader header;
  r.read(&header);
  if (!r.ok()) return 0;
  std::vector<uint8_t> again;
  wire::Writer w(&again);
  w.put(header);
  bool whole = false;
  switch (header.op) {
#define NODE_OP(Return, name, params)                                              \
  case Op::name:                                                                    \
    whole = roundTripOp(wire::Kinds<MCSIM_NODE_KINDS(params)>{}, r, w);             \
    break;
#define NODE_CALL(Return, name, params)
#define NODE_WIRE(name, inputs, outputs) \
  case Op::name:                         \
    whole = roundTripWire<Op::name>(r, w); \
    break;
#include "fabric/node_ops.def"
    case Op::kNone:
    case Op::kCount:
    default:
      return 0;  // an Op the node does not know: answered kInvalidValue
  }
  if (!whole) return 0;
  // A message the node accepts has one encoding: the same bytes, written back.
  if (again.size() != size || (size != 0 && std::memcmp(again.data(), data, size) != 0)) std::abort();
  return 0;
}
