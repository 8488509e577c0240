// The node boundary's wire (fabric/node_ops.def, node_ops.h, wire.h): every operation of the .def
// crosses and comes back unchanged, and a truncated or garbled message is refused, without the
// node calling anything. The tests are made from the .def itself, so a new line is covered the
// moment it is written.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "fabric/node_ipc.h"
#include "fabric/node_ops.h"

namespace mcsim::fabric {
namespace {

using channel::Op;
using wire::Kinds;
using wire::Reader;
using wire::Values;
using wire::Writer;

// ---- Values that differ from their type's default in every field, and their comparison.

template <typename T>
struct IsVector : std::false_type {};
template <typename T>
struct IsVector<std::vector<T>> : std::true_type {};
template <typename T>
struct IsArray : std::false_type {};
template <size_t N>
struct IsArray<std::array<uint8_t, N>> : std::true_type {};

class Sampler {
 public:
  template <typename T>
  void fill(T* v) {
    if constexpr (std::is_same_v<T, bool>) {
      *v = true;
    } else if constexpr (std::is_enum_v<T>) {
      *v = static_cast<T>(1 + next_++ % 2);
    } else if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
      *v = static_cast<T>(-static_cast<int64_t>(next_++) * 1000003);  // negative: the sign crosses
    } else if constexpr (std::is_integral_v<T>) {
      *v = static_cast<T>(0x0102030405060708ull * next_++);  // every byte set
    } else if constexpr (std::is_same_v<T, double>) {
      *v = 0.25 * static_cast<double>(next_++);
    } else if constexpr (std::is_same_v<T, std::string>) {
      *v = "text " + std::to_string(next_++);
    } else if constexpr (IsVector<T>::value) {
      v->resize(2);
      for (auto& x : *v) fill(&x);
    } else if constexpr (IsArray<T>::value) {
      for (auto& b : *v) b = static_cast<uint8_t>(next_++);
    } else if constexpr (std::is_same_v<T, channel::ByteRun>) {
      *v = channel::ByteRun{kBytes, sizeof kBytes};
    } else {
      wire::Fields<T>::visit(*v, [this](auto&... f) { (fill(&f), ...); });
    }
  }

 private:
  static constexpr uint8_t kBytes[5] = {1, 2, 3, 4, 5};
  uint64_t next_ = 1;
};

template <typename T>
bool same(const T& a, const T& b) {
  if constexpr (std::is_same_v<T, channel::ByteRun>) {
    return a.size == b.size && std::memcmp(a.data, b.data, a.size) == 0;
  } else if constexpr (IsVector<T>::value) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
      if (!same(a[i], b[i])) return false;
    }
    return true;
  } else if constexpr (std::is_arithmetic_v<T> || std::is_enum_v<T> || std::is_same_v<T, std::string> ||
                       IsArray<T>::value) {
    return a == b;
  } else {
    bool equal = true;
    wire::Fields<T>::visit(a, [&](const auto&... fa) {
      wire::Fields<T>::visit(b, [&](const auto&... fb) { equal = (same(fa, fb) && ...); });
    });
    return equal;
  }
}

template <typename T>
std::vector<uint8_t> encoded(const T& v) {
  std::vector<uint8_t> out;
  Writer(&out).put(v);
  return out;
}

// ---- A NODE_OP: the client's request, the node's serve, the node's answer, the client's reading.

template <typename... K, size_t... I, typename F>
void withClientArgs(Kinds<K...>, Values<K...>& v, std::index_sequence<I...>, F&& f) {
  f(K::arg(std::get<I>(v))...);
}

// What the node's call sees: inputs equal to what the client sent; it answers with `sent`'s outputs.
template <typename K, typename A>
void serveArg(typename K::Value& sent, A&& a, bool* inputsSame) {
  if constexpr (K::kInput) {
    if constexpr (std::is_pointer_v<std::decay_t<A>>) {
      *inputsSame = *inputsSame && std::memcmp(a, sent.data(), sent.size()) == 0;
    } else {
      *inputsSame = *inputsSame && same<typename K::Value>(a, sent);
    }
  } else if constexpr (std::is_same_v<typename K::Value, std::decay_t<std::remove_pointer_t<std::decay_t<A>>>>) {
    *a = sent;
  } else {
    std::memcpy(a, sent.data(), sent.size());
  }
}

