#include "fabric/node_server.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <unistd.h>

#include <boost/interprocess/managed_shared_memory.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "fabric/node_channel.h"
#include "fabric/node_ops.h"
#include "fabric/node_host.h"
#include "fabric/node_ipc.h"
#include "fabric/unique_fd.h"
#include "model/engine.h"

namespace mcsim::fabric {

namespace {

namespace bip = boost::interprocess;
using channel::Channel;
using channel::HostData;
using channel::Op;
using Clock = std::chrono::steady_clock;

// The write end of the stop pipe, for the signal handler.
std::atomic<int> gStopFd{-1};

void onStopSignal(int) {
  const int fd = gStopFd.load();
  if (fd >= 0) {
    const char c = 's';
    [[maybe_unused]] ssize_t n = write(fd, &c, 1);
  }
}

std::string errnoText(const std::string& what) { return what + ": " + std::strerror(errno); }

void writeAll(int fd, const std::string& s) {
  size_t done = 0;
  while (done < s.size()) {
    const ssize_t n = write(fd, s.data() + done, s.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

int pidfdOpen(int pid) { return static_cast<int>(syscall(SYS_pidfd_open, pid, 0)); }

class NodeServer {
 public:
  explicit NodeServer(const NodeServerOptions& o) : options_(o), paths_(ipc::nodePaths(o.name)) {}

  // Takes the node's place: its lock, a fresh segment and socket (cleaning up what a node that
  // died left behind), the host. "" or the problem.
  std::string start() {
    if (!ipc::validNodeName(options_.name)) return "'" + options_.name + "' is no node name ([A-Za-z0-9._-], at most 64)";
    std::string problem = ipc::prepareDirectory(paths_.dir);
    if (!problem.empty()) return problem;
    lock_.reset(open(paths_.lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
    if (!lock_) return errnoText("cannot open " + paths_.lock);
    if (flock(lock_.get(), LOCK_EX | LOCK_NB) != 0) {
      int pid = 0;
      char buf[32] = {};
      if (pread(lock_.get(), buf, sizeof buf - 1, 0) > 0) pid = std::atoi(buf);
      return "node '" + options_.name + "' is already running (pid " + std::to_string(pid) + ")";
    }
    // Holding the lock, this is the only node of that name: a segment or socket still there was
    // left by a node that died without cleaning up.
    {
      bip::shared_memory_object probe;
      bool stale = false;
      try {
        bip::shared_memory_object old(bip::open_only, paths_.segment.c_str(), bip::read_only);
        stale = true;
      } catch (const bip::interprocess_exception&) {
      }
      if (stale) {
        bip::shared_memory_object::remove(paths_.segment.c_str());
        std::fprintf(stderr, "mcsim node: removed the stale segment /dev/shm/%s of a node '%s' that died\n",
                     paths_.segment.c_str(), options_.name.c_str());
      }
    }
    unlink(paths_.socket.c_str());
    const std::string pid = std::to_string(getpid()) + "\n";
    if (ftruncate(lock_.get(), 0) != 0 || pwrite(lock_.get(), pid.data(), pid.size(), 0) < 0) {
      return errnoText("cannot write " + paths_.lock);
    }

    Preset preset;
    try {
      preset = loadPreset(options_.topology);
    } catch (const std::exception& e) {
      return std::string("cannot load topology preset: ") + e.what();
    }
    HangPolicy policy = HangPolicy::fromEnvironment();
    // Whether a process aborts on a hang is its own choice (MCSIM_ON_HANG in its environment); the
    // node itself never aborts for one.
    policy.abortOnHang = false;
    // A process still starting is not counted yet: a deadlock across processes must last a
    // moment (a new process attaching is progress) before it is reported.
    policy.deadlockSettleSeconds = std::min(1.0, policy.graceSeconds / 2);
    host_ = std::make_unique<NodeHost>(preset, policy);
    host_->setIdentity(options_.name);
    host_->setThreadCounter([this] { return attachedThreads(); });
    host_->installFaultPlan(options_.faults, options_.seed);
    if (!options_.follow.empty()) host_->followAdmissions(options_.follow, options_.followPatienceSeconds);
    // What a process that attaches is told of the node, for its trace (a replay rebuilds the node
    // from it).
    nlohmann::ordered_json settings{{"name", options_.name},
                                    {"topology", options_.topology},
                                    {"seed", options_.seed},
                                    {"hang_grace_s", policy.graceSeconds}};
    settings["faults"] = options_.faults.empty() ? nlohmann::ordered_json() : nlohmann::ordered_json(options_.faultsText);
    settings_ = settings.dump();

    try {
      segment_ = std::make_unique<bip::managed_shared_memory>(bip::create_only, paths_.segment.c_str(),
                                                              options_.segmentBytes, nullptr, bip::permissions(0600));
      header_ = segment_->construct<channel::SegmentHeader>(channel::kHeaderName)();
    } catch (const bip::interprocess_exception& e) {
      return "cannot make the segment /dev/shm/" + paths_.segment + ": " + e.what();
    }
    header_->nodePid = getpid();
    header_->uid = getuid();
    header_->faultsActive.store(options_.faults.empty() ? 0 : 1);
    header_->imexPresent.store(preset.imexChannel ? 1 : 0);

    listen_.reset(socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
    if (!listen_) return errnoText("socket");
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (paths_.socket.size() >= sizeof addr.sun_path) {
      return "the socket path " + paths_.socket + " is too long (set MCSIM_NODE_DIR to a shorter directory)";
    }
    std::memcpy(addr.sun_path, paths_.socket.c_str(), paths_.socket.size() + 1);
    if (bind(listen_.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
      return errnoText("cannot bind " + paths_.socket);
    }
    if (chmod(paths_.socket.c_str(), 0600) != 0) return errnoText("chmod " + paths_.socket);
    if (listen(listen_.get(), 256) != 0) return errnoText("listen");

    int pipeFds[2];
    if (pipe2(pipeFds, O_CLOEXEC) != 0) return errnoText("pipe");
    stopRead_.reset(pipeFds[0]);
    stopWrite_.reset(pipeFds[1]);
    gStopFd.store(stopWrite_.get());
    struct sigaction sa {};
    sa.sa_handler = onStopSignal;
    sigaction(SIGTERM, &sa, nullptr);
    sigaction(SIGINT, &sa, nullptr);
    signal(SIGPIPE, SIG_IGN);
    if (options_.exitWith > 0) {
      exitWith_.reset(pidfdOpen(options_.exitWith));
      if (!exitWith_) return errnoText("--exit-with " + std::to_string(options_.exitWith));
    }
    started_ = Clock::now();
    return "";
  }

  // Accepts attachments until stopped; then removes the segment and the socket.
  void serve() {
    for (;;) {
      // The third: the process the node is to go with (--exit-with), when there is one.
      pollfd fds[3] = {{listen_.get(), POLLIN, 0}, {stopRead_.get(), POLLIN, 0}, {exitWith_.get(), POLLIN, 0}};
      if (poll(fds, exitWith_ ? 3 : 2, -1) < 0) {
        if (errno == EINTR) continue;
        break;
      }
      if (fds[1].revents != 0) break;
      if (exitWith_ && fds[2].revents != 0) {
        log("process " + std::to_string(options_.exitWith) + " exited (--exit-with)");
        break;
      }
      if ((fds[0].revents & POLLIN) == 0) continue;
      const int c = accept4(listen_.get(), nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) continue;
      std::thread([this, c] { connection(UniqueFd(c)); }).detach();
    }
    shutdown();
  }

 private:
  struct Block {
    uint64_t bytes = 0;
    WorkDone user;  // device work that reads or writes it, if any: the block outlives it
  };

  struct Worker {
    Channel* channel = nullptr;
    std::thread thread;
  };

  struct Client {
    uint64_t number = 0;
    int pid = 0;
    int rank = -1;
    UniqueFd sock;
    UniqueFd pidfd;
    std::unique_ptr<AttachedNode> node;
    std::atomic<bool> gone{false};
    std::mutex mu;  // guards what follows
    std::vector<std::unique_ptr<Worker>> workers;
    std::map<uint64_t, WorkDone> work;   // the node's ids of its device work -> completion
    uint64_t nextWork = 0;
    std::map<uint64_t, Block> blocks;    // segment blocks it holds, by offset
  };

  // ---- Connections ----

  void connection(UniqueFd sock) {
    ucred cred{};
    socklen_t len = sizeof cred;
    if (getsockopt(sock.get(), SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return;
    // Only the user who started the node may use it (the directory and the socket's mode keep
    // others out already; this holds even if they are loosened).
    if (cred.uid != getuid()) {
      refuse(sock.get(), "node '" + options_.name + "' belongs to another user");
      return;
    }
    pollfd p{sock.get(), POLLIN, 0};
    if (poll(&p, 1, 5000) <= 0) return;
    ipc::Msg type{};
    std::vector<uint8_t> msg;
    if (!ipc::receiveMessage(sock.get(), &type, &msg) || type != ipc::Msg::kHello) return;
    ipc::Hello hello;
    uint32_t version = 0;
    if (!ipc::decode(msg, &hello, &version)) {
      const std::string why = version == ipc::kProtocolVersion
                                  ? "a malformed hello"
                                  : "wire protocol " + std::to_string(version) + ", this node speaks " +
                                        std::to_string(ipc::kProtocolVersion);
      log("refused process " + std::to_string(cred.pid) + ": " + why);
      const std::string reason = version == ipc::kProtocolVersion
                                     ? "node '" + options_.name + "' could not read the hello"
                                     : "protocol version " + std::to_string(version) + " is not the node's (" +
                                           std::to_string(ipc::kProtocolVersion) +
                                           "): a driver and a node from different builds";
      if (version != 0 && version < 4) {
        ipc::sendMessage(sock.get(), ipc::Msg::kRefused, ipc::encodeRefusalForVersion3(reason));
      } else {
        refuse(sock.get(), reason);
      }
      return;
    }
    const ipc::HelloKind kind = hello.kind;
    if (kind == ipc::HelloKind::kStatus) {
      std::vector<uint8_t> out;
      wire::Writer(&out).put(statusText());
      ipc::sendMessage(sock.get(), ipc::Msg::kStatusText, out);
      return;
    }
    if (kind == ipc::HelloKind::kStop) {
      ipc::sendMessage(sock.get(), ipc::Msg::kStopping, {});
      onStopSignal(0);
      return;
    }
    if (kind != ipc::HelloKind::kAttach || hello.vaBase == 0) return;
    attached(std::move(sock), cred.pid, hello.rank, hello.vaBase);
  }

  void refuse(int sock, const std::string& why) {
    ipc::Refusal refusal;
    refusal.reason = why;
    ipc::sendMessage(sock, ipc::Msg::kRefused, ipc::encode(refusal));
  }

  // A process attached: its Node, its first channel, then its socket until it goes away.
  void attached(UniqueFd sock, int pid, int rank, uint64_t vaBase) {
    auto c = std::make_shared<Client>();
    c->pid = pid;
    c->rank = rank;
    c->sock = std::move(sock);
    c->pidfd.reset(pidfdOpen(pid));
    if (!c->pidfd) {
      refuse(c->sock.get(), errnoText("pidfd_open"));
      return;
    }
    c->node = host_->attach(vaBase);
    {
      std::lock_guard<std::mutex> lock(mu_);
      c->number = ++nextClient_;
      ++attachedEver_;
      clients_[c->number] = c;
      livePids_[pid] += 1;
      threadCache_.reset();
    }
    const uint64_t first = newChannel(c);
    ipc::Welcome welcome;
    welcome.nodePid = static_cast<int32_t>(getpid());
    welcome.segment = paths_.segment;
    welcome.topology = options_.topology;
    welcome.vaLimit = c->node->vaLimit();
    welcome.firstChannel = first;
    welcome.settings = settings_;
    if (first == 0 || !ipc::sendMessage(c->sock.get(), ipc::Msg::kWelcome, ipc::encode(welcome))) {
      detach(c);
      return;
    }
    log("process " + who(*c) + " attached");
    // Its socket: requests for channels and exports, until it closes or the process exits.
    for (;;) {
      pollfd fds[2] = {{c->sock.get(), POLLIN, 0}, {c->pidfd.get(), POLLIN, 0}};
      if (poll(fds, 2, -1) < 0) {
        if (errno == EINTR) continue;
        break;
      }
      if (fds[1].revents != 0) {
        detach(c);
        return;
      }
      ipc::Msg type{};
      std::vector<uint8_t> msg;
      if (!ipc::receiveMessage(c->sock.get(), &type, &msg)) {
        // The end of the socket: the process is exiting (or was killed), or closed it.
        detach(c);
        return;
      }
      if (type == ipc::Msg::kNewChannel) {
        std::vector<uint8_t> out;
        wire::Writer(&out).put(newChannel(c));
        ipc::sendMessage(c->sock.get(), ipc::Msg::kChannel, out);
      } else if (type == ipc::Msg::kExport) {
        exportDescriptor(*c, msg);
      }
    }
    detach(c);
  }

  void exportDescriptor(Client& c, const std::vector<uint8_t>& msg) {
    wire::Reader r(msg.data(), msg.size());
    const uint64_t handle = r.get<uint64_t>();
    Request request;
    request.tag = r.get<uint64_t>();
    request.traced = r.getBool();
    int fd = -1;
    Status s = Status::kInvalidValue;
    {
      RequestScope scope(&request);
      if (r.ok()) s = c.node->exportPosixFd(handle, &fd);  // (no CallerScope: it never waits)
      host_->finishRequest();
    }
    UniqueFd owned(fd);
    std::vector<uint8_t> out;
    wire::Writer ow(&out);
    ow.put(request.admission);
    ow.put(s);
    // Sent, the descriptor lives in the process; the node's copy closes here.
    ipc::sendMessage(c.sock.get(), ipc::Msg::kDescriptor, out, s == Status::kOk ? owned.get() : -1);
  }

  // A new request channel for `c` and the thread that serves it; its offset (0: none).
  uint64_t newChannel(const std::shared_ptr<Client>& c) {
    Channel* ch = nullptr;
    try {
      ch = segment_->construct<Channel>(bip::anonymous_instance)();
    } catch (const bip::interprocess_exception&) {
      ch = nullptr;
    }
    if (ch == nullptr) {
      log("the segment is full: no channel for process " + who(*c) + " (start the node with a larger --segment)");
      return 0;
    }
    auto worker = std::make_unique<Worker>();
    worker->channel = ch;
    Worker* wp = worker.get();
    {
      std::lock_guard<std::mutex> lock(c->mu);
      c->workers.push_back(std::move(worker));
    }
    wp->thread = std::thread([this, c, ch] { serveChannel(c, ch); });
    return offsetOf(ch);
  }

  // The process is gone (it exited, was killed, or closed its socket; the node cannot tell which)
  // or never got going: its waits are given up, its channels' threads leave, and its Node is
  // detached, which gives back everything it held.
  void detach(const std::shared_ptr<Client>& c) {
    if (c->gone.exchange(true)) return;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (--livePids_[c->pid] == 0) livePids_.erase(c->pid);
      threadCache_.reset();
    }
    const size_t stoppedKernels = c->node->abandonWaits(c->pid);
    std::vector<std::unique_ptr<Worker>> workers;
    {
      std::lock_guard<std::mutex> lock(c->mu);
      workers.swap(c->workers);
    }
    for (auto& w : workers) {
      w->channel->closing.store(1);
      w->channel->request.post();
    }
    for (auto& w : workers) {
      if (w->thread.joinable()) w->thread.join();
      segment_->destroy_ptr(w->channel);
    }
    const NodeStats held = c->node->held();
    c->node.reset();
    std::map<uint64_t, Block> blocks;
    {
      std::lock_guard<std::mutex> lock(c->mu);
      blocks.swap(c->blocks);
      c->work.clear();
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (auto& [offset, b] : blocks) graveyard_.push_back({offset, std::move(b)});
      sweepGraveyard();
      clients_.erase(c->number);
    }
    log("process " + who(*c) + " left; reclaimed " + std::to_string(held.handles) + " handles, " +
        std::to_string(held.mappings) + " mappings, " + std::to_string(held.reservations) + " reservations" +
        (stoppedKernels > 0 ? "; stopped " + std::to_string(stoppedKernels) + " of its kernels that waited" : ""));
  }

  // Blocks whose work is done (or that never had any) go back to the segment. Under mu_.
  void sweepGraveyard() {
    for (auto it = graveyard_.begin(); it != graveyard_.end();) {
      if (!it->second.user || it->second.user->done()) {
        segment_->deallocate(segment_->get_address_from_handle(static_cast<bip::managed_shared_memory::handle_t>(it->first)));
        it = graveyard_.erase(it);
      } else {
        ++it;
      }
    }
  }

  // Application threads of the attached processes, for deadlock detection. Asked by every
  // waiting call every 20 ms, so the count is kept for that long.
  int attachedThreads() {
    std::lock_guard<std::mutex> lock(mu_);
    const auto now = Clock::now();
    if (threadCache_ && now - threadCacheAt_ < std::chrono::milliseconds(20)) return *threadCache_;
    int n = 0;
    for (const auto& [pid, count] : livePids_) n += model::threadsOfProcess(pid);
    // Processes of the run that have not attached yet (--processes) may still add devices.
    if (attachedEver_ < options_.processes) n += options_.processes - attachedEver_;
    threadCache_ = n;
    threadCacheAt_ = now;
    return n;
  }

  // ---- Calls ----

  void serveChannel(std::shared_ptr<Client> c, Channel* ch) {
    for (;;) {
      ch->request.wait();
      if (ch->closing.load() != 0) return;
      wire::Reader r(ch->requestData, std::min<uint64_t>(ch->requestBytes, channel::kChannelBytes));
      // The answer starts with the request's admission (number, finished before), known only once
      // the call has entered the node: the rest is written after room for it.
      wire::Writer w(ch->responseData + channel::kAdmissionBytes, channel::kChannelBytes - channel::kAdmissionBytes);
      Request request;
      {
        RequestScope scope(&request);
        handle(*c, r, w, &request);
        host_->finishRequest();
      }
      wire::Writer aw(ch->responseData, channel::kAdmissionBytes);
      aw.put(request.admission);
      ch->responseBytes = channel::kAdmissionBytes + w.size();
      header_->faultsActive.store(c->node->faultsActive() ? 1 : 0, std::memory_order_release);
      header_->imexPresent.store(c->node->imexChannelPresent() ? 1 : 0, std::memory_order_release);
      ch->response.post();
    }
  }

  WorkDone workOf(Client& c, uint64_t id) {
    std::lock_guard<std::mutex> lock(c.mu);
    auto it = c.work.find(id);
    return it == c.work.end() ? nullptr : it->second;
  }

  uint8_t* blockAt(uint64_t offset) {
    return static_cast<uint8_t*>(segment_->get_address_from_handle(static_cast<bip::managed_shared_memory::handle_t>(offset)));
  }

  // A block of the segment for `c`; 0 when the segment is full.
  uint64_t newBlock(Client& c, uint64_t bytes) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (!graveyard_.empty()) sweepGraveyard();
    }
    void* p = segment_->allocate(bytes == 0 ? 1 : bytes, std::nothrow);
    if (p == nullptr) return 0;
    const uint64_t offset = offsetOf(p);
    std::lock_guard<std::mutex> lock(c.mu);
    c.blocks[offset] = Block{bytes, nullptr};
    return offset;
  }

  void freeBlock(Client& c, uint64_t offset) {
    std::lock_guard<std::mutex> lock(c.mu);
    auto it = c.blocks.find(offset);
    if (it == c.blocks.end()) return;
    c.blocks.erase(it);
    segment_->deallocate(blockAt(offset));
  }

  // The staged block of `c` at `offset`, if it holds at least `bytes`.
  uint8_t* ownBlock(Client& c, uint64_t offset, uint64_t bytes) {
    std::lock_guard<std::mutex> lock(c.mu);
    auto it = c.blocks.find(offset);
    if (it == c.blocks.end() || it->second.bytes < bytes) return nullptr;
    return blockAt(offset);
  }

  uint64_t offsetOf(const void* p) const { return static_cast<uint64_t>(segment_->get_handle_from_address(p)); }

  // One request: what rides along, then the call.
  void handle(Client& c, wire::Reader& r, wire::Writer& w, Request* request) {
    channel::RequestHeader header;
    r.read(&header);
    request->tag = header.tag;
    request->traced = header.traced;
    {
      std::lock_guard<std::mutex> lock(c.mu);
      for (uint64_t id : header.released) c.work.erase(id);
    }
    for (uint64_t block : header.freed) freeBlock(c, block);
    CallerScope caller(Caller{c.pid, static_cast<long>(header.thread), c.rank});
    AttachedNode& n = *c.node;
    auto reply = [&](Status s) -> wire::Writer& {
      w.put(s);
      if (s == Status::kHang) w.put(host_->lastHangReport());
      return w;
    };
    if (!r.ok()) {
      reply(Status::kInvalidValue);
      return;
    }
    switch (header.op) {
      // Every NODE_OP of node_ops.def: its inputs, the call on the process's Node, the answer.
#define NODE_OP(Return, name, params)                                                                 \
  case Op::name:                                                                                       \
    wire::serve<Return>(wire::Kinds<MCSIM_NODE_KINDS(params)>{}, r, reply,                             \
                        [&n](auto&&... a) -> Return { return n.name(std::forward<decltype(a)>(a)...); }); \
    return;
#define NODE_CALL(Return, name, params)
#define NODE_WIRE(name, inputs, outputs)
#include "fabric/node_ops.def"
      case Op::importPosixFile: {
        channel::Request<Op::importPosixFile> q;
        channel::Reply<Op::importPosixFile> a;
        if (!readRequest(r, &q)) break;
        const Status s = n.importPosixFile(q.dev, q.ino, &a.handle);
        answer(reply(s), s, a);
        return;
      }
      case Op::stage: {
        channel::Request<Op::stage> q;
        channel::Reply<Op::stage> a;
        if (!readRequest(r, &q)) break;
        a.block = newBlock(c, q.bytes);
        const Status s = a.block == 0 ? Status::kOutOfMemory : Status::kOk;
        answer(reply(s), s, a);
        return;
      }
      case Op::submit: {
        channel::Request<Op::submit> q;
        if (!readRequest(r, &q)) break;
        submit(c, q, reply);
        return;
      }
      case Op::waitFor: askDone<Op::waitFor>(c, r, reply); return;
      case Op::poll: askDone<Op::poll>(c, r, reply); return;
      case Op::isDone: askDone<Op::isDone>(c, r, reply); return;
      case Op::onEntry: {
        channel::Request<Op::onEntry> q;
        if (!readRequest(r, &q)) break;
        onEntry(n, q, reply);
        return;
      }
      case Op::skipAdmissions: {
        channel::Request<Op::skipAdmissions> q;
        if (!readRequest(r, &q)) break;
        host_->skipAdmissions(q.numbers);
        reply(Status::kOk);
        return;
      }
      case Op::kNone:
      case Op::kCount: break;
    }
    reply(Status::kInvalidValue);  // an Op this node does not know, or a malformed request
  }

  // A transport request's inputs: false when the message is malformed or has bytes left over.
  template <typename Q>
  static bool readRequest(wire::Reader& r, Q* q) {
    r.read(q);
    return r.ok() && r.atEnd();
  }

  // A transport request's outputs, after its Status, when that is kOk.
  template <typename A>
  static void answer(wire::Writer& w, Status s, const A& a) {
    if (s == Status::kOk) w.put(a);
  }

  // waitFor / poll / isDone, which also say which of the process's pending copies are done.
  template <Op op, typename Reply>
  void askDone(Client& c, wire::Reader& r, Reply& reply) {
    channel::Request<op> q;
    if (!readRequest(r, &q)) {
      reply(Status::kInvalidValue);
      return;
    }
    AttachedNode& n = *c.node;
    channel::Reply<op> a;
    a.done = true;
    if (const WorkDone work = workOf(c, q.work)) {
      if constexpr (op == Op::waitFor) {
        a.ps = n.waitFor(work);
      } else {
        a.done = op == Op::poll ? n.poll(work) : n.isDone(work);
        a.ps = a.done ? work->donePs() : 0;
      }
    } else {
      a.ps = n.nowPs();
    }
    for (uint64_t id : q.pending) {
      const WorkDone o = workOf(c, id);
      a.doneAt.push_back(!o ? 1 : o->done() ? o->donePs() + 1 : 0);
    }
    answer(reply(Status::kOk), Status::kOk, a);
  }

  // Submit: a host source arrives in the request, and is staged by the node at once, or in a
  // block (Op::stage), which the node frees once the copy is done; a host destination is a block
  // the node writes and the process copies out.
  template <typename Reply>
  void submit(Client& c, channel::Request<Op::submit>& q, Reply& reply) {
    DeviceOp& op = q.op;
    uint64_t srcBlock = 0;
    if (q.src == HostData::kInline) {
      op.src = q.data.size >= op.bytes ? reinterpret_cast<uint64_t>(q.data.data) : 0;
      op.stageSource = true;
    } else if (q.src == HostData::kBlock) {
      srcBlock = q.srcBlock;
      op.src = reinterpret_cast<uint64_t>(ownBlock(c, srcBlock, op.bytes));
    }
    if (q.src != HostData::kNone && op.src == 0) {
      if (srcBlock != 0) freeBlock(c, srcBlock);
      reply(Status::kInvalidValue);
      return;
    }
    uint64_t dstBlock = 0;
    if (q.dst == HostData::kReturn && host_->movesData()) {
      dstBlock = newBlock(c, op.bytes);
      if (dstBlock == 0) {
        if (srcBlock != 0) freeBlock(c, srcBlock);
        reply(Status::kOutOfMemory);
        return;
      }
      op.dst = reinterpret_cast<uint64_t>(blockAt(dstBlock));
    } else if (q.dst == HostData::kReturn) {
      op.dst = reinterpret_cast<uint64_t>(&scratch_);  // timing only: nothing is written
    }
    std::vector<WorkDone> after;
    for (uint64_t id : q.after) {
      if (WorkDone a = workOf(c, id)) after.push_back(std::move(a));
    }
    WorkDone done;
    const Status s = c.node->submit(op, after, &done);
    if (s != Status::kOk) {
      if (srcBlock != 0) freeBlock(c, srcBlock);
      if (dstBlock != 0) freeBlock(c, dstBlock);
      reply(s);
      return;
    }
    if (srcBlock != 0) {
      // The copy reads the block when it runs; it goes back to the segment after that.
      Block b;
      {
        std::lock_guard<std::mutex> lock(c.mu);
        b = std::move(c.blocks.at(srcBlock));
        c.blocks.erase(srcBlock);
      }
      b.user = done;
      std::lock_guard<std::mutex> lock(mu_);
      graveyard_.push_back({srcBlock, std::move(b)});
    }
    channel::Reply<Op::submit> a;
    {
      std::lock_guard<std::mutex> lock(c.mu);
      a.work = ++c.nextWork;
      c.work[a.work] = done;
      if (dstBlock != 0) c.blocks[dstBlock].user = done;
    }
    a.dstBlock = dstBlock;
    answer(reply(Status::kOk), Status::kOk, a);
  }

  template <typename Reply>
  void onEntry(AttachedNode& n, const channel::Request<Op::onEntry>& q, Reply& reply) {
    std::vector<FaultArgument> args;
    for (const channel::WireFaultArgument& w : q.args) {
      FaultArgument a("", w.value);
      a.name = w.name.c_str();
      a.isText = w.isText;
      a.present = w.present;
      a.text = w.isText && w.present ? w.text.c_str() : nullptr;
      args.push_back(a);
    }
    const Node::FaultOutcome o = n.onEntry(q.symbol.c_str(), q.device, q.rank, args.data(), args.size(), q.fabricMoment);
    if (o.status == Status::kHang) {
      reply(Status::kHang);  // a block given up: the process shows the report
      return;
    }
    answer(reply(Status::kOk), Status::kOk, channel::Reply<Op::onEntry>{o.fail, o.result, o.status});
  }

  // ---- Status and stop ----

  std::string who(const Client& c) const {
    return std::to_string(c.pid) + (c.rank >= 0 ? " (rank " + std::to_string(c.rank) + ")" : "");
  }

  void log(const std::string& line) {
    const double t = std::chrono::duration<double>(Clock::now() - started_).count();
    std::fprintf(stderr, "mcsim node %s [%.3f s]: %s\n", options_.name.c_str(), t, line.c_str());
    std::fflush(stderr);
  }

  std::string statusText() {
    const NodeStats s = host_->stats();
    const Preset& p = host_->preset();
    char buf[512];
    std::string out;
    std::snprintf(buf, sizeof buf, "node '%s': running, pid %d, up %.1f s\n", options_.name.c_str(),
                  static_cast<int>(getpid()), std::chrono::duration<double>(Clock::now() - started_).count());
    out += buf;
    std::snprintf(buf, sizeof buf, "  preset:    %s (%d GPUs)\n", p.name.c_str(), p.gpuCount);
    out += buf;
    {
      std::lock_guard<std::mutex> lock(mu_);
      sweepGraveyard();
    }
    const uint64_t size = segment_->get_size(), free = segment_->get_free_memory();
    std::snprintf(buf, sizeof buf, "  segment:   /dev/shm/%s, %llu bytes, %llu in use\n", paths_.segment.c_str(),
                  static_cast<unsigned long long>(size), static_cast<unsigned long long>(size - free));
    out += buf;
    if (!options_.follow.empty()) out += "  replay:    " + replayState() + "\n";
    out += "  socket:    " + paths_.socket + "\n";
    out += "  log:       " + paths_.log + "\n";
    std::snprintf(buf, sizeof buf, "  simulated: %llu ps\n",
                  static_cast<unsigned long long>(model::Engine::exists() ? model::Engine::instance().nowPs() : 0));
    out += buf;
    std::snprintf(buf, sizeof buf,
                  "  node:      %llu allocations, %llu handles, %llu reservations, %llu mappings, %llu multicast "
                  "objects, %llu exported descriptors, %llu resident bytes\n",
                  static_cast<unsigned long long>(s.allocations), static_cast<unsigned long long>(s.handles),
                  static_cast<unsigned long long>(s.reservations), static_cast<unsigned long long>(s.mappings),
                  static_cast<unsigned long long>(s.multicastObjects), static_cast<unsigned long long>(s.exportedFds),
                  static_cast<unsigned long long>(s.residentBytes));
    out += buf;
    std::lock_guard<std::mutex> lock(mu_);
    out += "  processes: " + std::to_string(clients_.size()) + " attached\n";
    for (const auto& [number, c] : clients_) {
      size_t channels = 0, blocks = 0;
      {
        std::lock_guard<std::mutex> l(c->mu);
        channels = c->workers.size();
        blocks = c->blocks.size();
      }
      out += "    #" + std::to_string(number) + " pid " + who(*c) + ", " + std::to_string(channels) + " channel(s), " +
             std::to_string(blocks) + " data block(s)\n";
    }
    return out;
  }

  // A replaying node's progress along the recorded order (`mcsim replay` looks for "gave the
  // recorded admission order up" in the log).
  std::string replayState() {
    const std::string d = host_->admissionDivergence();
    return d.empty() ? "following the recorded admission order (" + std::to_string(options_.follow.size()) + " admissions)"
                     : "gave the recorded admission order up: " + d;
  }

  void shutdown() {
    if (!options_.follow.empty()) log("replay: " + replayState());
    log("stopping (" + std::to_string(host_->processCount()) + " processes attached)");
    header_->stopping.store(1);
    listen_.reset();
    unlink(paths_.socket.c_str());
    bip::shared_memory_object::remove(paths_.segment.c_str());
    // The lock file stays (a starting node takes it over); its lock goes with the process.
  }

  NodeServerOptions options_;
  ipc::NodePaths paths_;
  UniqueFd lock_, listen_, stopRead_, stopWrite_, exitWith_;
  std::unique_ptr<NodeHost> host_;
  std::string settings_;  // the node's settings as JSON (the welcome carries them)
  int attachedEver_ = 0;  // processes that have attached so far (under mu_)
  std::unique_ptr<bip::managed_shared_memory> segment_;
  channel::SegmentHeader* header_ = nullptr;
  Clock::time_point started_;
  uint64_t scratch_ = 0;

  // Guards what follows. Taken before a client's own mutex where both are held (statusText), never
  // while calling into the host (whose lock the thread counter takes mu_ under).
  std::mutex mu_;
  std::map<uint64_t, std::shared_ptr<Client>> clients_;
  uint64_t nextClient_ = 0;
  std::map<int, int> livePids_;
  std::optional<int> threadCache_;
  Clock::time_point threadCacheAt_;
  // Blocks no process holds any more, waiting for the device work that uses them (a copy from a
  // staged block, or to a block whose process died).
  std::vector<std::pair<uint64_t, Block>> graveyard_;
};

}  // namespace

int runNodeServer(const NodeServerOptions& options, int readyFd) {
  NodeServer server(options);
  const std::string problem = server.start();
  if (readyFd >= 0) {
    writeAll(readyFd, problem.empty() ? std::string("ready\n") : "error: " + problem + "\n");
    close(readyFd);
  }
  if (!problem.empty()) {
    std::fprintf(stderr, "mcsim node: %s\n", problem.c_str());
    return 1;
  }
  server.serve();
  // Threads of attached processes may still be inside calls; the process ends without waiting
  // for them (its clients see the node gone).
  std::fflush(stderr);
  _exit(0);
}

}  // namespace mcsim::fabric
