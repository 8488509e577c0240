#include "fabric/device_window.h"

#include <sys/mman.h>

#include <atomic>
#include <cstdio>
#include <utility>

namespace mcsim::fabric {

namespace {
// Windows of this process now: when one is, the fixed range is expected to be taken.
std::atomic<int> gLiveWindows{0};
}  // namespace

DeviceWindow DeviceWindow::reserve() {
  constexpr int kFlags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;
  void* want = reinterpret_cast<void*>(kDeviceWindowBase);
  void* p = mmap(want, kDeviceWindowSize, PROT_NONE, kFlags | MAP_FIXED_NOREPLACE, -1, 0);
  if (p == want) return DeviceWindow(p, kDeviceWindowBase);
  // (A kernel without MAP_FIXED_NOREPLACE treats it as a hint and may place the map elsewhere.)
  if (p != MAP_FAILED) munmap(p, kDeviceWindowSize);
  p = mmap(nullptr, kDeviceWindowSize, PROT_NONE, kFlags, -1, 0);
  if (p == MAP_FAILED) return DeviceWindow();
  if (gLiveWindows.load() == 0) {
    std::fprintf(stderr, "mcsim: the device address window at 0x%llx is taken; device addresses "
                         "will differ from run to run\n", static_cast<unsigned long long>(kDeviceWindowBase));
  }
  // Aligned, so that granularity rules hold for every address in it.
  const auto start = reinterpret_cast<uint64_t>(p);
  return DeviceWindow(p, (start + kDeviceWindowAlignment - 1) & ~(kDeviceWindowAlignment - 1));
}

DeviceWindow::DeviceWindow(void* mapping, uint64_t base) : mapping_(mapping), base_(base) { gLiveWindows.fetch_add(1); }

DeviceWindow::DeviceWindow(DeviceWindow&& other) noexcept
    : mapping_(std::exchange(other.mapping_, nullptr)),
      base_(std::exchange(other.base_, 0)) {}

DeviceWindow& DeviceWindow::operator=(DeviceWindow&& other) noexcept {
  if (this != &other) {
    release();
    mapping_ = std::exchange(other.mapping_, nullptr);
    base_ = std::exchange(other.base_, 0);
  }
  return *this;
}

DeviceWindow::~DeviceWindow() { release(); }

void DeviceWindow::release() {
  if (mapping_ == nullptr) return;
  munmap(mapping_, kDeviceWindowSize);
  mapping_ = nullptr;
  base_ = 0;
  gLiveWindows.fetch_sub(1);
}

}  // namespace mcsim::fabric
