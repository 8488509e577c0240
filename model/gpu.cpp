#include "model/gpu.h"

#include <algorithm>
#include <vector>

namespace mcsim::model {

namespace {

TimelineTrack trackOf(int gpu, const std::string& name) {
  return Timeline::trackIfActive("GPU " + std::to_string(gpu), name);
}

std::vector<TimelineTrack> stackTracks(int gpu, int stacks) {
  std::vector<TimelineTrack> tracks;
  for (int i = 0; i < stacks; ++i) tracks.push_back(trackOf(gpu, "HBM stack " + std::to_string(i)));
  return tracks;
}

}  // namespace

Gpu::Gpu(int ordinal, const GpuTimingSpec& spec, const Horizon* horizon)
    : spec_(spec),
      hbm_(spec.hbm, stackTracks(ordinal, spec.hbm.stacks), horizon),
      l2_(spec.l2),
      l2Port_(spec.l2.bytesPerSecond, trackOf(ordinal, "L2"), horizon),
      pcieIn_(spec.pcie.bytesPerSecond, trackOf(ordinal, "PCIe from host"), horizon),
      pcieOut_(spec.pcie.bytesPerSecond, trackOf(ordinal, "PCIe to host"), horizon),
      stagingIn_(spec.pcie.pageableBytesPerSecond, TimelineTrack(), horizon),
      stagingOut_(spec.pcie.pageableBytesPerSecond, TimelineTrack(), horizon),
      stagingPeer_(spec.pcie.stagedPeerBytesPerSecond, TimelineTrack(), horizon) {}

uint64_t Gpu::memory(uint64_t arrivePs, uint64_t alloc, uint64_t offset, uint64_t bytes, bool write) {
  const L2Cache::Outcome o = l2_.access(alloc, offset, bytes, write);
  const char* what = write ? "write" : "read";
  uint64_t end = arrivePs;
  if (o.hitBytes > 0) end = std::max(end, l2Port_.serve(arrivePs, o.hitBytes, what) + spec_.l2.latencyPs);
  if (o.missBytes > 0) end = std::max(end, hbm_.access(arrivePs, physical(alloc, offset), o.missBytes, what));
  // Evicted dirty lines go out to HBM alongside; the access does not wait for them, but they
  // occupy the stacks that later accesses need.
  if (o.writebackBytes > 0) hbm_.access(arrivePs, physical(alloc, offset), o.writebackBytes, "write-back");
  return end;
}

uint64_t Gpu::read(uint64_t arrivePs, uint64_t alloc, uint64_t offset, uint64_t bytes) {
  return memory(arrivePs, alloc, offset, bytes, false);
}

uint64_t Gpu::write(uint64_t arrivePs, uint64_t alloc, uint64_t offset, uint64_t bytes) {
  return memory(arrivePs, alloc, offset, bytes, true);
}

uint64_t Gpu::fromHost(uint64_t arrivePs, uint64_t bytes, bool pageable) {
  uint64_t t = arrivePs;
  if (pageable) t = stagingIn_.serve(t, bytes, "staging");
  return pcieIn_.serve(t, bytes, "from host") + spec_.pcie.latencyPs;
}

uint64_t Gpu::stagePeer(uint64_t arrivePs, uint64_t bytes) { return stagingPeer_.serve(arrivePs, bytes, "staging"); }

uint64_t Gpu::toHost(uint64_t arrivePs, uint64_t bytes, bool pageable) {
  uint64_t t = pcieOut_.serve(arrivePs, bytes, "to host") + spec_.pcie.latencyPs;
  if (pageable) t = stagingOut_.serve(t, bytes, "staging");
  return t;
}

}  // namespace mcsim::model
