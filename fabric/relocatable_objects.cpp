// Relocatable objects for linking at a first call (relocatable_objects.h).
#include "fabric/relocatable_objects.h"

#include <cinttypes>
#include <cstdio>
#include <cstring>

#include "model/digest.h"
#include "ptx/parser.h"

namespace mcsim::fabric {
namespace {

constexpr const char kMarker[] = "// mcsim: functions linked at their first call: objects ";

// The live sets by key; each is kept alive by its holders, and leaves the registry when the last
// goes (~RelocatableObjects).
struct Registry {
  std::mutex mu;
  std::map<std::string, std::weak_ptr<RelocatableObjects>> sets;
  uint64_t textBytes = 0;
};
Registry& registry() {
  static auto* r = new Registry();  // leaked: sets may go during static destruction
  return *r;
}

bool isHex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }

}  // namespace

std::string RelocatableObjects::keyOf(const std::string& stored) {
  model::Digest d;
  d.add(std::string_view(stored));
  char buf[64];
  std::snprintf(buf, sizeof buf, "%016" PRIx64 "-%zu", d.value(), stored.size());
  return buf;
}

bool RelocatableObjects::parseKey(const std::string& key, uint64_t* size) {
  if (key.size() < 18 || key.size() > 16 + 1 + 20 || key[16] != '-') return false;
  for (size_t i = 0; i < 16; ++i)
    if (!isHex(key[i])) return false;
  uint64_t n = 0;
  for (size_t i = 17; i < key.size(); ++i) {
    if (key[i] < '0' || key[i] > '9' || (i == 17 && key[i] == '0' && key.size() > 18)) return false;
    if (n > kMaxObjectsStoredBytes) return false;
    n = n * 10 + static_cast<uint64_t>(key[i] - '0');
  }
  if (n == 0 || n > kMaxObjectsStoredBytes) return false;
  *size = n;
  return true;
}

RelocatableObjects::RelocatableObjects(std::string key, std::string stored, std::vector<driver::PtxEntry> ptx)
    : key_(std::move(key)), stored_(std::move(stored)), ptx_(std::move(ptx)) {
  for (const driver::PtxEntry& e : ptx_) textBytes_ += e.text.size();
}

RelocatableObjects::~RelocatableObjects() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.sets.find(key_);
  // Only this set's entry: another of the same key may have been registered since it expired.
  if (!registered_) return;
  if (it != r.sets.end() && it->second.expired()) r.sets.erase(it);
  r.textBytes -= textBytes_;
}

std::shared_ptr<RelocatableObjects> RelocatableObjects::registered(std::shared_ptr<RelocatableObjects> made) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  std::weak_ptr<RelocatableObjects>& slot = r.sets[made->key_];
  if (auto live = slot.lock()) return live;
  slot = made;
  made->registered_ = true;
  r.textBytes += made->textBytes_;
  return made;
}

std::shared_ptr<RelocatableObjects> RelocatableObjects::fromImage(std::string stored, std::vector<driver::PtxEntry> ptx) {
  std::string key = keyOf(stored);
  return registered(std::shared_ptr<RelocatableObjects>(
      new RelocatableObjects(std::move(key), std::move(stored), std::move(ptx))));
}

std::shared_ptr<RelocatableObjects> RelocatableObjects::fromSent(const std::string& key, const std::string& stored,
                                                                 std::string* error) {
  uint64_t size = 0;
  if (!parseKey(key, &size)) {
    *error = "'" + key.substr(0, 64) + "' is no key of relocatable objects";
    return nullptr;
  }
  if (keyOf(stored) != key) {
    *error = "the " + std::to_string(stored.size()) + " bytes sent are not those of key " + key;
    return nullptr;
  }
  if (auto live = find(key)) return live;
  std::vector<driver::PtxEntry> ptx;
  std::string why;
  if (!driver::readPtxFatbins(reinterpret_cast<const uint8_t*>(stored.data()), stored.size(), kMaxObjects,
                              kMaxObjectsTextBytes, &ptx, &why)) {
    *error = "the relocatable objects " + key + " cannot be read: " + why;
    return nullptr;
  }
  return registered(std::shared_ptr<RelocatableObjects>(new RelocatableObjects(key, std::string(), std::move(ptx))));
}