template <typename... K, size_t... I, typename... A>
void serveArgs(Kinds<K...>, [[maybe_unused]] Values<K...>& sent, std::index_sequence<I...>, [[maybe_unused]] bool* inputsSame,
               A&&... a) {
  (serveArg<K>(std::get<I>(sent), a, inputsSame), ...);
}

template <typename... K, size_t... I>
bool sameOutputs(Kinds<K...>, const Values<K...>& a, const Values<K...>& b, std::index_sequence<I...>) {
  bool equal = true;
  [[maybe_unused]] auto one = [&equal](auto kind, const auto& x, const auto& y) {
    if constexpr (!decltype(kind)::kInput) equal = equal && same(x, y);
  };
  (one(K{}, std::get<I>(a), std::get<I>(b)), ...);
  return equal;
}

template <typename R>
struct Result {
  using Type = std::conditional_t<wire::kReturnsValue<R>, R, int>;
};

// Serves `request` (as the node's dispatch does) with a call that checks its inputs against `sent`
// and answers `sent`'s outputs and `result`. Returns the answer; `called` and `inputsSame` say what
// the call saw.
template <typename R, typename... K>
std::vector<uint8_t> serveRequest(Kinds<K...> kinds, const std::vector<uint8_t>& request, Values<K...>& sent,
                                  const typename Result<R>::Type& result, bool* called, bool* inputsSame) {
  std::vector<uint8_t> answer;
  Writer w(&answer);
  Reader r(request.data(), request.size());
  auto reply = [&w](Status s) -> Writer& { return w.put(s); };
  *called = false;
  *inputsSame = true;
  wire::serve<R>(kinds, r, reply, [&](auto&&... a) -> R {
    *called = true;
    serveArgs(kinds, sent, std::index_sequence_for<K...>{}, inputsSame, a...);
    if constexpr (std::is_same_v<R, Status>) {
      return Status::kOk;
    } else if constexpr (!std::is_void_v<R>) {
      return result;
    }
  });
  return answer;
}

template <typename R, typename... K>
void checkNodeOp(Kinds<K...> kinds) {
  const auto index = std::index_sequence_for<K...>{};
  Sampler sampler;
  Values<K...> sent{};
  std::apply([&](auto&... v) { (sampler.fill(&v), ...); }, sent);
  typename Result<R>::Type result{};
  if constexpr (wire::kReturnsValue<R>) sampler.fill(&result);

  // The request, as the client writes it from the call's arguments.
  std::vector<uint8_t> request;
  Writer w(&request);
  withClientArgs(kinds, sent, index, [&](const auto&... a) { wire::sendInputs(kinds, w, a...); });

  bool called = false, inputsSame = false;
  const std::vector<uint8_t> answer = serveRequest<R>(kinds, request, sent, result, &called, &inputsSame);
  ASSERT_TRUE(called);
  EXPECT_TRUE(inputsSame) << "an input did not arrive as it was sent";

  // The answer, as the client reads it into the call's outputs.
  Values<K...> got{};
  typename Result<R>::Type gotResult{};
  Reader r(answer.data(), answer.size());
  EXPECT_EQ(Status::kOk, r.get<Status>());
  withClientArgs(kinds, got, index, [&](const auto&... a) {
    if constexpr (wire::kReturnsValue<R>) {
      wire::receiveOutputs(kinds, r, &gotResult, a...);
    } else {
      wire::receiveOutputs<R>(kinds, r, nullptr, a...);
    }
  });
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r.atEnd());
  EXPECT_TRUE(same(result, gotResult)) << "the return value did not come back as it was sent";
  EXPECT_TRUE(sameOutputs(kinds, got, sent, index)) << "an output did not come back as it was sent";

  // Every shorter request is refused, and the node calls nothing; so is one with a byte too many.
  for (size_t n = 0; n < request.size(); ++n) {
    const std::vector<uint8_t> cut(request.begin(), request.begin() + static_cast<long>(n));
    const std::vector<uint8_t> refused = serveRequest<R>(kinds, cut, sent, result, &called, &inputsSame);
    EXPECT_FALSE(called) << "served a request cut to " << n << " of " << request.size() << " bytes";
    EXPECT_EQ(encoded(Status::kInvalidValue), refused);
  }
  std::vector<uint8_t> longer = request;
  longer.push_back(0);
  EXPECT_EQ(encoded(Status::kInvalidValue), serveRequest<R>(kinds, longer, sent, result, &called, &inputsSame));
  EXPECT_FALSE(called);

  // Every shorter answer is refused by the client.
  for (size_t n = sizeof(uint32_t); n < answer.size(); ++n) {
    Reader cut(answer.data(), n);
    cut.get<Status>();
    Values<K...> ignored{};
    typename Result<R>::Type ignoredResult{};
    withClientArgs(kinds, ignored, index, [&](const auto&... a) {
      if constexpr (wire::kReturnsValue<R>) {
        wire::receiveOutputs(kinds, cut, &ignoredResult, a...);
      } else {
        wire::receiveOutputs<R>(kinds, cut, nullptr, a...);
      }
    });
    EXPECT_FALSE(cut.ok() && cut.atEnd()) << "read an answer cut to " << n << " of " << answer.size() << " bytes";
  }
}

