#include "fabric/node_model.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <deque>

#include "fabric/work_slice.h"
#include "model/engine.h"

namespace mcsim::fabric {

using model::BandwidthServer;
using model::Engine;
using model::Timeline;

namespace {

// Whether the 4 KiB at `p` are all zero. Reading a page of a LazyRegion nothing wrote maps the
// host's shared zero page: no memory is allocated.
bool zeroPage(const uint8_t* p) {
  uint64_t any = 0;
  for (size_t k = 0; k < 4096; k += 64) {
    uint64_t w[8];
    std::memcpy(w, p + k, 64);
    any |= w[0] | w[1] | w[2] | w[3] | w[4] | w[5] | w[6] | w[7];
    if (any != 0) return false;
  }
  return true;
}

void fillBytes(uint8_t* p, uint64_t len, uint32_t value, unsigned elementBytes) {
  const uint32_t mask = elementBytes == 1 ? 0xffu : elementBytes == 2 ? 0xffffu : ~0u;
  if ((value & mask) == 0 && len >= 2 * 4096) {
    // A zero fill (NCCL clears its buffers so, hundreds of MiB of them) leaves pages that already
    // read zero untouched: memory nothing wrote stays unallocated on the host, and the result is
    // the same bytes.
    uint8_t* const end = p + len;
    uint8_t* page = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(p) + 4095) & ~uintptr_t{4095});
    std::memset(p, 0, static_cast<size_t>(page - p));
    for (; page + 4096 <= end; page += 4096)
      if (!zeroPage(page)) std::memset(page, 0, 4096);
    std::memset(page, 0, static_cast<size_t>(end - page));
    return;
  }
  if (elementBytes == 1) {
    std::memset(p, static_cast<int>(value & 0xff), len);
  } else if (elementBytes == 2) {
    const auto v = static_cast<uint16_t>(value);
    for (uint64_t k = 0; k < len; k += 2) std::memcpy(p + k, &v, 2);
  } else {
    for (uint64_t k = 0; k < len; k += 4) std::memcpy(p + k, &value, 4);
  }
}

}  // namespace


NodeModel::NodeModel(const Preset& preset, Engine& engine)
    : preset_(preset), engine_(engine), health_(healthyLinks(preset)) {
  for (int g = 0; g < preset.gpuCount; ++g) gpus_.push_back(std::make_unique<model::Gpu>(g, preset.gpu.timing, &horizon_));
  smRemoteLanded_.assign(static_cast<size_t>(preset.gpuCount), 0);
  const double perLink = preset.nvlink.gbytesPerSecPerLinkPerDirection * preset.nvlink.efficiency * 1e9;
  // Switches reached over equally many links form a plane (node_model.h); switches no GPU links to
  // carry nothing.
  std::vector<int> planeLinks;  // links from each GPU to one switch of the plane
  for (int s = 0; s < preset.nvswitch.count; ++s) {
    const int links = preset.nvswitch.linksPerGpuPerSwitch[static_cast<size_t>(s)];
    if (links == 0) continue;
    const auto it = std::find(planeLinks.begin(), planeLinks.end(), links);
    if (it != planeLinks.end()) {
      planes_[static_cast<size_t>(it - planeLinks.begin())].switches.push_back(s);
      continue;
    }
    planeLinks.push_back(links);
    planes_.emplace_back();
    planes_.back().switches.push_back(s);
  }
  for (size_t p = 0; p < planes_.size(); ++p) {
    Plane& plane = planes_[p];
    const double n = static_cast<double>(plane.switches.size());
    std::vector<model::TimelineTrack> crossbars;
    for (int s : plane.switches) crossbars.push_back(Timeline::trackIfActive("NVSwitch " + std::to_string(s), "crossbar"));
    plane.crossbar = BandwidthServer(n * preset.nvswitch.crossbarGbytesPerSec * 1e9, crossbars, &horizon_);
    plane.latencyPs = preset.nvswitch.latencyNs * 1000;
  }
  ports_.resize(static_cast<size_t>(preset.gpuCount));
  for (int g = 0; g < preset.gpuCount; ++g) {
    for (size_t p = 0; p < planes_.size(); ++p) {
      Port port;
      port.links = planeLinks[p] * static_cast<int>(planes_[p].switches.size());
      std::vector<model::TimelineTrack> out, in, reduction;
      for (int s : planes_[p].switches) {
        const std::string gpu = "GPU " + std::to_string(g), to = "NVLink switch " + std::to_string(s);
        out.push_back(Timeline::trackIfActive(gpu, to + " out"));
        in.push_back(Timeline::trackIfActive(gpu, to + " in"));
        reduction.push_back(Timeline::trackIfActive("NVSwitch " + std::to_string(s), "reduction, from GPU " + std::to_string(g)));
      }
      const double rate = perLink * port.links;
      port.up = BandwidthServer(rate, out, &horizon_);
      port.down = BandwidthServer(rate, in, &horizon_);
      port.reduce = BandwidthServer(std::max(1.0, preset.nvswitch.reduceLineRateFraction * rate), reduction, &horizon_);
      ports_[static_cast<size_t>(g)].push_back(std::move(port));
    }
  }
  nvlinkLatencyPs_ = preset.nvlink.latencyNs * 1000;
  smWireScale_ = preset.nvlink.efficiency / preset.nvlink.smEfficiency;
  reduceLatencyPs_ = preset.nvswitch.reduceLatencyNs * 1000;
  crossGpuSyncPs_ = preset.nvlink.crossGpuSyncNs * 1000;
  // A read of a peer's memory is set up with the peer, and sends its request across the fabric
  // before any data comes back.
  pullLatencyPs_ = crossGpuSyncPs_ + 2 * nvlinkLatencyPs_ + (planes_.empty() ? 0 : planes_[0].latencyPs);
}