std::shared_ptr<RelocatableObjects> RelocatableObjects::find(const std::string& key) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.sets.find(key);
  return it == r.sets.end() ? nullptr : it->second.lock();
}

size_t RelocatableObjects::liveSets() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  size_t n = 0;
  for (const auto& [key, set] : r.sets) n += set.expired() ? 0 : 1;
  return n;
}

uint64_t RelocatableObjects::liveTextBytes() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  return r.textBytes;
}

const ptx::PtxLinker* RelocatableObjects::linker(std::string* error) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!scanned_) {
    scanned_ = true;
    std::vector<ptx::LinkObject> objects;
    for (size_t i = 0; i < ptx_.size(); ++i) {
      objects.push_back({"relocatable object " + std::to_string(i) + " (compute_" + std::to_string(ptx_[i].arch) +
                             ".ptx)",
                         &ptx_[i].text});
    }
    linker_ = std::make_unique<ptx::PtxLinker>(std::move(objects));
    if (!linker_->scan(&scanError_)) linker_.reset();
  }
  if (linker_ == nullptr) *error = scanError_;
  return linker_.get();
}

bool RelocatableObjects::linkOnCall(const std::string& kernel, const std::string& function, std::string* text,
                                    std::string* error) {
  const ptx::PtxLinker* l = linker(error);
  if (l == nullptr) return false;
  std::lock_guard<std::mutex> lock(mu_);
  auto c = calls_.find({kernel, function});
  if (c == calls_.end()) {
    ptx::LinkedPtx call;
    if (!l->linkOnCall(kernel, function, &call, error)) return false;
    c = calls_.emplace(std::make_pair(kernel, function), std::move(call.text)).first;
  }
  *text = c->second;
  return true;
}

bool RelocatableObjects::parsedCall(const std::string& kernel, const std::string& function, const std::string& name,
                                    ptx::Module* out, std::string* error) {
  const std::string key = kernel + '\0' + function + '\0' + name;
  {
    std::lock_guard<std::mutex> lock(parsedMu_);
    auto it = parsed_.find(key);
    if (it != parsed_.end()) {
      *out = *it->second;
      return true;
    }
  }
  std::string text;
  if (!linkOnCall(kernel, function, &text, error)) return false;
  auto m = std::make_shared<ptx::Module>();
  if (!ptx::parseModule(text, name, m.get(), error, /*lenient=*/true)) return false;
  *out = *m;
  std::lock_guard<std::mutex> lock(parsedMu_);
  parsed_.emplace(key, std::move(m));  // a second thread's parse of it meanwhile is dropped
  return true;
}

std::string callLinkMarker(const std::string& key, const std::string& kernel) {
  return std::string(kMarker) + key + " kernel " + kernel + "\n";
}

bool readCallLinkMarker(const std::string& text, std::string* key, std::string* kernel) {
  const size_t at = text.rfind(kMarker);
  if (at == std::string::npos) return false;
  const size_t end = text.find('\n', at);
  const std::string line = text.substr(at + sizeof kMarker - 1, end == std::string::npos ? std::string::npos : end - at - (sizeof kMarker - 1));
  const size_t k = line.find(" kernel ");
  if (k == std::string::npos) return false;
  *key = line.substr(0, k);
  *kernel = line.substr(k + 8);
  return !key->empty() && !kernel->empty();
}

void attachCallLinker(const std::string& text, ptx::Module* module,
                      const std::function<std::shared_ptr<RelocatableObjects>(const std::string& key)>& held) {
  std::string key, kernel;
  if (!readCallLinkMarker(text, &key, &kernel)) return;
  std::shared_ptr<RelocatableObjects> objects = held(key);
  if (objects == nullptr) {
    module->linkOnCall = [key](const std::string&, ptx::Module*, std::string* why) {
      *why = "the relocatable objects it was linked from (" + key + ") were not given to the node (docs/nccl.md)";
      return false;
    };
    return;
  }
  const std::string name = module->name;
  module->linkOnCall = [objects, kernel, name](const std::string& function, ptx::Module* extra, std::string* why) {
    return objects->parsedCall(kernel, function, name, extra, why);
  };
}

}  // namespace mcsim::fabric
