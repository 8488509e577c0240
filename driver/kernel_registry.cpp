// The behavioural models of kernels, by name (include/mcsim/kernel_model.h). mcsim's own kernel
// library is registered on first use; programs add their own.
#include "driver/kernel_registry.h"

#include <map>
#include <mutex>
#include <set>

#include "driver/driver.h"

namespace mcsim {

namespace {

struct Registry {
  std::mutex mu;
  std::map<std::string, KernelModel> models;
  std::set<std::string> library;  // names whose model is still the library's own
};

Registry& registry() {
  static Registry* r = [] {
    auto* made = new Registry();  // leaked: launches may come from static destructors
    driver::registerLibraryKernels([made](const std::string& name, KernelModel m) {
      made->models[name] = std::move(m);
      made->library.insert(name);
    });
    return made;
  }();
  return *r;
}

}  // namespace

namespace driver {

void registerKernelModel(const std::string& name, KernelModel model) {
  Registry& r = registry();
  // Destroyed after the lock is let go: a C model's release function may call back in.
  KernelModel replaced;
  std::lock_guard<std::mutex> lock(r.mu);
  r.library.erase(name);
  KernelModel& slot = r.models[name];
  replaced = std::move(slot);
  slot = std::move(model);
}

bool hasKernelModel(const std::string& name) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  return r.models.count(name) != 0;
}

bool findKernelModel(const std::string& name, KernelModel* out) {
  // MCSIM_LIBRARY_KERNELS=ptx: the library's kernels run their PTX, as a program's own do.
  static const bool libraryFromPtx = driverSettings().libraryKernels == "ptx";
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.models.find(name);
  if (it == r.models.end()) return false;
  if (libraryFromPtx && r.library.count(name) != 0) return false;
  *out = it->second;
  return true;
}

}  // namespace driver
}  // namespace mcsim
