// The client side of a shared node: a Node whose calls cross to the node process (node_channel.h).
//
// Each call takes an idle request channel (asking the node for a new one when every channel is in
// use by another thread), writes its arguments, and waits for the answer. Device work is answered
// with an id; the driver gets a local Completion that stands for it and that this side settles
// when the node says the work is done (waitFor, poll, isDone). Host data of copies travels through
// the segment: a source inside the request (or a staged block when large), a destination through
// a block the node writes and this side copies out once the work is known to be done, before the
// call that learned it returns to the program.
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <boost/interprocess/managed_shared_memory.hpp>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "fabric/node.h"
#include "fabric/node_channel.h"
#include "fabric/node_host.h"
#include "fabric/node_ipc.h"
#include "fabric/unique_fd.h"

namespace mcsim::fabric {

namespace {

namespace bip = boost::interprocess;
using channel::Channel;
using channel::HostData;
using channel::Op;

// How often a waiting call looks whether the node is still there.
constexpr int kLivenessCheckMs = 200;
// At most this many dropped completions or finished blocks ride along with one request.
constexpr size_t kMaxPiggyback = 4096;

// What the local completions of device work share with their deleters, which may run on any thread
// (and after the node is gone).
struct Ledger {
  std::mutex mu;
  std::unordered_map<const model::Completion*, uint64_t> remote;  // local completion -> node id
  std::vector<uint64_t> released;  // node ids whose local completions were dropped
};

bool abortOnHang() {
  const char* a = std::getenv("MCSIM_ON_HANG");
  return a != nullptr && std::strcmp(a, "abort") == 0;
}

class ClientNode final : public Node {
 public:
  static std::unique_ptr<ClientNode> attach(const std::string& name, int rank, std::string* error) {
    std::unique_ptr<ClientNode> n(new ClientNode());
    if (!n->connect(name, rank, error)) return nullptr;
    return n;
  }

  ~ClientNode() override {
    // Closing the socket detaches: the node gives back everything this process held.
    sock_.reset();
  }

  const Preset& preset() const override { return preset_; }
  uint64_t vaBase() const override { return vaBase_; }
  uint64_t vaLimit() const override { return vaLimit_; }

  Status createAllocation(const AllocationProps& props, uint64_t* handle) override {
    return call(Op::kCreateAllocation, [&](wire::Writer& w) { channel::put(w, props); },
                [&](wire::Reader& r) { *handle = r.get<uint64_t>(); });
  }
  Status releaseHandle(uint64_t handle) override {
    return call(Op::kReleaseHandle, [&](wire::Writer& w) { w.put(handle); });
  }
  Status handleProps(uint64_t handle, AllocationProps* props) override {
    return call(Op::kHandleProps, [&](wire::Writer& w) { w.put(handle); },
                [&](wire::Reader& r) { channel::get(r, props); });
  }
  Status retainHandleAt(uint64_t va, uint64_t* handle) override {
    return call(Op::kRetainHandleAt, [&](wire::Writer& w) { w.put(va); },
                [&](wire::Reader& r) { *handle = r.get<uint64_t>(); });
  }

  Status exportPosixFd(uint64_t handle, int* fd) override {
    // A descriptor crosses only a socket: the export is asked for there, and the node's answer
    // carries the new descriptor (SCM_RIGHTS).
    if (lost_.load(std::memory_order_acquire)) return Status::kNodeLost;
    std::vector<uint8_t> ask;
    wire::Writer(&ask).put(handle).put(nextTag()).put(tTraced);
    ipc::Msg type{};
    std::vector<uint8_t> reply;
    int got = -1;
    {
      std::lock_guard<std::mutex> lock(sockMu_);
      if (!ipc::sendMessage(sock_.get(), ipc::Msg::kExport, ask) ||
          !ipc::receiveMessage(sock_.get(), &type, &reply, &got) || type != ipc::Msg::kDescriptor) {
        if (got >= 0) close(got);
        declareLost();
        return Status::kNodeLost;
      }
    }
    wire::Reader r(reply.data(), reply.size());
    noteAdmission(r);
    const Status s = r.get<Status>();
    if (s == Status::kOk && got >= 0) {
      *fd = got;
      return Status::kOk;
    }
    if (got >= 0) close(got);
    return s == Status::kOk ? Status::kOutOfMemory : s;
  }

