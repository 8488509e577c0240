// Kernels on the node model: the steps of a launch (include/mcsim/kernel_model.h), their data
// and their timing.
//
// Data: each step's effect is applied when the step begins, in simulated time (signals when
// they arrive), so a kernel that waits at a barrier sees what its peers wrote before they
// signalled it. Multicast reductions combine the members' values in ascending device order,
// one element at a time with the arithmetic of model/reduction.h.
//
// Timing: a launch pays the SMs' launch cost, then each step streams its bytes in chunks through
// the resources on their path, as copies do, keeping as many chunks in flight as the launch's
// loads allow (resident threads times each thread's bytes in flight, which the kernel's model
// states: its access width times its unroll). Stores are posted: a chunk leaves the window when
// its loads are back and its stores have been accepted (out of the switch towards their
// destination), and the step ends when the last byte is in memory. The paths:
//   plain load    peer's HBM -> its NVLink ports -> switch -> this GPU (or this GPU's own HBM)
//   plain store   this GPU -> NVLink -> switch -> the peer's HBM (or this GPU's own HBM)
//   multimem.st   source -> this GPU's ports -> each switch, which replicates the chunk (its
//                 crossbar carries one copy per member) -> every member's port -> member HBM
//   multimem.red  as st, each member's memory doing a read-modify-write
//   ld_reduce     request to the switches; every member reads its HBM and sends its operand up
//                 its ports; each port takes its member's operands into the switch's reduction
//                 (at a fraction of the port's line rate; plus the gathering latency); the result
//                 comes down this GPU's ports
// A chunk spreads over the switches in proportion to the links that lead to each.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <deque>

#include "fabric/node_model.h"
#include "model/engine.h"
#include "model/reduction.h"