NodeModel::~NodeModel() {
  if (signalled_ != nullptr) engine_.retire(signalled_);
}

model::CompletionPtr NodeModel::submit(std::shared_ptr<DeviceWork> work, std::vector<model::CompletionPtr> after) {
  auto done = std::make_shared<model::Completion>();
  Engine& engine = engine_;
  engine.post([self = shared_from_this(), &engine, work = std::move(work), after = std::move(after), done] {
    // Work queued behind other work holds no simulation process until it can run.
    engine.spawnAfter(after, [self, work, after, done] {
      // A fault of work this follows stops it: a faulted context runs nothing more, and whoever
      // waits for this work learns of the fault.
      std::shared_ptr<const model::WorkFault> fault;
      for (const auto& c : after) {
        if (!fault) fault = c->fault();
      }
      if (!fault) {
        // The host made the call that queued it no earlier than this (the host's clock).
        if (work->notBeforePs > Engine::simNowPs()) self->engine_.waitUntil(work->notBeforePs);
        self->execute(*work);
        fault = work->fault;
        done->setOutput(work->output);
      }
      done->setFault(std::move(fault));
      done->complete();
    });
  });
  return done;
}

void NodeModel::setHealth(const model::LinkHealth& health) {
  engine_.post([self = shared_from_this(), health] { self->health_ = health; });
}

NodeModel::Route NodeModel::routeOf(std::initializer_list<int> gpus, const std::vector<int>* more) const {
  Route r;
  if (health_.healthy()) return r;
  r.weight.assign(planes_.size(), 0);
  for (size_t p = 0; p < planes_.size(); ++p) {
    int w = INT32_MAX;
    const auto take = [&](int g) {
      int live = 0;
      for (int s : planes_[p].switches) live += health_.liveLinks(g, s);
      w = std::min(w, live);
    };
    for (int g : gpus) take(g);
    if (more != nullptr) {
      for (int g : *more) take(g);
    }
    r.weight[p] = static_cast<uint64_t>(std::max(w, 0));
    r.total += r.weight[p];
    if (r.weight[p] > 0) r.last = p;
  }
  // No plane reaches them all: the functional layer refused the accesses that needed one (a
  // transfer already under way when the path went takes the preset's split, to end somewhere).
  if (r.total == 0) return Route{};
  r.healthy = false;
  return r;
}

uint64_t NodeModel::shareOf(const Route& route, int gpu, size_t p, uint64_t bytes, uint64_t* sent) const {
  if (route.healthy) return planeShare(gpu, p, bytes, sent);
  if (route.weight[p] == 0) return 0;
  const uint64_t share = p == route.last ? bytes - *sent : bytes * route.weight[p] / route.total;
  *sent += share;
  return share;
}