  Status importPosixFd(int fd, uint64_t* handle) override {
    // The node recognises its descriptors by the file they refer to; a closed or invalid
    // descriptor refers to none, as in the embedded node.
    struct stat st {};
    if (fd < 0 || fstat(fd, &st) != 0) return Status::kNotShareable;
    return call(Op::kImportPosixFile,
                [&](wire::Writer& w) { w.put(static_cast<uint64_t>(st.st_dev)).put(static_cast<uint64_t>(st.st_ino)); },
                [&](wire::Reader& r) { *handle = r.get<uint64_t>(); });
  }

  Status exportFabric(uint64_t handle, uint8_t out[64]) override {
    return call(Op::kExportFabric, [&](wire::Writer& w) { w.put(handle); },
                [&](wire::Reader& r) { r.bytes(out, 64); });
  }
  Status importFabric(const uint8_t in[64], uint64_t* handle) override {
    return call(Op::kImportFabric, [&](wire::Writer& w) { w.bytes(in, 64); },
                [&](wire::Reader& r) { *handle = r.get<uint64_t>(); });
  }

  Status reserve(uint64_t size, uint64_t alignment, uint64_t hint, uint64_t* va) override {
    return call(Op::kReserve, [&](wire::Writer& w) { w.put(size).put(alignment).put(hint); },
                [&](wire::Reader& r) { *va = r.get<uint64_t>(); });
  }
  Status freeReservation(uint64_t va, uint64_t size) override {
    return call(Op::kFreeReservation, [&](wire::Writer& w) { w.put(va).put(size); });
  }
  Status map(uint64_t va, uint64_t size, uint64_t offset, uint64_t handle) override {
    return call(Op::kMap, [&](wire::Writer& w) { w.put(va).put(size).put(offset).put(handle); });
  }
  Status unmap(uint64_t va, uint64_t size) override {
    return call(Op::kUnmap, [&](wire::Writer& w) { w.put(va).put(size); });
  }
  Status setAccess(uint64_t va, uint64_t size, int device, Access access) override {
    return call(Op::kSetAccess, [&](wire::Writer& w) { w.put(va).put(size).put(device).put(access); });
  }
  Status getAccess(uint64_t va, int device, Access* access) override {
    return call(Op::kGetAccess, [&](wire::Writer& w) { w.put(va).put(device); },
                [&](wire::Reader& r) { *access = r.get<Access>(); });
  }
  Status allocLinear(int device, uint64_t size, uint64_t* va) override {
    return call(Op::kAllocLinear, [&](wire::Writer& w) { w.put(device).put(size); },
                [&](wire::Reader& r) { *va = r.get<uint64_t>(); });
  }
  Status freeLinear(uint64_t va) override {
    return call(Op::kFreeLinear, [&](wire::Writer& w) { w.put(va); });
  }
  Status allocPooled(const AllocationProps& props, uint64_t size, const std::vector<int>& accessors,
                     uint64_t* va) override {
    return call(Op::kAllocPooled, [&](wire::Writer& w) { channel::put(w, props); w.put(size).put(accessors); },
                [&](wire::Reader& r) { *va = r.get<uint64_t>(); });
  }
  Status freePooled(uint64_t va) override {
    return call(Op::kFreePooled, [&](wire::Writer& w) { w.put(va); });
  }
  Status setPooledAccess(uint64_t va, int device, Access access) override {
    return call(Op::kSetPooledAccess, [&](wire::Writer& w) { w.put(va).put(device).put(access); });
  }
  Status pointerInfo(uint64_t va, int device, PointerInfo* info) override {
    return call(Op::kPointerInfo, [&](wire::Writer& w) { w.put(va).put(device); },
                [&](wire::Reader& r) { channel::get(r, info); });
  }
  Status memoryInfo(int device, uint64_t* free, uint64_t* total) override {
    return call(Op::kMemoryInfo, [&](wire::Writer& w) { w.put(device); }, [&](wire::Reader& r) {
      *free = r.get<uint64_t>();
      *total = r.get<uint64_t>();
    });
  }

