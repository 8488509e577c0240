#include "fabric/node_server_transport.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>
#include <utility>

#include "fabric/node_host.h"
#include "fabric/node_ops.h"
#include "fabric/node_server_dispatch.h"
#include "fabric/node_server_processes.h"
#include "fabric/node_server_staging.h"
#include "fabric/node_server_status.h"

namespace mcsim::fabric::server {

namespace {

std::string errnoText(const std::string& what) { return what + ": " + std::strerror(errno); }

}  // namespace

// ---- Channels

uint64_t Channels::open(const std::shared_ptr<AttachedProcess>& p) {
  channel::Channel* ch = staging_.newChannel();
  if (ch == nullptr) {
    log_.line("the segment is full: no channel for process " + p->who() + " (start the node with a larger --segment)");
    return 0;
  }
  auto worker = std::make_unique<ChannelWorker>();
  worker->channel = ch;
  ChannelWorker* w = worker.get();
  {
    std::lock_guard<std::mutex> lock(p->channelsMu);
    p->channels.push_back(std::move(worker));
  }
  w->thread = std::thread([this, p, ch] { serve(p, ch); });
  return staging_.offsetOf(ch);
}

void Channels::closeAll(AttachedProcess& p) {
  std::vector<std::unique_ptr<ChannelWorker>> workers;
  {
    std::lock_guard<std::mutex> lock(p.channelsMu);
    workers.swap(p.channels);
  }
  for (auto& w : workers) {
    w->channel->closing.store(1);
    w->channel->request.post();
  }
  for (auto& w : workers) {
    if (w->thread.joinable()) w->thread.join();
    staging_.destroyChannel(w->channel);
  }
}

size_t Channels::count(AttachedProcess& p) {
  std::lock_guard<std::mutex> lock(p.channelsMu);
  return p.channels.size();
}

void Channels::serve(const std::shared_ptr<AttachedProcess>& p, channel::Channel* ch) {
  for (;;) {
    ch->request.wait();
    if (ch->closing.load() != 0) return;
    wire::Reader r(ch->requestData, std::min<uint64_t>(ch->requestBytes, channel::kChannelBytes));
    // The answer starts with the request's admission, known only once the call has entered the
    // node: the rest is written after room for it.
    wire::Writer w(ch->responseData + channel::kAdmissionBytes, channel::kChannelBytes - channel::kAdmissionBytes);
    Request request;
    {
      RequestScope scope(&request);
      dispatch_.handle(*p, r, w, &request);
      host_.finishRequest();
    }
    wire::Writer aw(ch->responseData, channel::kAdmissionBytes);
    aw.put(request.admission);
    ch->responseBytes = channel::kAdmissionBytes + w.size();
    channel::SegmentHeader& header = staging_.header();
    header.faultsActive.store(p->node->faultsActive() ? 1 : 0, std::memory_order_release);
    header.imexPresent.store(p->node->imexChannelPresent() ? 1 : 0, std::memory_order_release);
    ch->response.post();
  }
}

// ---- Transport

std::string Transport::listen() {
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
  if (::listen(listen_.get(), 256) != 0) return errnoText("listen");
  return "";
}

void Transport::acceptOne() {
  const int c = accept4(listen_.get(), nullptr, nullptr, SOCK_CLOEXEC);
  if (c < 0) return;
  std::thread([this, c] { connection(UniqueFd(c)); }).detach();
}

void Transport::close() {
  listen_.reset();
  unlink(paths_.socket.c_str());
}

void Transport::connection(UniqueFd sock) {
  ucred cred{};
  socklen_t len = sizeof cred;
  if (getsockopt(sock.get(), SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return;
  // Only the user who started the node may use it (the directory and the socket's mode keep
  // others out already; this holds even if they are loosened).
  if (cred.uid != getuid()) {
    refuse(sock.get(), "node '" + options_.name + "' belongs to another user");
    return;
  }
  pollfd pfd{sock.get(), POLLIN, 0};
  if (poll(&pfd, 1, 5000) <= 0) return;
  ipc::Msg type{};
  std::vector<uint8_t> msg;
  if (!ipc::receiveMessage(sock.get(), &type, &msg) || type != ipc::Msg::kHello) return;
  ipc::Hello hello;
  uint32_t version = 0;
  if (!ipc::decode(msg, &hello, &version)) {
    const bool sameVersion = version == ipc::kProtocolVersion;
    log_.line("refused process " + std::to_string(cred.pid) + ": " +
              (sameVersion ? std::string("a malformed hello")
                           : "wire protocol " + std::to_string(version) + ", this node speaks " +
                                 std::to_string(ipc::kProtocolVersion)));
    const std::string reason = sameVersion ? "node '" + options_.name + "' could not read the hello"
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
  if (hello.kind == ipc::HelloKind::kStatus) {
    std::vector<uint8_t> out;
    wire::Writer(&out).put(status_.text());
    ipc::sendMessage(sock.get(), ipc::Msg::kStatusText, out);
    return;
  }
  if (hello.kind == ipc::HelloKind::kStop) {
    ipc::sendMessage(sock.get(), ipc::Msg::kStopping, {});
    stop_();
    return;
  }
  if (hello.kind != ipc::HelloKind::kAttach || hello.vaBase == 0) return;
  std::string problem;
  const std::shared_ptr<AttachedProcess> p =
      processes_.attach(&sock, cred.pid, hello.rank, hello.tray, hello.vaBase, &problem);
  if (!p) {
    log_.line("refused process " + std::to_string(cred.pid) + ": " + problem);
    refuse(sock.get(), "node '" + options_.name + "': " + problem);
    return;
  }
  ipc::Welcome welcome;
  welcome.nodePid = static_cast<int32_t>(getpid());
  welcome.segment = paths_.segment;
  welcome.topology = options_.topology;
  welcome.vaLimit = p->node->vaLimit();
  welcome.firstChannel = channels_.open(p);
  // The node's settings, and how many processes had come and gone before this one (a trace's end
  // record keeps both: a replay of a run that was not the node's first says so).
  welcome.settings = settings_;
  if (p->leftBefore > 0 && !welcome.settings.empty() && welcome.settings.back() == '}') {
    welcome.settings.pop_back();
    welcome.settings += ",\"left_before\":" + std::to_string(p->leftBefore) + "}";
  }
  if (welcome.firstChannel == 0 || !ipc::sendMessage(p->sock.get(), ipc::Msg::kWelcome, ipc::encode(welcome))) {
    processes_.detach(p);
    return;
  }
  log_.line("process " + p->who() + " attached");
  serveProcess(p);
  processes_.detach(p);
}

void Transport::refuse(int sock, const std::string& why) {
  ipc::Refusal refusal;
  refusal.reason = why;
  ipc::sendMessage(sock, ipc::Msg::kRefused, ipc::encode(refusal));
}

void Transport::serveProcess(const std::shared_ptr<AttachedProcess>& p) {
  for (;;) {
    pollfd fds[2] = {{p->sock.get(), POLLIN, 0}, {p->pidfd.get(), POLLIN, 0}};
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      return;
    }
    if (fds[1].revents != 0) return;  // the process exited
    ipc::Msg type{};
    std::vector<uint8_t> msg;
    // The end of the socket: the process is exiting (or was killed), or closed it.
    if (!ipc::receiveMessage(p->sock.get(), &type, &msg)) return;
    if (type == ipc::Msg::kNewChannel) {
      std::vector<uint8_t> out;
      wire::Writer(&out).put(channels_.open(p));
      ipc::sendMessage(p->sock.get(), ipc::Msg::kChannel, out);
    } else if (type == ipc::Msg::kExport) {
      UniqueFd fd;
      const std::vector<uint8_t> answer = dispatch_.exportDescriptor(*p, msg, &fd);
      // Sent, the descriptor lives in the process; the node's copy closes here.
      ipc::sendMessage(p->sock.get(), ipc::Msg::kDescriptor, answer, fd.get());
    }
  }
}

}  // namespace mcsim::fabric::server