uint64_t NodeModel::portBytes(int gpu, size_t p, uint64_t share) const {
  if (health_.healthy() || share == 0) return share;
  int live = 0;
  for (int s : planes_[p].switches) live += health_.liveLinks(gpu, s);
  const auto nominal = static_cast<uint64_t>(ports_[static_cast<size_t>(gpu)][p].links);
  return live <= 0 || static_cast<uint64_t>(live) >= nominal ? share : share * nominal / static_cast<uint64_t>(live);
}

uint64_t NodeModel::crossbarBytes(size_t p, uint64_t share) const {
  if (health_.healthy() || share == 0) return share;
  uint64_t up = 0;
  for (int s : planes_[p].switches) up += health_.switchUp(s) ? 1 : 0;
  const uint64_t n = planes_[p].switches.size();
  return up == 0 || up >= n ? share : share * n / up;
}

void NodeModel::forget(int gpu, uint64_t alloc) {
  // Nothing was ever simulated, so nothing is cached (and no engine need start, e.g. while a
  // node that never moved data is destroyed at exit).
  if (gpu < 0 || gpu >= gpuCount() || !engine_.started()) return;
  engine_.post([self = shared_from_this(), gpu, alloc] {
    self->gpus_[static_cast<size_t>(gpu)]->forget(alloc);
    self->syncAllocs_.erase({gpu, alloc});
  });
}

void NodeModel::moveData(DeviceWork& w, bool syncOnly) {
  for (const WorkPiece& p : w.pieces) {
    if (syncOnly && (!p.dst.device || p.dstData == nullptr || syncAllocs_.count({p.dst.gpu, p.dst.alloc}) == 0)) {
      continue;
    }
    if (w.kind == DeviceWork::Kind::kFill) {
      fillBytes(p.dstData, p.bytes, w.fillValue, w.fillElementBytes);
    } else if (p.srcData == nullptr) {
      std::memset(p.dstData, 0, p.bytes);
    } else {
      std::memmove(p.dstData, p.srcData, p.bytes);
    }
  }
}

void NodeModel::execute(DeviceWork& w) {
  // Work that never ends (a kernel still waiting when the program exits) leaves its slice open,
  // and so does a kernel stopped because its process died: neither finished.
  WorkSlice slice(w, Engine::simNowPs());
  ++executing_;
  noteStuck(0);
  executeWork(w);
  --executing_;
  noteStuck(0);
  if (w.abandoned != nullptr && w.abandoned->load()) return;
  slice.close(Engine::simNowPs(), w.sliceResult);
}

void NodeModel::noteStuck(int change) {
  stuck_ += change;
  engine_.noteSpinOnly(executing_ > 0 && stuck_ == executing_);
}

void NodeModel::noteProgress() {
  engine_.noteSpinOnly(false);  // breaks the engine's run of spinning ...
  noteStuck(0);                 // ... and says again what the work does now
}

void NodeModel::executeWork(DeviceWork& w) {
  Engine& engine = engine_;
  const uint64_t start = Engine::simNowPs();
  if (w.kind == DeviceWork::Kind::kKernel) {
    if (w.ptx) executePtxKernel(w);
    else executeKernel(w);
    return;
  }
  moveData(w, !w.functional);
  if (w.kind == DeviceWork::Kind::kMarker) {
    if (w.crossGpu) engine.waitUntil(start + crossGpuSyncPs_);
    return;
  }
  model::Gpu& engineGpu = *gpus_[static_cast<size_t>(w.engineGpu)];
  const model::CopyEngineSpec& ce = engineGpu.spec().copyEngine;
  // A copy engine pulling from a peer's memory sets the reads up with the peer first.
  bool pull = false;
  for (const WorkPiece& p : w.pieces) {
    pull = pull || (p.src.device && p.dst.device && p.src.gpu != p.dst.gpu && w.engineGpu != p.src.gpu);
  }
  // A staged peer copy neither pulls across the fabric nor starts before the driver's staging is set up.
  const uint64_t extra = w.stagedPeer ? engineGpu.spec().pcie.stagedPeerSetupPs : pull ? pullLatencyPs_ : 0;
  engine.waitUntil(start + ce.setupPs + extra);
  // Chunks go out while fewer than the window are in flight; each is timed through its whole
  // path when it leaves, so transfers that leave later queue behind it on shared resources.
  std::deque<uint64_t> inflight;
  uint64_t last = Engine::simNowPs();
  for (const WorkPiece& p : w.pieces) {
    for (uint64_t off = 0; off < p.bytes; off += ce.chunkBytes) {
      if (static_cast<int>(inflight.size()) >= ce.windowChunks) {
        engine.waitUntil(inflight.front());
        inflight.pop_front();
      }
      const uint64_t n = std::min<uint64_t>(ce.chunkBytes, p.bytes - off);
      horizon_.ps = Engine::simNowPs();
      const uint64_t end = moveChunk(w, p, off, n, Engine::simNowPs());
      inflight.push_back(end);
      last = std::max(last, end);
    }
  }
  engine.waitUntil(last);
  memoryChanged();  // the copy or memset is in memory
}