  Status submit(const DeviceOp& op, const std::vector<WorkDone>& after, WorkDone* done) override {
    const bool copy = op.kind == DeviceOp::Kind::kCopy;
    HostData src = HostData::kNone;
    uint64_t srcBlock = 0;
    if (copy && !op.srcDevice) {
      src = HostData::kInline;
      if (op.bytes > channel::kInlineBytes) {
        // Too much for the request: a block of the segment first, filled from here.
        const Status s = call(Op::kStage, [&](wire::Writer& w) { w.put(op.bytes); },
                              [&](wire::Reader& r) { srcBlock = r.get<uint64_t>(); });
        if (s != Status::kOk) return s;
        std::memcpy(segmentAt(srcBlock), reinterpret_cast<const void*>(op.src), op.bytes);
        src = HostData::kBlock;
      }
    }
    const bool dstHost = copy && !op.dstDevice;
    std::vector<uint64_t> afterIds;
    for (const WorkDone& w : after) afterIds.push_back(remoteId(w));
    uint64_t id = 0, dstBlock = 0;
    const Status s = call(
        Op::kSubmit,
        [&](wire::Writer& w) {
          channel::put(w, op);
          w.put(src);
          if (src == HostData::kInline) w.bytes(reinterpret_cast<const void*>(op.src), op.bytes);
          if (src == HostData::kBlock) w.put(srcBlock);
          w.put(dstHost ? HostData::kReturn : HostData::kNone);
          w.put(afterIds);
        },
        [&](wire::Reader& r) {
          id = r.get<uint64_t>();
          if (dstHost) dstBlock = r.get<uint64_t>();
        });
    if (s != Status::kOk) return s;
    *done = localCompletion(id);
    // The bytes come back once the work is known to be done (a block of 0: the node moves no
    // data, MCSIM_TIMING_ONLY).
    if (dstHost && dstBlock != 0) {
      std::lock_guard<std::mutex> lock(mu_);
      copyOuts_.push_back(CopyOut{*done, id, dstBlock, reinterpret_cast<void*>(op.dst), op.bytes});
    }
    return Status::kOk;
  }

  uint64_t waitFor(const WorkDone& w) override {
    uint64_t ps = 0;
    askDone(Op::kWaitFor, w, &ps);
    return ps;
  }
  bool poll(const WorkDone& w) override {
    uint64_t ps = 0;
    return askDone(Op::kPoll, w, &ps);
  }
  bool isDone(const WorkDone& w) override {
    if (w->done()) return true;
    uint64_t ps = 0;
    return askDone(Op::kIsDone, w, &ps);
  }
  uint64_t nowPs() override {
    uint64_t ps = 0;
    call(Op::kNowPs, [](wire::Writer&) {}, [&](wire::Reader& r) { ps = r.get<uint64_t>(); });
    return ps;
  }

