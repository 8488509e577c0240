#include "fabric/node_ipc.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "fabric/unique_fd.h"

namespace mcsim::fabric::ipc {

namespace {

struct Header {
  uint32_t type;
  uint32_t length;
};

}  // namespace

bool validNodeName(const std::string& name) {
  if (name.empty() || name.size() > 64 || name[0] == '.') return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                    c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

NodePaths nodePaths(const std::string& name) {
  NodePaths p;
  const std::string uid = std::to_string(getuid());
  if (const char* d = std::getenv("MCSIM_NODE_DIR"); d != nullptr && *d != '\0') {
    p.dir = d;
  } else if (const char* x = std::getenv("XDG_RUNTIME_DIR"); x != nullptr && *x != '\0') {
    p.dir = std::string(x) + "/mcsim";
  } else {
    p.dir = "/tmp/mcsim-" + uid;
  }
  p.socket = p.dir + "/" + name + ".sock";
  p.lock = p.dir + "/" + name + ".lock";
  p.log = p.dir + "/" + name + ".log";
  p.segment = "mcsim-" + uid + "-" + name;
  return p;
}

std::string prepareDirectory(const std::string& dir) {
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return "cannot make " + dir + ": " + std::strerror(errno);
  }
  struct stat st {};
  if (lstat(dir.c_str(), &st) != 0) return "cannot read " + dir + ": " + std::strerror(errno);
  if (!S_ISDIR(st.st_mode)) return dir + " is not a directory";
  if (st.st_uid != getuid()) return dir + " belongs to another user";
  if ((st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%03o", static_cast<unsigned>(st.st_mode & 0777));
    return dir + " lets other users in (mode " + mode + "); it must be 0700";
  }
  return "";
}

bool sendMessage(int sock, Msg type, const std::vector<uint8_t>& payload, int fd) {
  if (payload.size() > kMaxMessage) {
    errno = EMSGSIZE;
    return false;
  }
  std::vector<uint8_t> buf(sizeof(Header) + payload.size());
  const Header h{static_cast<uint32_t>(type), static_cast<uint32_t>(payload.size())};
  std::memcpy(buf.data(), &h, sizeof h);
  if (!payload.empty()) std::memcpy(buf.data() + sizeof h, payload.data(), payload.size());
  iovec io{buf.data(), buf.size()};
  msghdr m{};
  m.msg_iov = &io;
  m.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
  if (fd >= 0) {
    std::memset(control, 0, sizeof control);
    m.msg_control = control;
    m.msg_controllen = sizeof control;
    cmsghdr* c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &fd, sizeof fd);
  }
  for (;;) {
    const ssize_t n = sendmsg(sock, &m, MSG_NOSIGNAL);
    if (n >= 0) return static_cast<size_t>(n) == buf.size();
    if (errno != EINTR) return false;
  }
}

bool receiveMessage(int sock, Msg* type, std::vector<uint8_t>* payload, int* fd) {
  if (fd != nullptr) *fd = -1;
  std::vector<uint8_t> buf(sizeof(Header) + kMaxMessage);
  iovec io{buf.data(), buf.size()};
  msghdr m{};
  m.msg_iov = &io;
  m.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 4)];
  m.msg_control = control;
  m.msg_controllen = sizeof control;
  ssize_t n;
  do {
    n = recvmsg(sock, &m, MSG_CMSG_CLOEXEC);
  } while (n < 0 && errno == EINTR);
  // Descriptors that came along are taken in any case, so that none leaks.
  for (cmsghdr* c = CMSG_FIRSTHDR(&m); c != nullptr; c = CMSG_NXTHDR(&m, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < count; ++i) {
      int got = -1;
      std::memcpy(&got, CMSG_DATA(c) + i * sizeof(int), sizeof got);
      if (fd != nullptr && *fd < 0) *fd = got;
      else close(got);
    }
  }
  if (n <= 0 || static_cast<size_t>(n) < sizeof(Header) || (m.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) != 0) {
    if (fd != nullptr && *fd >= 0) {
      close(*fd);
      *fd = -1;
    }
    if (n > 0) errno = EPROTO;
    return false;
  }
  Header h{};
  std::memcpy(&h, buf.data(), sizeof h);
  if (h.length != static_cast<size_t>(n) - sizeof h) {
    errno = EPROTO;
    return false;
  }
  *type = static_cast<Msg>(h.type);
  payload->assign(buf.begin() + sizeof h, buf.begin() + n);
  return true;
}

int connectToNode(const NodePaths& paths, std::string* error) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (paths.socket.size() >= sizeof addr.sun_path) {
    *error = "the socket path " + paths.socket + " is too long (set MCSIM_NODE_DIR to a shorter directory)";
    return -1;
  }
  std::memcpy(addr.sun_path, paths.socket.c_str(), paths.socket.size() + 1);
  UniqueFd s(socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
  if (!s) {
    *error = std::string("socket: ") + std::strerror(errno);
    return -1;
  }
  if (connect(s.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    *error = "cannot reach " + paths.socket + ": " + std::strerror(errno);
    return -1;
  }
  return s.release();
}

bool nodeRunning(const NodePaths& paths, int* pid) {
  UniqueFd f(open(paths.lock.c_str(), O_RDONLY | O_CLOEXEC));
  if (!f) return false;
  if (flock(f.get(), LOCK_SH | LOCK_NB) == 0) return false;  // nobody holds it
  if (errno != EWOULDBLOCK) return false;
  char buf[32] = {};
  const ssize_t n = pread(f.get(), buf, sizeof buf - 1, 0);
  *pid = n > 0 ? std::atoi(buf) : 0;
  return true;
}

}  // namespace mcsim::fabric::ipc