#define NODE_OP(Return, name, params) \
  TEST(NodeOpWire, name) { checkNodeOp<Return>(wire::Kinds<MCSIM_NODE_KINDS(params)>{}); }
#define NODE_CALL(Return, name, params)
#define NODE_WIRE(name, inputs, outputs)
#include "fabric/node_ops.def"

// ---- A NODE_WIRE request and its reply: each crosses whole; cut short, it is refused.

template <typename T>
void checkStruct() {
  T sent{};
  Sampler().fill(&sent);
  const std::vector<uint8_t> bytes = encoded(sent);
  T got{};
  Reader r(bytes.data(), bytes.size());
  r.read(&got);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r.atEnd());
  EXPECT_TRUE(same(sent, got));
  for (size_t n = 0; n < bytes.size(); ++n) {
    Reader cut(bytes.data(), n);
    T partial{};
    cut.read(&partial);
    EXPECT_FALSE(cut.ok()) << "read a message cut to " << n << " of " << bytes.size() << " bytes";
  }
}

#define NODE_OP(Return, name, params)
#define NODE_CALL(Return, name, params)
#define NODE_WIRE(name, inputs, outputs)                                   \
  TEST(NodeWireRequest, name) { checkStruct<channel::Request<Op::name>>(); } \
  TEST(NodeWireReply, name) { checkStruct<channel::Reply<Op::name>>(); }
#include "fabric/node_ops.def"

TEST(NodeWire, RequestHeaderCrossesWhole) { checkStruct<channel::RequestHeader>(); }

TEST(NodeWire, AnAnswerStartsWithAnAdmissionOfTheReservedSize) {
  EXPECT_EQ(channel::kAdmissionBytes, encoded(Admission{1, 2, 3}).size());
}

TEST(NodeWire, OpNumbersFollowTheDeclarations) {
  EXPECT_STREQ("createAllocation", channel::opName(Op::createAllocation));
  EXPECT_EQ(1u, static_cast<uint32_t>(Op::createAllocation));
  EXPECT_STREQ("skipAdmissions", channel::opName(Op::skipAdmissions));
  EXPECT_STREQ("?", channel::opName(Op::kCount));
}

// ---- The encoding itself.

TEST(WireEncoding, IntegersAreLittleEndianAtTheirOwnWidth) {
  EXPECT_EQ((std::vector<uint8_t>{0x04, 0x03, 0x02, 0x01}), encoded(uint32_t{0x01020304}));
  EXPECT_EQ((std::vector<uint8_t>{0xfe, 0xff, 0xff, 0xff}), encoded(int32_t{-2}));
  EXPECT_EQ((std::vector<uint8_t>{0x02, 0x01}), encoded(uint16_t{0x0102}));
  EXPECT_EQ(8u, encoded(uint64_t{1}).size());
  EXPECT_EQ((std::vector<uint8_t>{1}), encoded(true));
  EXPECT_EQ(sizeof(int), encoded(Status::kOk).size());  // an enum: its underlying type's width
  EXPECT_EQ((std::vector<uint8_t>{2, 0, 0, 0, 'h', 'i'}), encoded(std::string("hi")));
}

TEST(WireEncoding, ABoolThatIsNeitherZeroNorOneIsRefused) {
  const uint8_t bytes[] = {2};
  Reader r(bytes, sizeof bytes);
  r.get<bool>();
  EXPECT_FALSE(r.ok());
}

