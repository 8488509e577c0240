// The simulated device VA window of one node in this process.
//
// Every process that uses a node reserves a window in its own address space (PROT_NONE), so that
// no host allocation can land inside it and a host dereference of a device pointer faults, as on
// a real GPU; the node hands out device addresses inside it. The window belongs to the node that
// reserved it (the embedded node, or a process's attachment to a shared node) and is given back
// when that node goes. Its address is fixed for reproducible runs: a node alone in its process
// gets kDeviceWindowBase, which lies clear of the sanitizers' shadow and allocator ranges. Another
// node alive at the same time gets a window wherever the address space has room (no second range
// of this size is free under AddressSanitizer, nor beside a position-independent executable at
// its usual place): its device addresses may differ from run to run. So may a lone node's, if
// something else holds the fixed range; that is reported on stderr.
#pragma once

#include <cstdint>

namespace mcsim::fabric {

// ThreadSanitizer lets a process map only its application ranges, none of which holds 32 TiB: its
// build takes 256 GiB at 64 GiB, in the low application range (docs/reliability.md).
#if defined(__SANITIZE_THREAD__)
constexpr uint64_t kDeviceWindowBase = 0x1000000000ull;
constexpr uint64_t kDeviceWindowSize = 0x4000000000ull;  // 256 GiB
#else
constexpr uint64_t kDeviceWindowBase = 0x200000000000ull;
constexpr uint64_t kDeviceWindowSize = 0x200000000000ull;  // 32 TiB
#endif
// Device addresses are aligned to this within a window (cuMemAlloc's granule).
constexpr uint64_t kDeviceWindowAlignment = 2ull << 20;

class DeviceWindow {
 public:
  // Reserves a window: empty (base() 0) when the address space has no room left.
  static DeviceWindow reserve();

  DeviceWindow() = default;
  DeviceWindow(DeviceWindow&& other) noexcept;
  DeviceWindow& operator=(DeviceWindow&& other) noexcept;
  DeviceWindow(const DeviceWindow&) = delete;
  DeviceWindow& operator=(const DeviceWindow&) = delete;
  ~DeviceWindow();

  // The first device address, aligned to kDeviceWindowAlignment; 0 for no window. A node uses
  // kDeviceWindowSize less one alignment unit from there on (what aligning a window placed
  // elsewhere may cost).
  uint64_t base() const { return base_; }

 private:
  DeviceWindow(void* mapping, uint64_t base);
  void release();
  void* mapping_ = nullptr;  // what mmap returned (kDeviceWindowSize bytes)
  uint64_t base_ = 0;
};

}  // namespace mcsim::fabric
