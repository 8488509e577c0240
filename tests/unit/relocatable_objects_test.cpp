// Relocatable objects given to a node (Node::loadObjects, fabric/relocatable_objects.h): sent once
// per node and set, held by each process that gave or found them, read back with the image reader,
// released with the last process that holds them; every malformed piece refused, changing nothing.
#include "fabric/relocatable_objects.h"

#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "fabric/node_host.h"
#include "fabric/preset.h"
#include "tests/unit/status_printer.h"

namespace mcsim::fabric {
namespace {

// A fatbin of one uncompressed PTX entry for compute_`arch` (the layout module_image.cpp reads:
// a 16-byte header, a 64-byte entry header, the text padded with NULs to 8 bytes).
std::string ptxFatbin(const std::string& text, uint32_t arch = 90, uint64_t flags = 0, uint64_t raw = 0) {
  std::string payload = text;
  payload.resize((text.size() + 1 + 7) / 8 * 8, '\0');
  std::string entry(64, '\0');
  const uint16_t kind = 1;
  const uint32_t header = 64;
  const uint64_t size = payload.size();
  std::memcpy(&entry[0], &kind, 2);
  std::memcpy(&entry[4], &header, 4);
  std::memcpy(&entry[8], &size, 8);
  std::memcpy(&entry[28], &arch, 4);
  std::memcpy(&entry[40], &flags, 8);
  std::memcpy(&entry[56], &raw, 8);
  std::string fat(16, '\0');
  const uint32_t magic = 0xBA55ED50u;
  const uint16_t version = 1, headerBytes = 16;
  const uint64_t fatSize = entry.size() + payload.size();
  std::memcpy(&fat[0], &magic, 4);
  std::memcpy(&fat[4], &version, 2);
  std::memcpy(&fat[6], &headerBytes, 2);
  std::memcpy(&fat[8], &fatSize, 8);
  return fat + entry + payload;
}

const std::string kObjectA = ".version 8.0\n.target sm_90\n.address_size 64\n.visible .func f()\n{\nret;\n}\n";
const std::string kObjectB = ".version 8.0\n.target sm_90\n.address_size 64\n.extern .func f();\n"
                             ".visible .entry k()\n{\ncall f;\nret;\n}\n";

class LoadObjects : public ::testing::Test {
 protected:
  LoadObjects() : host_(loadPreset("hgx-h100"), NodeSettings()) {
    a_ = host_.attach(DeviceWindow::reserve());
    b_ = host_.attach(DeviceWindow::reserve());
  }
  // Sends `stored` in pieces of `piece` bytes as `p`; the last answer's `held`.
  static bool send(Node& p, const std::string& key, const std::string& stored, size_t piece) {
    bool held = false;
    for (size_t off = 0; off < stored.size() && !held; off += piece) {
      EXPECT_EQ(p.loadObjects(key, off, stored.substr(off, piece), &held), Status::kOk) << "at " << off;
    }
    return held;
  }
  NodeHost host_;
  std::unique_ptr<AttachedNode> a_, b_;
  const std::string stored_ = ptxFatbin(kObjectA) + ptxFatbin(kObjectB);
  const std::string key_ = RelocatableObjects::keyOf(stored_);
};

TEST_F(LoadObjects, SentOnceHeldBySecondProcessWithoutSendingReleasedWithTheLast) {
  ASSERT_EQ(RelocatableObjects::liveSets(), 0u);
  bool held = true;
  ASSERT_EQ(a_->loadObjects(key_, 0, "", &held), Status::kOk);
  EXPECT_FALSE(held) << "the node has no objects yet";
  EXPECT_TRUE(send(*a_, key_, stored_, 40));
  ASSERT_EQ(RelocatableObjects::liveSets(), 1u);
  auto set = RelocatableObjects::find(key_);
  ASSERT_NE(set, nullptr);
  EXPECT_EQ(set->objects(), 2u);
  EXPECT_EQ(set->textBytes(), kObjectA.size() + kObjectB.size());
  EXPECT_EQ(RelocatableObjects::liveTextBytes(), kObjectA.size() + kObjectB.size());
  EXPECT_TRUE(set->stored().empty()) << "a set read from sent bytes keeps only the text";
  // The node links with them as the driver would: k calls f, defined in the other object.
  std::string error;
  ASSERT_NE(set->linker(&error), nullptr) << error;
  ptx::LinkedPtx linked;
  EXPECT_TRUE(set->linker(&error)->link({"k"}, &linked, &error)) << error;
  EXPECT_EQ(linked.functionsDefined, 2u);

  // Another process with the same image sends nothing: the node has them.
  held = false;
  ASSERT_EQ(b_->loadObjects(key_, 0, "", &held), Status::kOk);
  EXPECT_TRUE(held);
  // A piece from a process that already holds them is answered the same, and changes nothing.
  held = false;
  ASSERT_EQ(b_->loadObjects(key_, 0, stored_.substr(0, 8), &held), Status::kOk);
  EXPECT_TRUE(held);

  a_.reset();
  EXPECT_EQ(RelocatableObjects::liveSets(), 1u) << "the second process still holds them";
  b_.reset();
  EXPECT_NE(RelocatableObjects::find(key_), nullptr) << "this test's own reference";
  // Without this test's reference the set goes with the last process that held it.
  const std::weak_ptr<RelocatableObjects> weak = set;
  set.reset();
  EXPECT_TRUE(weak.expired());
  EXPECT_EQ(RelocatableObjects::liveSets(), 0u);
  EXPECT_EQ(RelocatableObjects::liveTextBytes(), 0u);
}

TEST_F(LoadObjects, AProcessThatSendsWhatAnotherCompletedIsToldTheNodeHasThem) {
  bool held = true;
  ASSERT_EQ(a_->loadObjects(key_, 0, stored_.substr(0, 16), &held), Status::kOk);
  EXPECT_FALSE(held);
  EXPECT_TRUE(send(*b_, key_, stored_, 1000));
  ASSERT_EQ(a_->loadObjects(key_, 16, stored_.substr(16, 16), &held), Status::kOk);
  EXPECT_TRUE(held) << "a's next piece finds the set b completed";
  a_.reset();
  b_.reset();
  EXPECT_EQ(RelocatableObjects::liveSets(), 0u);
}

TEST_F(LoadObjects, MalformedPiecesAreRefusedAndChangeNothing) {
  // Half of the set sent, then every kind of bad piece; the rest sent after them completes it,
  // so none of them changed what had been sent.
  const size_t half = stored_.size() / 2;
  bool held = true;
  ASSERT_EQ(a_->loadObjects(key_, 0, stored_.substr(0, half), &held), Status::kOk);
  const uint64_t digest = a_->stateDigest();

  const std::string notFatbins(stored_.size(), 'x');
  const std::string twoEntries = [&] {
    // One fatbin whose payload holds two entries: not one object each.
    std::string a = ptxFatbin(kObjectA), b = ptxFatbin(kObjectB);
    std::string fat = a.substr(0, 16) + a.substr(16) + b.substr(16);
    const uint64_t fatSize = fat.size() - 16;
    std::memcpy(&fat[8], &fatSize, 8);
    return fat;
  }();
  // A zstd entry claiming more text than a node takes, and an object past the count allowed.
  const std::string huge = ptxFatbin(kObjectA, 90, 0x8000, kMaxObjectsTextBytes + 1);
  std::string many;
  for (size_t i = 0; i <= kMaxObjects; ++i) many += ptxFatbin("x");
  const std::string truncated = stored_.substr(0, stored_.size() - 8);
  const std::string sameSizeOtherBytes = [&] {
    std::string s = stored_;
    s[s.size() - 9] ^= 1;
    return s;
  }();
  struct Bad {
    const char* what;
    Status expect;
    std::function<Status()> call;
  };
  const std::vector<Bad> bad = {
      {"an empty key", Status::kInvalidValue, [&] { return a_->loadObjects("", 0, "", &held); }},
      {"a key of no hex digest", Status::kInvalidValue,
       [&] { return a_->loadObjects("zzzzzzzzzzzzzzzz-10", 0, "", &held); }},
      {"a key of size 0", Status::kInvalidValue, [&] { return a_->loadObjects("0123456789abcdef-0", 0, "", &held); }},
      {"a key past the size a node takes", Status::kInvalidValue,
       [&] { return a_->loadObjects("0123456789abcdef-" + std::to_string(kMaxObjectsStoredBytes + 1), 0, "x", &held); }},
      {"a piece before the end of what was sent", Status::kInvalidValue,
       [&] { return a_->loadObjects(key_, half - 1, stored_.substr(half - 1, 2), &held); }},
      {"a piece after the end of what was sent", Status::kInvalidValue,
       [&] { return a_->loadObjects(key_, half + 1, stored_.substr(half + 1), &held); }},
      {"a piece past the key's size", Status::kInvalidValue,
       [&] { return a_->loadObjects(key_, half, stored_.substr(half) + "x", &held); }},
      {"an empty piece past 0", Status::kInvalidValue, [&] { return a_->loadObjects(key_, half, "", &held); }},
      {"the last piece, other bytes than the key's", Status::kInvalidValue,
       [&] { return a_->loadObjects(key_, half, sameSizeOtherBytes.substr(half), &held); }},
      {"another process's piece at the end of this one's", Status::kInvalidValue,
       [&] { return b_->loadObjects(key_, half, stored_.substr(half), &held); }},
      {"bytes that are no fatbins", Status::kInvalidValue,
       [&] { return b_->loadObjects(RelocatableObjects::keyOf(notFatbins), 0, notFatbins, &held); }},
      {"a fatbin of two entries", Status::kInvalidValue,
       [&] { return b_->loadObjects(RelocatableObjects::keyOf(twoEntries), 0, twoEntries, &held); }},
      {"an entry claiming more text than a node takes", Status::kInvalidValue,
       [&] { return b_->loadObjects(RelocatableObjects::keyOf(huge), 0, huge, &held); }},
      {"more objects than a node takes", Status::kInvalidValue,
       [&] { return b_->loadObjects(RelocatableObjects::keyOf(many), 0, many, &held); }},
      {"a truncated object", Status::kInvalidValue,
       [&] { return b_->loadObjects(RelocatableObjects::keyOf(truncated), 0, truncated, &held); }},
  };
  for (const Bad& c : bad) {
    EXPECT_EQ(c.call(), c.expect) << c.what;
    EXPECT_EQ(RelocatableObjects::liveSets(), 0u) << c.what;
    EXPECT_EQ(a_->stateDigest(), digest) << c.what;
  }
  held = false;
  ASSERT_EQ(a_->loadObjects(key_, half, stored_.substr(half), &held), Status::kOk);
  EXPECT_TRUE(held) << "what was sent before the refusals is intact";
  a_.reset();
  b_.reset();
  EXPECT_EQ(RelocatableObjects::liveSets(), 0u);
}

TEST(RelocatableObjectsKeys, NameTheBytesAndTheirSize) {
  uint64_t size = 0;
  const std::string key = RelocatableObjects::keyOf("abc");
  EXPECT_EQ(key.size(), 16u + 2u);
  EXPECT_TRUE(RelocatableObjects::parseKey(key, &size));
  EXPECT_EQ(size, 3u);
  EXPECT_NE(RelocatableObjects::keyOf("abd"), key);
  EXPECT_FALSE(RelocatableObjects::parseKey(key + "0", &size) && size == 3u);
  EXPECT_FALSE(RelocatableObjects::parseKey("0123456789abcdef-007", &size));
  EXPECT_FALSE(RelocatableObjects::parseKey("0123456789ABCDEF-7", &size));
}

TEST(RelocatableObjectsKeys, TheMarkerOfAKernelsLinkReadsBack) {
  const std::string text = ".version 8.0\n" + callLinkMarker("0123456789abcdef-7", "_Z1kv");
  std::string key, kernel;
  ASSERT_TRUE(readCallLinkMarker(text, &key, &kernel));
  EXPECT_EQ(key, "0123456789abcdef-7");
  EXPECT_EQ(kernel, "_Z1kv");
  EXPECT_FALSE(readCallLinkMarker(".version 8.0\n", &key, &kernel));
}

}  // namespace
}  // namespace mcsim::fabric