TEST(WireEncoding, ACountLargerThanTheMessageIsRefusedWithoutAllocating) {
  const uint8_t bytes[] = {0xff, 0xff, 0xff, 0xff, 1, 2, 3};
  Reader r(bytes, sizeof bytes);
  const std::vector<uint64_t> v = r.get<std::vector<uint64_t>>();
  EXPECT_FALSE(r.ok());
  EXPECT_TRUE(v.empty());
  Reader s(bytes, sizeof bytes);
  EXPECT_EQ("", s.get<std::string>());
  EXPECT_FALSE(s.ok());
}

TEST(WireEncoding, ACountThatOverstatesItsElementsStopsAtTheEnd) {
  // Three elements announced, one and a half there.
  const uint8_t bytes[] = {3, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0};
  Reader r(bytes, sizeof bytes);
  const std::vector<uint64_t> v = r.get<std::vector<uint64_t>>();
  EXPECT_FALSE(r.ok());
  EXPECT_LE(v.size(), 2u);
}

// ---- The hello.

TEST(NodeHello, AHelloOfThisVersionIsRead) {
  ipc::Hello h;
  h.kind = ipc::HelloKind::kAttach;
  h.rank = 5;
  h.vaBase = 0x200000000000ull;
  ipc::Hello got;
  uint32_t version = 0;
  ASSERT_TRUE(ipc::decode(ipc::encode(h), &got, &version));
  EXPECT_EQ(ipc::kProtocolVersion, version);
  EXPECT_EQ(5, got.rank);
  EXPECT_EQ(h.vaBase, got.vaBase);
  EXPECT_EQ(ipc::kCapabilities, got.capabilities);
}

TEST(NodeHello, AHelloOfAnotherVersionIsRefusedWithItsVersion) {
  ipc::Hello h;
  h.version = ipc::kProtocolVersion + 7;
  ipc::Hello got;
  uint32_t version = 0;
  EXPECT_FALSE(ipc::decode(ipc::encode(h), &got, &version));
  EXPECT_EQ(ipc::kProtocolVersion + 7, version);
  // What the client of that version is told, from the node's refusal.
  ipc::Refusal refusal;
  refusal.version = ipc::kProtocolVersion + 7;  // as a node of that version would answer this driver
  refusal.reason = "whatever";
  const std::string line = ipc::describeRefusal("n1", ipc::encode(refusal));
  EXPECT_EQ("node 'n1' speaks wire protocol " + std::to_string(ipc::kProtocolVersion + 7) + ", this driver " +
                std::to_string(ipc::kProtocolVersion) + ": use a driver and a node of the same mcsim build",
            line);
}

TEST(NodeHello, AHelloOfProtocol3IsRecognised) {
  // Protocol 3 wrote the kind and the version as 8-byte fields, then the rank and the window.
  std::vector<uint8_t> old;
  Writer w(&old);
  w.put<uint64_t>(1).put<uint64_t>(3).put<uint64_t>(0).put<uint64_t>(0x200000000000ull);
  ipc::Hello got;
  uint32_t version = 0;
  EXPECT_FALSE(ipc::decode(old, &got, &version));
  EXPECT_EQ(3u, version);
  // Its refusal, as that version reads it, and what this driver makes of such an answer.
  const std::vector<uint8_t> answer = ipc::encodeRefusalForVersion3("too old");
  EXPECT_EQ(8u + 7u, answer.size());
  EXPECT_EQ("node 'n1' refused: too old (the node speaks an older wire protocol; this driver speaks " +
                std::to_string(ipc::kProtocolVersion) + ")",
            ipc::describeRefusal("n1", answer));
}

TEST(NodeHello, ATruncatedHelloIsRefused) {
  ipc::Hello h;
  const std::vector<uint8_t> bytes = ipc::encode(h);
  for (size_t n = 0; n < bytes.size(); ++n) {
    ipc::Hello got;
    uint32_t version = 0;
    EXPECT_FALSE(ipc::decode(std::vector<uint8_t>(bytes.begin(), bytes.begin() + static_cast<long>(n)), &got, &version))
        << n;
  }
}

}  // namespace
}  // namespace mcsim::fabric