uint64_t NodeModel::acrossFabric(int from, int to, uint64_t bytes, uint64_t t, const char* what, uint64_t* left,
                                 bool fromSms) {
  model::Gpu& src = *gpus_[static_cast<size_t>(from)];
  model::Gpu& dst = *gpus_[static_cast<size_t>(to)];
  if (planes_.empty()) {
    // No NVLink fabric: through the host.
    const uint64_t out = src.toHost(t, bytes, false);
    if (left != nullptr) *left = out;
    return dst.fromHost(out, bytes, false);
  }
  // The chunk spreads over the planes in proportion to the links leading to each (the live ones,
  // while some are down: routeOf).
  const Route route = routeOf({from, to});
  uint64_t end = t, sent = 0;
  if (left != nullptr) *left = t;
  for (size_t p = 0; p < planes_.size(); ++p) {
    const uint64_t share = shareOf(route, from, p, bytes, &sent);
    if (share == 0) continue;
    Plane& plane = planes_[p];
    const uint64_t wire = fromSms ? static_cast<uint64_t>(std::ceil(static_cast<double>(share) * smWireScale_)) : share;
    uint64_t a = ports_[static_cast<size_t>(from)][p].up.serve(t, portBytes(from, p, wire), what) + nvlinkLatencyPs_;
    a = plane.crossbar.serve(a, crossbarBytes(p, wire), what) + plane.latencyPs;
    a = ports_[static_cast<size_t>(to)][p].down.serve(a, portBytes(to, p, wire), what);
    if (left != nullptr) *left = std::max(*left, a);
    a += nvlinkLatencyPs_;
    end = std::max(end, a);
  }
  return end;
}

uint64_t NodeModel::throughHost(int from, int to, uint64_t bytes, uint64_t t) {
  model::Gpu& src = *gpus_[static_cast<size_t>(from)];
  const uint64_t staged = src.stagePeer(src.toHost(t, bytes, false), bytes);
  return gpus_[static_cast<size_t>(to)]->fromHost(staged, bytes, false);
}

uint64_t NodeModel::planeShare(int gpu, size_t p, uint64_t bytes, uint64_t* sent) const {
  const uint64_t links = static_cast<uint64_t>(ports_[static_cast<size_t>(gpu)][p].links);
  const uint64_t share = p + 1 == planes_.size() ? bytes - *sent : bytes * links / preset_.nvlink.linksPerGpu;
  *sent += share;
  return share;
}

uint64_t NodeModel::moveChunk(const DeviceWork& w, const WorkPiece& p, uint64_t offset, uint64_t bytes, uint64_t t) {
  const MemoryRef& s = p.src;
  const MemoryRef& d = p.dst;
  if (w.kind == DeviceWork::Kind::kFill) {
    return d.device ? gpus_[static_cast<size_t>(d.gpu)]->write(t, d.alloc, d.offset + offset, bytes) : t;
  }
  const char* what = w.label.empty() ? "copy" : w.label.c_str();
  uint64_t r = t;
  if (s.device) {
    r = gpus_[static_cast<size_t>(s.gpu)]->read(r, s.alloc, s.offset + offset, bytes);
  }
  if (s.device && d.device) {
    if (s.gpu != d.gpu) r = w.stagedPeer ? throughHost(s.gpu, d.gpu, bytes, r) : acrossFabric(s.gpu, d.gpu, bytes, r, what);
  } else if (d.device) {
    r = gpus_[static_cast<size_t>(d.gpu)]->fromHost(r, bytes, s.pageable);
  } else if (s.device) {
    r = gpus_[static_cast<size_t>(s.gpu)]->toHost(r, bytes, d.pageable);
  }
  if (d.device) r = gpus_[static_cast<size_t>(d.gpu)]->write(r, d.alloc, d.offset + offset, bytes);
  return r;
}

}  // namespace mcsim::fabric