  Status multicastCreate(const MulticastProps& props, uint64_t* handle) override {
    return call(Op::kMulticastCreate, [&](wire::Writer& w) { channel::put(w, props); },
                [&](wire::Reader& r) { *handle = r.get<uint64_t>(); });
  }
  Status multicastAddDevice(uint64_t handle, int device) override {
    return call(Op::kMulticastAddDevice, [&](wire::Writer& w) { w.put(handle).put(device); });
  }
  Status multicastBindMem(uint64_t mcHandle, int device, uint64_t mcOffset, uint64_t memHandle, uint64_t memOffset,
                          uint64_t size) override {
    return call(Op::kMulticastBindMem, [&](wire::Writer& w) {
      w.put(mcHandle).put(device).put(mcOffset).put(memHandle).put(memOffset).put(size);
    });
  }
  Status multicastBindAddr(uint64_t mcHandle, int device, uint64_t mcOffset, uint64_t va, uint64_t size) override {
    return call(Op::kMulticastBindAddr,
                [&](wire::Writer& w) { w.put(mcHandle).put(device).put(mcOffset).put(va).put(size); });
  }
  Status multicastUnbind(uint64_t mcHandle, int device, uint64_t mcOffset, uint64_t size) override {
    return call(Op::kMulticastUnbind, [&](wire::Writer& w) { w.put(mcHandle).put(device).put(mcOffset).put(size); });
  }
  FabricManagerState fabricManagerState() override {
    FabricManagerState st = FabricManagerState::kNotStarted;
    call(Op::kFabricManagerState, [](wire::Writer&) {}, [&](wire::Reader& r) { st = r.get<FabricManagerState>(); });
    return st;
  }
  void setFabricManagerState(FabricManagerState s) override {
    call(Op::kSetFabricManagerState, [&](wire::Writer& w) { w.put(s); });
  }

  bool faultsActive() const override { return header_->faultsActive.load(std::memory_order_acquire) != 0; }

  FaultOutcome onEntry(const char* symbol, int device, int rank, const FaultArgument* args, size_t argCount,
                       bool fabricMoment) override {
    FaultOutcome out;
    const Status s = call(
        Op::kOnEntry,
        [&](wire::Writer& w) {
          w.put(std::string(symbol)).put(device).put(rank).put(fabricMoment).put<uint64_t>(argCount);
          for (size_t i = 0; i < argCount; ++i) {
            const FaultArgument& a = args[i];
            w.put(std::string(a.name)).put(a.value).put(std::string(a.text != nullptr ? a.text : ""));
            w.put(a.isText).put(a.present);
          }
        },
        [&](wire::Reader& r) {
          out.fail = r.getBool();
          out.result = r.getString();
          out.status = r.get<Status>();
        });
    if (s != Status::kOk) {
      // The node is gone (or the call was given up while it was held): the call fails.
      out.fail = true;
      out.status = s;
    }
    return out;
  }

  void installFaultPlan(std::vector<FaultRule> rules, uint64_t seed) override {
    call(Op::kInstallFaultPlan, [&](wire::Writer& w) {
      channel::put(w, rules);
      w.put(seed);
    });
  }
  void releaseFault(const std::string& label) override {
    call(Op::kReleaseFault, [&](wire::Writer& w) { w.put(label); });
  }
  std::vector<FaultRuleCounts> faultCounts() override {
    std::vector<FaultRuleCounts> out;
    call(Op::kFaultCounts, [](wire::Writer&) {}, [&](wire::Reader& r) { channel::get(r, &out); });
    return out;
  }
  std::vector<FaultRule> faultRules() override {
    std::vector<FaultRule> out;
    call(Op::kFaultRules, [](wire::Writer&) {}, [&](wire::Reader& r) { channel::get(r, &out); });
    return out;
  }
  bool imexChannelPresent() const override { return header_->imexPresent.load(std::memory_order_acquire) != 0; }
  bool nvlinkUp(int gpu) override {
    bool up = false;
    call(Op::kNvlinkUp, [&](wire::Writer& w) { w.put(gpu); }, [&](wire::Reader& r) { up = r.getBool(); });
    return up;
  }
  uint64_t stateDigest() override {
    uint64_t d = 0;
    call(Op::kStateDigest, [](wire::Writer&) {}, [&](wire::Reader& r) { d = r.get<uint64_t>(); });
    return d;
  }
  NodeStats stats() override {
    NodeStats s;
    call(Op::kStats, [](wire::Writer&) {}, [&](wire::Reader& r) { channel::get(r, &s); });
    return s;
  }

  void beginTraced(std::vector<uint64_t> tags) override {
    tTraced = false;  // the notice of tags given up is no traced request
    giveUpTags();
    tTags = std::move(tags);
    tNextTag = 0;
    tAdmissions.clear();
    tTraced = true;
  }
  std::vector<Admission> endTraced() override {
    tTraced = false;
    giveUpTags();
    std::vector<Admission> out;
    out.swap(tAdmissions);
    return out;
  }
  std::string sharedSettings() const override { return settings_; }

