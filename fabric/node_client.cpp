// The client side of a shared node: a Node whose calls cross to the node process (node_channel.h).
//
// Each call takes an idle request channel (asking the node for a new one when every channel is in
// use by another thread), writes its arguments, and waits for the answer. Device work is answered
// with an id; the driver gets a local Completion that stands for it and that this side settles
// when the node says the work is done (waitFor, poll, isDone). Host data of copies travels through
// the segment: a source inside the request (or a staged block when large), a destination through
// a block the node writes and this side copies out once the work is known to be done, before the
// call that learned it returns to the program.
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <boost/interprocess/managed_shared_memory.hpp>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "fabric/node.h"
#include "fabric/node_channel.h"
#include "fabric/node_ops.h"
#include "fabric/node_host.h"
#include "fabric/node_ipc.h"
#include "model/hang_abort.h"
#include "fabric/unique_fd.h"
#include "model/status.h"
#include "model/thread_owned.h"

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

class ClientNode final : public Node {
 public:
  static std::unique_ptr<ClientNode> attach(const std::string& name, int rank, int tray, const NodeSettings& settings,
                                            std::string* error) {
    std::unique_ptr<ClientNode> n(new ClientNode());
    n->local_ = settings;
    if (!n->connect(name, rank, tray, error)) return nullptr;
    return n;
  }

  ~ClientNode() override {
    // Closing the socket detaches: the node gives back everything this process held.
    sock_.reset();
  }

  const Preset& preset() const override { return preset_; }
  uint64_t vaBase() const override { return vaBase_; }
  uint64_t vaLimit() const override { return vaLimit_; }