namespace mcsim::fabric {

using model::BandwidthServer;
using model::Engine;
using model::Timeline;

namespace {

// Calls fn(run, offsetInRun, n) for the pieces of `span` covering [offset, offset + bytes).
template <typename Fn>
void forPieces(const MemorySpan& span, uint64_t offset, uint64_t bytes, Fn fn) {
  uint64_t base = 0;
  for (const MemoryRun& r : span) {
    if (bytes == 0) return;
    if (offset < base + r.len) {
      const uint64_t in = offset - base;
      const uint64_t n = std::min(bytes, r.len - in);
      fn(r, in, n);
      offset += n;
      bytes -= n;
    }
    base += r.len;
  }
}

// Calls fn(offset, n, pointers) over [0, total) cut wherever any of `spans` changes run, with
// each span's data pointer for that piece.
template <typename Fn>
void zipSpans(const std::vector<const MemorySpan*>& spans, uint64_t total, Fn fn) {
  std::vector<size_t> run(spans.size(), 0);
  std::vector<uint64_t> inRun(spans.size(), 0);
  std::vector<uint8_t*> ptrs(spans.size());
  uint64_t off = 0;
  while (off < total) {
    uint64_t n = total - off;
    for (size_t i = 0; i < spans.size(); ++i) {
      const MemoryRun& r = (*spans[i])[run[i]];
      n = std::min(n, r.len - inRun[i]);
      ptrs[i] = r.data + inRun[i];
    }
    fn(off, n, ptrs);
    off += n;
    for (size_t i = 0; i < spans.size(); ++i) {
      inRun[i] += n;
      if (inRun[i] == (*spans[i])[run[i]].len) {
        ++run[i];
        inRun[i] = 0;
      }
    }
  }
}

// Bytes a step moves through the SMs per byte of its length: what they load plus what they store.
uint64_t smBytes(KernelStep::Kind kind) {
  return kind == KernelStep::Kind::kReduce ? 3 : 2;  // a and b in, dst out; else one in, one out
}

uint32_t loadU32(const MemorySpan& span) {
  uint32_t v = 0;
  if (!span.empty() && span[0].data != nullptr) std::memcpy(&v, span[0].data, 4);
  return v;
}

// The word a waiting step reads (an aligned word lies in one run).
uint64_t loadWord(const ResolvedStep& st) {
  if (st.bytes != 8) return loadU32(st.dst);
  uint64_t v = 0;
  if (!st.dst.empty() && st.dst[0].data != nullptr) std::memcpy(&v, st.dst[0].data, 8);
  return v;
}

// Whether a waiting step may go on: a kernel's signal word reached its value (modulo 2^32, as the
// kernels compare, so that a word that wraps keeps working), or a stream memory operation's word
// compares as it asks (cuda.h's CUstreamWaitValue_flags).
bool waitReached(const ResolvedStep& st) {
  if (!st.streamWait) return static_cast<int32_t>(loadU32(st.dst) - st.value) >= 0;
  const uint64_t word = loadWord(st);
  const bool wide = st.bytes == 8;
  const uint64_t mask = wide ? ~uint64_t{0} : uint64_t{0xffffffffu};
  switch (st.compare) {
    case WaitCompare::kGeq:
      return wide ? static_cast<int64_t>(word - st.operand) >= 0
                  : static_cast<int32_t>(static_cast<uint32_t>(word) - static_cast<uint32_t>(st.operand)) >= 0;
    case WaitCompare::kEq: return (word & mask) == (st.operand & mask);
    case WaitCompare::kAnd: return (word & st.operand & mask) != 0;
    case WaitCompare::kNor: return (~(word | st.operand) & mask) != 0;
  }
  return false;
}

const char* compareName(WaitCompare c) {
  switch (c) {
    case WaitCompare::kGeq: return ">= (cyclic)";
    case WaitCompare::kEq: return "==";
    case WaitCompare::kAnd: return "AND != 0 with";
    case WaitCompare::kNor: return "NOR != 0 with";
  }
  return "?";
}

}  // namespace

std::string NodeModel::describeWaitingKernels() {
  std::lock_guard<OrderedMutex> lock(waitingMu_);
  std::string out;
  for (const auto& [id, k] : waitingKernels_) {
    char line[256];
    if (k.step == nullptr) {
      // A PTX kernel: a line per waiting block.
      size_t from = 0;
      for (size_t nl = k.ptxWait.find('\n'); nl != std::string::npos; from = nl + 1, nl = k.ptxWait.find('\n', from)) {
        out += "  GPU " + std::to_string(k.gpu) + ": " + k.ptxWait.substr(from, nl - from) + "\n";
      }
      continue;
    }
    if (k.step->streamWait) {
      std::snprintf(line, sizeof line, "  GPU %d: %s waits until the word at 0x%llx is %s 0x%llx; it holds 0x%llx\n", k.gpu,
                    k.label.c_str(), static_cast<unsigned long long>(k.step->waitVa), compareName(k.step->compare),
                    static_cast<unsigned long long>(k.step->operand), static_cast<unsigned long long>(loadWord(*k.step)));
      out += line;
      continue;
    }
    std::snprintf(line, sizeof line, "  GPU %d: kernel '%s' waits until its signal word at 0x%llx reaches %u; it holds %u\n",
                  k.gpu, k.label.c_str(), static_cast<unsigned long long>(k.step->waitVa), k.step->value,
                  loadU32(k.step->dst));
    out += line;
  }
  return out;
}

size_t NodeModel::stopKernels(const std::shared_ptr<const std::atomic<bool>>& abandoned) {
  size_t waiting = 0;
  {
    std::lock_guard<OrderedMutex> lock(waitingMu_);
    for (const auto& [id, k] : waitingKernels_) waiting += k.abandoned == abandoned.get() ? 1 : 0;
  }
  // The waiting kernels look at their words again, see that they are to stop, and end.
  if (waiting > 0) engine_.post([self = shared_from_this()] { self->signalled().notify(sc_core::SC_ZERO_TIME); });
  return waiting;
}

void NodeModel::memoryChanged() {
  ++memoryEpoch_;
  if (valueWaiters_ > 0 || memoryWatchers_ > 0) signalled().notify(sc_core::SC_ZERO_TIME);
}

sc_core::sc_event& NodeModel::signalled() {
  if (signalled_ == nullptr) signalled_ = new sc_core::sc_event(sc_core::sc_gen_unique_name("signalled"));
  return *signalled_;
}

uint64_t NodeModel::hopPs() const {
  return 2 * nvlinkLatencyPs_ + (planes_.empty() ? 0 : planes_[0].latencyPs);
}

void NodeModel::noteSyncAllocs(const ResolvedStep& st) {
  using K = KernelStep::Kind;
  if (st.kind == K::kWait) {
    for (const MemoryRun& r : st.dst) {
      if (r.ref.device) syncAllocs_.insert({r.ref.gpu, r.ref.alloc});
    }
  } else if (st.kind == K::kSignal) {
    for (const MemorySpan& m : st.members) {
      for (const MemoryRun& r : m) {
        if (r.ref.device) syncAllocs_.insert({r.ref.gpu, r.ref.alloc});
      }
    }
  }
}

void NodeModel::applyStep(const ResolvedStep& st, bool functional) {
  using K = KernelStep::Kind;
  if (st.kind == K::kSignal) {
    // Signals always move, timing-only or not: kernels wait on them.
    for (const MemorySpan& m : st.members) {
      if (m.empty() || m[0].data == nullptr) continue;
      uint32_t v = 0;
      std::memcpy(&v, m[0].data, 4);
      v += st.value;
      std::memcpy(m[0].data, &v, 4);
    }
    return;
  }
  if (!functional) return;
  switch (st.kind) {
    case K::kCopy:
      zipSpans({&st.dst, &st.src}, st.bytes, [](uint64_t, uint64_t n, const std::vector<uint8_t*>& p) {
        std::memmove(p[0], p[1], n);
      });
      return;
    case K::kReduce: {
      const uint64_t esz = mcsim_dtype_bytes(st.dtype);
      std::vector<uint8_t> tmp;
      zipSpans({&st.dst, &st.src, &st.src2}, st.bytes, [&](uint64_t, uint64_t n, const std::vector<uint8_t*>& p) {
        // dst = a op b, whichever operand dst overlaps.
        tmp.assign(p[1], p[1] + n);
        model::reduceInto(st.dtype, st.op, tmp.data(), p[2], n / esz);
        std::memcpy(p[0], tmp.data(), n);
      });
      return;
    }
    case K::kMultimemStore:
      for (const MemorySpan& m : st.members) {
        zipSpans({&m, &st.src}, st.bytes, [](uint64_t, uint64_t n, const std::vector<uint8_t*>& p) {
          std::memmove(p[0], p[1], n);
        });
      }
      return;
    case K::kMultimemReduce: {
      const uint64_t esz = mcsim_dtype_bytes(st.dtype);
      for (const MemorySpan& m : st.members) {
        zipSpans({&m, &st.src}, st.bytes, [&](uint64_t, uint64_t n, const std::vector<uint8_t*>& p) {
          model::reduceInto(st.dtype, MCSIM_REDOP_ADD, p[0], p[1], n / esz);
        });
      }
      return;
    }
    case K::kMultimemLoadReduce:
    case K::kMultimemLoadReduceStore: {
      const uint64_t esz = mcsim_dtype_bytes(st.dtype);
      std::vector<const MemorySpan*> spans;
      for (const MemorySpan& m : st.members) spans.push_back(&m);
      const bool toDst = st.kind == K::kMultimemLoadReduce;
      if (toDst) spans.push_back(&st.dst);
      const size_t members = st.members.size();
      std::vector<uint8_t> acc;
      zipSpans(spans, st.bytes, [&](uint64_t, uint64_t n, const std::vector<uint8_t*>& p) {
        // Ascending device order: ((m0 op m1) op m2) ...
        acc.assign(p[0], p[0] + n);
        for (size_t i = 1; i < members; ++i) model::reduceInto(st.dtype, st.op, acc.data(), p[i], n / esz);
        if (toDst) {
          std::memcpy(p[members], acc.data(), n);
        } else {
          for (size_t i = 0; i < members; ++i) std::memcpy(p[i], acc.data(), n);
        }
      });
      return;
    }
    case K::kSignal:
    case K::kWait:
      return;
  }
}

uint64_t NodeModel::readSpan(int gpu, const MemorySpan& span, uint64_t offset, uint64_t bytes, uint64_t t,
                             const char* what) {
  uint64_t end = t;
  forPieces(span, offset, bytes, [&](const MemoryRun& r, uint64_t in, uint64_t n) {
    const int h = r.ref.gpu;
    if (h == gpu) {
      end = std::max(end, gpus_[static_cast<size_t>(h)]->read(t, r.ref.alloc, r.ref.offset + in, n));
      return;
    }
    // A load from a peer: the request crosses the fabric, the data comes back.
    const uint64_t a = gpus_[static_cast<size_t>(h)]->read(t + hopPs(), r.ref.alloc, r.ref.offset + in, n);
    end = std::max(end, acrossFabric(h, gpu, n, a, what, nullptr, /*fromSms=*/true));
  });
  return end;
}

uint64_t NodeModel::writeSpan(int gpu, const MemorySpan& span, uint64_t offset, uint64_t bytes, uint64_t t,
                              bool rmw, const char* what, uint64_t* left) {
  uint64_t end = t;
  *left = t;
  forPieces(span, offset, bytes, [&](const MemoryRun& r, uint64_t in, uint64_t n) {
    const int h = r.ref.gpu;
    uint64_t out = t;
    const uint64_t a = h == gpu ? t : acrossFabric(gpu, h, n, t, what, &out, /*fromSms=*/true);
    *left = std::max(*left, out);
    model::Gpu& mem = *gpus_[static_cast<size_t>(h)];
    const uint64_t w = rmw ? mem.read(a, r.ref.alloc, r.ref.offset + in, n) : a;
    end = std::max(end, mem.write(w, r.ref.alloc, r.ref.offset + in, n));
  });
  return end;
}

uint64_t NodeModel::multicastOut(int gpu, const ResolvedStep& st, uint64_t offset, uint64_t bytes, uint64_t t,
                                 bool rmw, uint64_t* left) {
  const size_t members = st.members.size();
  std::vector<uint64_t> arrive(members, t);
  const Route route = routeOf({gpu}, &st.memberGpus);
  uint64_t sent = 0;
  *left = t;
  for (size_t p = 0; p < planes_.size(); ++p) {
    const uint64_t share = shareOf(route, gpu, p, bytes, &sent);
    if (share == 0) continue;
    Plane& plane = planes_[p];
    uint64_t a = ports_[static_cast<size_t>(gpu)][p].up.serve(t, portBytes(gpu, p, share), "multimem") + nvlinkLatencyPs_;
    // The switch replicates: its crossbar carries one copy per member.
    a = plane.crossbar.serve(a, crossbarBytes(p, share * members), "multimem") + plane.latencyPs;
    for (size_t i = 0; i < members; ++i) {
      Port& down = ports_[static_cast<size_t>(st.memberGpus[i])][p];
      const uint64_t out = down.down.serve(a, portBytes(st.memberGpus[i], p, share), "multimem");
      *left = std::max(*left, out);
      arrive[i] = std::max(arrive[i], out + nvlinkLatencyPs_);
    }
  }
  uint64_t end = t;
  for (size_t i = 0; i < members; ++i) {
    const int m = st.memberGpus[i];
    // Each member writes the chunk into its own memory once all of it has come in.
    uint64_t local = 0;
    end = std::max(end, writeSpan(m, st.members[i], offset, bytes, arrive[i], rmw, "multimem", &local));
  }
  return end;
}

uint64_t NodeModel::multicastIn(int gpu, const ResolvedStep& st, uint64_t offset, uint64_t bytes, uint64_t t) {
  const size_t members = st.members.size();
  // The request reaches every member through the switches.
  const uint64_t asked = t + hopPs();
  std::vector<uint64_t> read(members);
  for (size_t i = 0; i < members; ++i) read[i] = readSpan(st.memberGpus[i], st.members[i], offset, bytes, asked, "ld_reduce");
  const Route route = routeOf({gpu}, &st.memberGpus);
  uint64_t end = t, sent = 0;
  for (size_t p = 0; p < planes_.size(); ++p) {
    const uint64_t share = shareOf(route, gpu, p, bytes, &sent);
    if (share == 0) continue;
    Plane& plane = planes_[p];
    uint64_t reduced = 0;
    for (size_t i = 0; i < members; ++i) {
      const int m = st.memberGpus[i];
      Port& up = ports_[static_cast<size_t>(m)][p];
      const uint64_t in = up.up.serve(read[i], portBytes(m, p, share), "ld_reduce") + nvlinkLatencyPs_;
      // The port's reduction runs at a fraction of its line rate: of its live links.
      reduced = std::max(reduced, up.reduce.serve(in, portBytes(m, p, share), "ld_reduce"));
    }
    const uint64_t out = reduced + plane.latencyPs + reduceLatencyPs_;
    end = std::max(end, ports_[static_cast<size_t>(gpu)][p].down.serve(out, portBytes(gpu, p, share), "ld_reduce") + nvlinkLatencyPs_);
  }
  return end;
}

NodeModel::ChunkTimes NodeModel::timeStepChunk(int gpu, const ResolvedStep& st, uint64_t offset, uint64_t bytes,
                                               uint64_t t) {
  using K = KernelStep::Kind;
  ChunkTimes c{t, t};
  switch (st.kind) {
    case K::kCopy:
      c.done = writeSpan(gpu, st.dst, offset, bytes, readSpan(gpu, st.src, offset, bytes, t, "load"), false, "store",
                         &c.released);
      break;
    case K::kReduce: {
      const uint64_t r = std::max(readSpan(gpu, st.src, offset, bytes, t, "load"),
                                  readSpan(gpu, st.src2, offset, bytes, t, "load"));
      c.done = writeSpan(gpu, st.dst, offset, bytes, r, false, "store", &c.released);
      break;
    }
    case K::kMultimemStore:
    case K::kMultimemReduce:
      c.done = multicastOut(gpu, st, offset, bytes, readSpan(gpu, st.src, offset, bytes, t, "load"),
                            st.kind == K::kMultimemReduce, &c.released);
      break;
    case K::kMultimemLoadReduce:
      c.done = writeSpan(gpu, st.dst, offset, bytes, multicastIn(gpu, st, offset, bytes, t), false, "store",
                         &c.released);
      break;
    case K::kMultimemLoadReduceStore:
      c.done = multicastOut(gpu, st, offset, bytes, multicastIn(gpu, st, offset, bytes, t), false, &c.released);
      break;
    case K::kSignal:
    case K::kWait:
      break;
  }
  return c;
}

int NodeModel::unreachable(int gpu, const ResolvedStep& st) const {
  if (health_.healthy()) return -1;
  for (const MemorySpan* span : {&st.dst, &st.src, &st.src2}) {
    for (const MemoryRun& r : *span) {
      if (r.ref.device && !health_.reach(gpu, r.ref.gpu)) return r.ref.gpu;
    }
  }
  // Multicast traffic goes through the switches, to every member.
  if (!st.memberGpus.empty() && !health_.attached(gpu)) return gpu;
  for (int m : st.memberGpus) {
    if (!health_.reach(gpu, m)) return m;
  }
  return -1;
}

void NodeModel::executeKernel(DeviceWork& w) {
  using K = KernelStep::Kind;
  Engine& engine = engine_;
  const uint64_t start = Engine::simNowPs();
  model::Gpu& gpu = *gpus_[static_cast<size_t>(w.engineGpu)];
  const model::SmSpec& sm = gpu.spec().sm;
  if (!w.memoryOperation) engine.waitUntil(start + sm.launchPs);
  // Little's law: the launch keeps this many bytes of loads outstanding (its resident threads, each
  // with the loads its unroll allows). Stores are posted: a chunk leaves the window once its
  // stores have been accepted (writeSpan), not when they land.
  const uint64_t perThread = w.bytesInFlightPerThread != 0 ? w.bytesInFlightPerThread : sm.bytesInFlightPerThread;
  const uint64_t inflight = std::min(std::max<uint64_t>(w.threads, 1), sm.maxResidentThreads) * perThread;
  const size_t window = static_cast<size_t>(std::max<uint64_t>(1, inflight / sm.chunkBytes));
  const uint64_t chunk = std::min(sm.chunkBytes, std::max<uint64_t>(inflight, 512));
  // The SMs the launch occupies (a block each) move only so many bytes a second: a small grid is
  // bound by them before it is by its loads in flight.
  const uint64_t sms = std::min(std::max<uint64_t>(w.blocks, 1), sm.smCount);
  BandwidthServer smIssue(sm.bytesPerSecPerSm * static_cast<double>(sms), model::TimelineTrack(), &horizon_);
  for (const ResolvedStep& st : w.steps) noteSyncAllocs(st);
  size_t stepIndex = 0;
  for (const ResolvedStep& st : w.steps) {
    ++stepIndex;
    // A step that reaches memory over an NVLink path that is down faults the kernel there, as an
    // uncorrectable NVLink error does (docs/faults.md, "Fabric faults"): nothing of it is written.
    if (const int cut = unreachable(w.engineGpu, st); cut >= 0) {
      auto f = std::make_shared<model::WorkFault>();
      f->kind = model::WorkFault::Kind::kNvlink;
      f->message = "kernel '" + w.label + "' on GPU " + std::to_string(w.engineGpu) + ": step " +
                   std::to_string(stepIndex) + (st.memberGpus.empty() ? " reaches memory on GPU " : " reaches multicast team member GPU ") +
                   std::to_string(cut) + (cut == w.engineGpu ? ", which has no NVLink left" : " over an NVLink path that is down") +
                   " (fault plan): uncorrectable NVLink error";
      w.fault = std::move(f);
      break;
    }
    if (st.kind == K::kWait) {
      const auto reached = [&] { return waitReached(st); };
      if (reached()) continue;
      uint64_t id = 0;
      {
        std::lock_guard<OrderedMutex> lock(waitingMu_);
        id = nextWaitingId_++;
        waitingKernels_[id] = WaitingKernel{w.engineGpu, w.label, &st, w.abandoned.get()};
      }
      const auto stopped = [&] { return w.abandoned != nullptr && w.abandoned->load(); };
      if (st.streamWait) ++valueWaiters_;
      noteStuck(1);
      while (!reached() && !stopped()) sc_core::wait(signalled());
      noteStuck(-1);
      if (st.streamWait) --valueWaiters_;
      std::lock_guard<OrderedMutex> lock(waitingMu_);
      waitingKernels_.erase(id);
      if (stopped()) break;  // its process died: the rest of the kernel never runs
      continue;
    }
    if (st.kind == K::kSignal) {
      engine.waitUntil(Engine::simNowPs() + hopPs());
      applyStep(st, true);
      ++memoryEpoch_;
      signalled().notify(sc_core::SC_ZERO_TIME);
      continue;
    }
    applyStep(st, w.functional);
    std::deque<uint64_t> outstanding;
    uint64_t last = Engine::simNowPs();
    for (uint64_t off = 0; off < st.bytes; off += chunk) {
      if (outstanding.size() >= window) {
        engine.waitUntil(outstanding.front());
        outstanding.pop_front();
      }
      const uint64_t n = std::min(chunk, st.bytes - off);
      horizon_.ps = Engine::simNowPs();
      // The SMs' work on the chunk overlaps its memory traffic; it bounds when the chunk is done.
      const uint64_t smDone = smIssue.serve(Engine::simNowPs(), smBytes(st.kind) * n);
      const ChunkTimes c = timeStepChunk(w.engineGpu, st, off, n, Engine::simNowPs());
      outstanding.push_back(std::max(c.released, smDone));
      last = std::max({last, c.done, smDone});
    }
    engine.waitUntil(last);
  }
  memoryChanged();  // its stores are in memory
}

}  // namespace mcsim::fabric