 private:
  ClientNode() = default;

  struct CopyOut {
    WorkDone done;  // keeps the node's work alive until its bytes are out
    uint64_t id;
    uint64_t block;
    void* dst;
    uint64_t bytes;
  };

  bool connect(const std::string& name, int rank, std::string* error) {
    name_ = name;
    const ipc::NodePaths paths = ipc::nodePaths(name);
    sock_.reset(ipc::connectToNode(paths, error));
    if (!sock_) {
      *error = "no node '" + name + "' to attach to (" + *error + "; start one with `mcsim node start --name " +
               name + "`)";
      return false;
    }
    vaBase_ = reserveDeviceWindow();
    if (vaBase_ == 0) {
      *error = "cannot reserve the simulated device address space";
      return false;
    }
    std::vector<uint8_t> hello;
    wire::Writer(&hello).put(ipc::HelloKind::kAttach).put(ipc::kProtocolVersion).put(rank).put(vaBase_);
    ipc::Msg type{};
    std::vector<uint8_t> reply;
    if (!ipc::sendMessage(sock_.get(), ipc::Msg::kHello, hello) || !ipc::receiveMessage(sock_.get(), &type, &reply)) {
      *error = "node '" + name + "' did not answer";
      return false;
    }
    wire::Reader r(reply.data(), reply.size());
    if (type != ipc::Msg::kWelcome) {
      *error = "node '" + name + "' refused: " + r.getString();
      return false;
    }
    nodePid_ = r.get<int>();
    const std::string segment = r.getString();
    const std::string topology = r.getString();
    vaLimit_ = r.get<uint64_t>();
    const uint64_t firstChannel = r.get<uint64_t>();
    settings_ = r.getString();
    if (!r.ok()) {
      *error = "node '" + name + "' answered with a malformed welcome";
      return false;
    }
    try {
      segment_ = std::make_unique<bip::managed_shared_memory>(bip::open_only, segment.c_str());
    } catch (const bip::interprocess_exception& e) {
      *error = "cannot open the segment of node '" + name + "': " + e.what();
      return false;
    }
    header_ = segment_->find<channel::SegmentHeader>(channel::kHeaderName).first;
    if (header_ == nullptr || header_->magic != channel::kSegmentMagic || header_->version != channel::kSegmentVersion) {
      *error = "the segment of node '" + name + "' is not one this driver knows";
      return false;
    }
    try {
      preset_ = loadPreset(topology);
    } catch (const std::exception& e) {
      *error = "cannot load the preset of node '" + name + "': " + e.what();
      return false;
    }
    idle_.push_back(static_cast<Channel*>(segmentAt(firstChannel)));
    return true;
  }

  void* segmentAt(uint64_t offset) const {
    return segment_->get_address_from_handle(static_cast<bip::managed_shared_memory::handle_t>(offset));
  }

  bool nodeAlive() const {
    if (header_->stopping.load(std::memory_order_acquire) != 0) return false;
    return kill(nodePid_, 0) == 0 || errno == EPERM;
  }

  void declareLost() {
    if (!lost_.exchange(true)) {
      std::fprintf(stderr, "mcsim: node '%s' is gone; driver calls fail with CUDA_ERROR_DEVICE_UNAVAILABLE\n",
                   name_.c_str());
    }
  }