  // Every NODE_OP of node_ops.def: its arguments cross, its answer comes back.
#define NODE_OP(Return, name, params)                                                                   \
  Return name(MCSIM_NODE_DECLS(params)) override {                                                      \
    return remote<Return>(Op::name, wire::Kinds<MCSIM_NODE_KINDS(params)>{} MCSIM_NODE_COMMA_NAMES(params)); \
  }
#define NODE_CALL(Return, name, params)
#define NODE_WIRE(name, inputs, outputs)
#include "fabric/node_ops.def"

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
    channel::Reply<Op::importPosixFile> a;
    const Status s = ask<Op::importPosixFile>({static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino)}, &a);
    if (s == Status::kOk) *handle = a.handle;
    return s;
  }

  Status submit(const DeviceOp& op, const std::vector<WorkDone>& after, WorkDone* done) override {
    const bool copy = op.kind == DeviceOp::Kind::kCopy;
    channel::Request<Op::submit> q;
    q.op = op;
    if (copy && !op.srcDevice) {
      q.src = HostData::kInline;
      q.data = channel::ByteRun{reinterpret_cast<const uint8_t*>(op.src), op.bytes};
      if (op.bytes > channel::kInlineBytes) {
        // Too much for the request: a block of the segment first, filled from here.
        channel::Reply<Op::stage> staged;
        const Status s = ask<Op::stage>({op.bytes}, &staged);
        if (s != Status::kOk) return s;
        std::memcpy(segmentAt(staged.block), reinterpret_cast<const void*>(op.src), op.bytes);
        q.src = HostData::kBlock;
        q.data = {};
        q.srcBlock = staged.block;
      }
    }
    const bool dstHost = copy && !op.dstDevice;
    q.dst = dstHost ? HostData::kReturn : HostData::kNone;
    for (const WorkDone& w : after) q.after.push_back(remoteId(w));
    channel::Reply<Op::submit> a;
    const Status s = ask<Op::submit>(q, &a);
    if (s != Status::kOk) return s;
    const uint64_t id = a.work, dstBlock = a.dstBlock;
    *done = localCompletion(id);
    // The bytes come back once the work is known to be done (a block of 0: the node moves no
    // data, MCSIM_TIMING_ONLY).
    if (dstHost && dstBlock != 0) {
      std::lock_guard<std::mutex> lock(mu_);
      copyOuts_.push_back(std::make_shared<CopyOut>(CopyOut{*done, id, dstBlock, reinterpret_cast<void*>(op.dst), op.bytes}));
    }
    return Status::kOk;
  }

  Status allocHost(uint64_t bytes, void** host) override {
    // A block of the segment, which this process and the node both map: the node's kernels reach
    // it at the address it has here.
    channel::Reply<Op::allocHost> a;
    const Status s = ask<Op::allocHost>({bytes, segmentBase()}, &a);
    if (s == Status::kOutOfMemory && bytes != 0) {
      // The segment is too full: this process's own memory, which copies reach and kernels do not.
      void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (p == MAP_FAILED) return Status::kOutOfMemory;
      static std::once_flag said;
      std::call_once(said, [&] {
        std::fprintf(stderr, "mcsim: pinned host memory of %llu bytes does not fit in node '%s''s segment: its kernels "
                     "cannot reach it (start the node with a larger --segment-mib)\n",
                     static_cast<unsigned long long>(bytes), name_.c_str());
      });
      std::lock_guard<std::mutex> lock(mu_);
      privateHost_[reinterpret_cast<uint64_t>(p)] = bytes;
      *host = p;
      return Status::kOk;
    }
    if (s != Status::kOk) return s;
    *host = segmentAt(a.block);
    return Status::kOk;
  }

  Status freeHost(void* host) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = privateHost_.find(reinterpret_cast<uint64_t>(host));
      if (it != privateHost_.end()) {
        munmap(host, it->second);
        privateHost_.erase(it);
        return Status::kOk;
      }
    }
    const uint64_t base = segmentBase(), p = reinterpret_cast<uint64_t>(host);
    if (p <= base) return Status::kInvalidValue;
    channel::Reply<Op::freeHost> a;
    return ask<Op::freeHost>({p - base, base}, &a);
  }

  Status ipcEventRecord(uint64_t key, const WorkDone& w) override {
    channel::Reply<Op::ipcEventRecord> a;
    return ask<Op::ipcEventRecord>({key, remoteId(w)}, &a);
  }

  Status ipcEventLatest(uint64_t key, WorkDone* w) override {
    channel::Reply<Op::ipcEventLatest> a;
    const Status s = ask<Op::ipcEventLatest>({key}, &a);
    if (s != Status::kOk) return s;
    *w = a.work == 0 ? nullptr : localCompletion(a.work);
    return Status::kOk;
  }

  Status waitFor(const WorkDone& w, uint64_t* ps) override {
    bool done = false;
    const Status s = askDone<Op::waitFor>(w, &done, ps);
    if (s != Status::kOk) return s;
    return done ? Status::kOk : Status::kHang;  // the node gave the wait up
  }
  Status poll(const WorkDone& w, uint64_t hostPs, bool* done) override {
    uint64_t ps = 0;
    return askDone<Op::poll>(w, done, &ps, hostPs);
  }
  Status isDone(const WorkDone& w, bool* done) override {
    *done = w->done();
    if (*done) return Status::kOk;
    uint64_t ps = 0;
    return askDone<Op::isDone>(w, done, &ps);
  }
  bool faultsActive() const override { return header_->faultsActive.load(std::memory_order_acquire) != 0; }

  FaultOutcome onEntry(const char* symbol, int device, int rank, const FaultArgument* args, size_t argCount,
                       bool fabricMoment) override {
    channel::Request<Op::onEntry> q{symbol, device, rank, fabricMoment, {}};
    for (size_t i = 0; i < argCount; ++i) {
      const FaultArgument& a = args[i];
      q.args.push_back({a.name, a.value, a.text != nullptr ? a.text : "", a.isText, a.present});
    }
    channel::Reply<Op::onEntry> a;
    const Status s = ask<Op::onEntry>(q, &a);
    FaultOutcome out{a.fail, a.result, a.status};
    if (s != Status::kOk) {
      // The node is gone (or the call was given up while it was held): the call fails.
      out.fail = true;
      out.status = s;
    }
    return out;
  }

  bool lost() const override { return lost_.load(std::memory_order_acquire); }
  bool imexChannelPresent() const override { return header_->imexPresent.load(std::memory_order_acquire) != 0; }
  void beginTraced(std::vector<uint64_t> given) override {
    tTraced = false;  // the notice of tags given up is no traced request
    giveUpTags();
    tags() = std::move(given);
    tNextTag = 0;
    admissions().clear();
    tTraced = true;
  }
  std::vector<Admission> endTraced() override {
    tTraced = false;
    giveUpTags();
    std::vector<Admission> out;
    out.swap(admissions());
    return out;
  }
  std::string sharedSettings() const override { return settings_; }

 private:
  ClientNode() = default;

  // A copy whose host destination's bytes are still to come back. It stays in copyOuts_ until
  // they are out: a thread that learns the work is done claims it and copies; a thread that finds
  // it claimed by another waits for that copy before its own call returns.
  struct CopyOut {
    WorkDone done;  // keeps the node's work alive until its bytes are out; settled once they are
    uint64_t id;
    uint64_t block;
    void* dst;
    uint64_t bytes;
    bool claimed = false;  // under mu_
    bool copied = false;   // under mu_
  };

  bool connect(const std::string& name, int rank, int tray, std::string* error) {
    name_ = name;
    const ipc::NodePaths paths = ipc::nodePaths(name, local_.nodeDir);
    sock_.reset(ipc::connectToNode(paths, error));
    if (!sock_) {
      *error = "no node '" + name + "' to attach to (" + *error + "; start one with `mcsim node start --name " +
               name + "`)";
      return false;
    }
    window_ = DeviceWindow::reserve();
    vaBase_ = window_.base();
    if (vaBase_ == 0) {
      *error = "cannot reserve the simulated device address space";
      return false;
    }
    ipc::Hello hello;
    hello.kind = ipc::HelloKind::kAttach;
    hello.rank = rank;
    hello.tray = tray;
    hello.vaBase = vaBase_;
    ipc::Msg type{};
    std::vector<uint8_t> reply;
    if (!ipc::sendMessage(sock_.get(), ipc::Msg::kHello, ipc::encode(hello)) ||
        !ipc::receiveMessage(sock_.get(), &type, &reply)) {
      *error = "node '" + name + "' did not answer";
      return false;
    }
    if (type != ipc::Msg::kWelcome) {
      *error = ipc::describeRefusal(name, reply);
      return false;
    }
    ipc::Welcome welcome;
    if (!ipc::decode(reply, &welcome)) {
      *error = "node '" + name + "' answered with a malformed welcome";
      return false;
    }
    if ((welcome.capabilities & ipc::kNeeded) != ipc::kNeeded) {
      *error = "node '" + name + "' lacks what this driver needs: " +
               ipc::capabilityNames(ipc::kNeeded & ~welcome.capabilities);
      return false;
    }
    nodePid_ = welcome.nodePid;
    const std::string& segment = welcome.segment;
    const std::string& topology = welcome.topology;
    vaLimit_ = welcome.vaLimit;
    const uint64_t firstChannel = welcome.firstChannel;
    settings_ = welcome.settings;
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

  uint64_t segmentBase() const { return reinterpret_cast<uint64_t>(segment_->get_address()); }
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
    channel::RequestHeader header;
    header.op = op;
    header.thread = static_cast<int64_t>(syscall(SYS_gettid));
    header.tag = nextTag();
    header.traced = tTraced;
    // What rides along is taken out of its list, and put back if the request cannot go.
    auto takeSome = [](std::mutex& mu, std::vector<uint64_t>& from) {
      std::lock_guard<std::mutex> lock(mu);
      const auto n = static_cast<long>(std::min(from.size(), kMaxPiggyback));
      std::vector<uint64_t> taken(from.begin(), from.begin() + n);
      from.erase(from.begin(), from.begin() + n);
      return taken;
    };
    header.released = takeSome(ledger_->mu, ledger_->released);
    header.freed = takeSome(mu_, freedBlocks_);
    const std::vector<uint64_t>& released = header.released;
    const std::vector<uint64_t>& freed = header.freed;
    w.put(header);
    args(w);
    if (!w.fits()) {
      {
        std::lock_guard<std::mutex> lock(ledger_->mu);
        ledger_->released.insert(ledger_->released.end(), released.begin(), released.end());
      }
      std::lock_guard<std::mutex> lock(mu_);
      freedBlocks_.insert(freedBlocks_.end(), freed.begin(), freed.end());
      idle_.push_back(ch);
      if (header.tag != 0) --tNextTag;  // the tag stays for the next request
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
      if (local_.hang.abortOnHang) model::abortOnHang();
    } else if (s != Status::kOk) {
      // The node's reason for a refusal, for this process's call log (MCSIM_DEBUG).
      const std::string why = r.getString();
      if (!why.empty() && r.ok()) refuse(s, [&] { return why; });
    }
    if (s == Status::kOk) {
      outs(r);
      if (!r.ok() || !r.atEnd()) s = Status::kInvalidValue;  // an answer this driver cannot read
    }
    giveChannel(ch);
    return s;
  }
  // A transport request of node_ops.def (NODE_WIRE).
  template <Op op>
  Status ask(const channel::Request<op>& q, channel::Reply<op>* a) {
    return call(op, [&](wire::Writer& w) { w.put(q); }, [&](wire::Reader& r) { r.read(a); });
  }

  // A NODE_OP of node_ops.def: its inputs cross, its return value and outputs come back.
  template <typename R, typename... K, typename... A>
  R remote(Op op, wire::Kinds<K...> kinds, const A&... a) {
    std::conditional_t<wire::kReturnsValue<R>, R, int> result{};
    const Status s = call(
        op, [&](wire::Writer& w) { wire::sendInputs(kinds, w, a...); },
        [&](wire::Reader& r) {
          if constexpr (wire::kReturnsValue<R>) {
            wire::receiveOutputs(kinds, r, &result, a...);
          } else {
            wire::receiveOutputs<R>(kinds, r, nullptr, a...);
          }
        });
    if constexpr (std::is_same_v<R, Status>) {
      return s;
    } else if constexpr (wire::kReturnsValue<R>) {
      return result;  // (the type's default when the node is gone)
    } else {
      (void)s;
    }
  }

  // The admission an answer starts with, kept for endTraced while the thread's requests are traced.
  void noteAdmission(wire::Reader& r) {
    Admission a;
    r.read(&a);
    if (tTraced) admissions().push_back(a);
  }

  // The recorded admission number the thread's next request is to take (0: none).
  static uint64_t nextTag() {
    const std::vector<uint64_t>& t = tags();
    return tNextTag < t.size() ? t[tNextTag++] : 0;
  }

  // Tags of a replayed call that its requests did not use: the node passes their turns over.
  // Called while the thread's requests are not traced.
  void giveUpTags() {
    std::vector<uint64_t>& given = tags();
    std::vector<uint64_t> unused(given.begin() + static_cast<long>(std::min(tNextTag, given.size())), given.end());
    given.clear();
    tNextTag = 0;
    channel::Reply<Op::skipAdmissions> none;
    if (!unused.empty()) ask<Op::skipAdmissions>({unused}, &none);
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
  // come back, copies out those that are done and settles them. Sets whether `w` is done (never
  // when the node did not answer: kNodeLost). When it returns, every copy that was done when the
  // node answered has its bytes out, whichever thread copied them, and only then is a completion
  // settled: a thread that finds a copy done (its own wait, a query, the driver's `pending`) reads
  // its bytes. (Each call used to take the whole list for itself: a thread whose copy another
  // thread's call had taken returned before its bytes were out and read stale memory.)
  template <Op op>
  Status askDone(const WorkDone& w, bool* isDone, uint64_t* ps, uint64_t hostPs = 0) {
    std::vector<std::shared_ptr<CopyOut>> seen;  // every copy not out yet, claimed or not
    {
      std::lock_guard<std::mutex> lock(mu_);
      seen = copyOuts_;
    }
    channel::Request<op> q;
    q.work = remoteId(w);
    for (const auto& c : seen) q.pending.push_back(c->id);
    if constexpr (op == Op::poll) q.hostPs = hostPs;
    channel::Reply<op> a;
    const Status s = ask<op>(q, &a);
    const bool done = s == Status::kOk && a.done;
    *isDone = done;
    *ps = a.ps;
    const std::vector<uint64_t>& doneAt = a.doneAt;  // per pending copy: 0 = not done, else 1 + its time
    if (done && a.fault != 0 && !w->done()) {
      auto f = std::make_shared<model::WorkFault>();
      f->kind = static_cast<model::WorkFault::Kind>(a.fault);
      f->message = a.faultMessage;
      w->setFault(std::move(f));
    }
    std::vector<std::pair<std::shared_ptr<CopyOut>, uint64_t>> mine;  // claimed here, with the time
    std::vector<std::shared_ptr<CopyOut>> others;                     // claimed by other threads
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (size_t i = 0; i < seen.size(); ++i) {
        CopyOut& c = *seen[i];
        if (c.copied) continue;
        if (c.claimed) {
          others.push_back(seen[i]);
        } else if (s == Status::kOk && i < doneAt.size() && doneAt[i] != 0) {
          c.claimed = true;
          mine.emplace_back(seen[i], doneAt[i] - 1);
        }
      }
    }
    for (const auto& [c, at] : mine) std::memcpy(c->dst, segmentAt(c->block), c->bytes);
    {
      std::unique_lock<std::mutex> lock(mu_);
      for (const auto& [c, at] : mine) {
        c->done->settle(at);
        c->copied = true;
        freedBlocks_.push_back(c->block);
        copyOuts_.erase(std::find(copyOuts_.begin(), copyOuts_.end(), c));
      }
      if (!mine.empty()) copiedCv_.notify_all();
      copiedCv_.wait(lock, [&] {
        return std::all_of(others.begin(), others.end(), [](const auto& c) { return c->copied; });
      });
    }
    if (done) w->settle(*ps);
    return s;
  }

  std::string name_;
  UniqueFd sock_;
  std::mutex sockMu_;  // one exchange on the socket at a time
  std::unique_ptr<bip::managed_shared_memory> segment_;
  channel::SegmentHeader* header_ = nullptr;
  int nodePid_ = 0;
  Preset preset_;
  DeviceWindow window_;  // this process's, for the node's addresses
  uint64_t vaBase_ = 0, vaLimit_ = 0;
  std::atomic<bool> lost_{false};
  std::string settings_;  // the node's settings (JSON), from its welcome
  NodeSettings local_;    // this process's: where the node lives, whether a hang report aborts
  // This thread's traced requests (beginTraced to endTraced), their admissions, and the tags a
  // replay gave it.
  // Vectors that outlive the thread's thread_local destructors (model/thread_owned.h): the
  // requests of calls made from those and from exit handlers are traced too.
  static thread_local bool tTraced;
  struct AdmissionsTag;
  struct TagsTag;
  static std::vector<Admission>& admissions() { return threadOwned<std::vector<Admission>, AdmissionsTag>(); }
  static std::vector<uint64_t>& tags() { return threadOwned<std::vector<uint64_t>, TagsTag>(); }
  static thread_local size_t tNextTag;

  std::mutex mu_;  // guards what follows
  std::vector<Channel*> idle_;
  std::vector<uint64_t> freedBlocks_;
  std::vector<std::shared_ptr<CopyOut>> copyOuts_;
  std::condition_variable copiedCv_;  // a claimed copy is out
  std::shared_ptr<Ledger> ledger_ = std::make_shared<Ledger>();
  std::map<uint64_t, uint64_t> privateHost_;  // pinned memory the segment had no room for: size by address
};

thread_local bool ClientNode::tTraced = false;
thread_local size_t ClientNode::tNextTag = 0;

}  // namespace

std::unique_ptr<Node> attachSharedNode(const std::string& name, int rank, int tray, const NodeSettings& settings,
                                       std::string* error) {
  channel::setSpinRounds(settings.channelSpin);
  return ClientNode::attach(name, rank, tray, settings, error);
}

}  // namespace mcsim::fabric