  // An idle channel, or a new one from the node; nullptr once the node is gone.
  Channel* takeChannel() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!idle_.empty()) {
        Channel* c = idle_.back();
        idle_.pop_back();
        return c;
      }
    }
    ipc::Msg type{};
    std::vector<uint8_t> reply;
    std::lock_guard<std::mutex> lock(sockMu_);
    if (!ipc::sendMessage(sock_.get(), ipc::Msg::kNewChannel, {}) || !ipc::receiveMessage(sock_.get(), &type, &reply) ||
        type != ipc::Msg::kChannel) {
      declareLost();
      return nullptr;
    }
    wire::Reader r(reply.data(), reply.size());
    return static_cast<Channel*>(segmentAt(r.get<uint64_t>()));
  }

  void giveChannel(Channel* c) {
    std::lock_guard<std::mutex> lock(mu_);
    idle_.push_back(c);
  }

  // One call: writes the request (after what rides along), waits for the answer, reads the
  // outputs on success. The node being gone fails every call with kNodeLost.
  template <typename Args, typename Outs>
  Status call(Op op, Args args, Outs outs) {
    if (lost_.load(std::memory_order_acquire)) return Status::kNodeLost;
    Channel* ch = takeChannel();
    if (ch == nullptr) return Status::kNodeLost;
    wire::Writer w(ch->requestData, channel::kChannelBytes);
    const uint64_t tag = nextTag();
    w.put(op).put(static_cast<int64_t>(syscall(SYS_gettid))).put(tag).put(tTraced);
    // What rides along is taken out of its list, and put back if the request cannot go.
    auto takeSome = [](std::mutex& mu, std::vector<uint64_t>& from) {
      std::lock_guard<std::mutex> lock(mu);
      const auto n = static_cast<long>(std::min(from.size(), kMaxPiggyback));
      std::vector<uint64_t> taken(from.begin(), from.begin() + n);
      from.erase(from.begin(), from.begin() + n);
      return taken;
    };
    const std::vector<uint64_t> released = takeSome(ledger_->mu, ledger_->released);
    const std::vector<uint64_t> freed = takeSome(mu_, freedBlocks_);
    w.put(released).put(freed);
    args(w);
    if (!w.fits()) {
      {
        std::lock_guard<std::mutex> lock(ledger_->mu);
        ledger_->released.insert(ledger_->released.end(), released.begin(), released.end());
      }
      std::lock_guard<std::mutex> lock(mu_);
      freedBlocks_.insert(freedBlocks_.end(), freed.begin(), freed.end());
      idle_.push_back(ch);
      if (tag != 0) --tNextTag;  // the tag stays for the next request
      return Status::kInvalidValue;  // a request larger than a channel: nothing this driver sends
    }
    ch->requestBytes = w.size();
    ch->request.post();
    while (!ch->response.waitFor(kLivenessCheckMs)) {
      if (!nodeAlive()) {
        declareLost();  // the channel is lost with the node
        return Status::kNodeLost;
      }
    }
    wire::Reader r(ch->responseData, std::min<uint64_t>(ch->responseBytes, channel::kChannelBytes));
    noteAdmission(r);
    Status s = r.get<Status>();
    if (s == Status::kHang) {
      // The node gave the call up after a deadlock or suspected-hang report: show it here too.
      const std::string report = r.getString();
      std::fprintf(stderr, "mcsim: node '%s' reports:\n%s", name_.c_str(), report.c_str());
      std::fflush(stderr);
      if (abortOnHang()) std::abort();
    }
    if (s == Status::kOk) {
      outs(r);
      if (!r.ok()) s = Status::kInvalidValue;
    }
    giveChannel(ch);
    return s;
  }
  template <typename Args>
  Status call(Op op, Args args) {
    return call(op, args, [](wire::Reader&) {});
  }

  // The admission an answer starts with, kept for endTraced while the thread's requests are traced.
  void noteAdmission(wire::Reader& r) {
    Admission a;
    channel::get(r, &a);
    if (tTraced) tAdmissions.push_back(a);
  }

  // The recorded admission number the thread's next request is to take (0: none).
  static uint64_t nextTag() { return tNextTag < tTags.size() ? tTags[tNextTag++] : 0; }

  // Tags of a replayed call that its requests did not use: the node passes their turns over.
  // Called while the thread's requests are not traced.
  void giveUpTags() {
    std::vector<uint64_t> unused(tTags.begin() + static_cast<long>(std::min(tNextTag, tTags.size())), tTags.end());
    tTags.clear();
    tNextTag = 0;
    if (!unused.empty()) call(Op::kSkipAdmissions, [&](wire::Writer& w) { w.put(unused); });
  }

  // The node's id of a local completion.
  uint64_t remoteId(const WorkDone& w) {
    std::lock_guard<std::mutex> lock(ledger_->mu);
    auto it = ledger_->remote.find(w.get());
    return it == ledger_->remote.end() ? 0 : it->second;
  }

  WorkDone localCompletion(uint64_t id) {
    std::shared_ptr<Ledger> ledger = ledger_;
    WorkDone c(new model::Completion(), [ledger](model::Completion* p) {
      {
        std::lock_guard<std::mutex> lock(ledger->mu);
        auto it = ledger->remote.find(p);
        ledger->released.push_back(it->second);
        ledger->remote.erase(it);
      }
      delete p;
    });
    std::lock_guard<std::mutex> lock(ledger_->mu);
    ledger_->remote[c.get()] = id;
    return c;
  }

  // waitFor / poll / isDone of `w`, which also asks after the copies whose bytes are still to
  // come back, settles what is done and copies those bytes out. Returns whether `w` is done.
  bool askDone(Op op, const WorkDone& w, uint64_t* ps) {
    std::vector<CopyOut> pending;
    {
      std::lock_guard<std::mutex> lock(mu_);
      pending.swap(copyOuts_);
    }
    std::vector<uint64_t> ids;
    for (const CopyOut& c : pending) ids.push_back(c.id);
    bool done = false;
    std::vector<uint64_t> doneAt;  // per pending copy: 0 = not done, else 1 + its time
    const Status s = call(
        op, [&](wire::Writer& wr) { wr.put(remoteId(w)).put(ids); },
        [&](wire::Reader& r) {
          done = r.getBool();
          *ps = r.get<uint64_t>();
          doneAt = r.getVector<uint64_t>();
        });
    if (s == Status::kOk && done) w->settle(*ps);
    std::vector<CopyOut> still;
    for (size_t i = 0; i < pending.size(); ++i) {
      CopyOut& c = pending[i];
      if (s != Status::kOk || i >= doneAt.size() || doneAt[i] == 0) {
        still.push_back(std::move(c));
        continue;
      }
      c.done->settle(doneAt[i] - 1);
      std::memcpy(c.dst, segmentAt(c.block), c.bytes);
      std::lock_guard<std::mutex> lock(mu_);
      freedBlocks_.push_back(c.block);
    }
    std::lock_guard<std::mutex> lock(mu_);
    for (CopyOut& c : still) copyOuts_.push_back(std::move(c));
    return done;
  }

  std::string name_;
  UniqueFd sock_;
  std::mutex sockMu_;  // one exchange on the socket at a time
  std::unique_ptr<bip::managed_shared_memory> segment_;
  channel::SegmentHeader* header_ = nullptr;
  int nodePid_ = 0;
  Preset preset_;
  uint64_t vaBase_ = 0, vaLimit_ = 0;
  std::atomic<bool> lost_{false};
  std::string settings_;  // the node's settings (JSON), from its welcome
  // This thread's traced requests (beginTraced to endTraced), their admissions, and the tags a
  // replay gave it.
  static thread_local bool tTraced;
  static thread_local std::vector<Admission> tAdmissions;
  static thread_local std::vector<uint64_t> tTags;
  static thread_local size_t tNextTag;

  std::mutex mu_;  // guards what follows
  std::vector<Channel*> idle_;
  std::vector<uint64_t> freedBlocks_;
  std::vector<CopyOut> copyOuts_;
  std::shared_ptr<Ledger> ledger_ = std::make_shared<Ledger>();
};

thread_local bool ClientNode::tTraced = false;
thread_local std::vector<Admission> ClientNode::tAdmissions;
thread_local std::vector<uint64_t> ClientNode::tTags;
thread_local size_t ClientNode::tNextTag = 0;

}  // namespace

std::unique_ptr<Node> attachSharedNode(const std::string& name, int rank, std::string* error) {
  return ClientNode::attach(name, rank, error);
}

}  // namespace mcsim::fabric
