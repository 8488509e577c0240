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
#include <utility>

#include "fabric/unique_fd.h"
#include "fabric/wire.h"

namespace mcsim::fabric::wire {

template <>
struct Fields<ipc::Hello> {
  template <typename S, typename V>
  static void visit(S& s, V&& v) {
    v(s.version, s.capabilities, s.kind, s.rank, s.vaBase, s.tray);
  }
};
template <>
struct Fields<ipc::Refusal> {
  template <typename S, typename V>
  static void visit(S& s, V&& v) {
    v(s.version, s.capabilities, s.reason);
  }
};
template <>
struct Fields<ipc::Welcome> {
  template <typename S, typename V>
  static void visit(S& s, V&& v) {
    v(s.version, s.capabilities, s.nodePid, s.segment, s.topology, s.vaLimit, s.firstChannel, s.settings);
  }
};

}  // namespace mcsim::fabric::wire

namespace mcsim::fabric::ipc {

namespace {

// Every socket message starts with its type and its payload's length, 4 bytes each, little-endian.
constexpr size_t kHeaderBytes = 8;

template <typename T>
std::vector<uint8_t> encodeStruct(const T& t) {
  std::vector<uint8_t> out;
  wire::Writer(&out).put(t);
  return out;
}

template <typename T>
bool decodeStruct(const std::vector<uint8_t>& payload, T* t) {
  wire::Reader r(payload.data(), payload.size());
  r.read(t);
  return r.ok() && r.atEnd();
}

}  // namespace

std::string capabilityNames(uint64_t bits) {
  static const std::pair<uint64_t, const char*> kNames[] = {
      {kCapDescriptors, "descriptors"}, {kCapStagedData, "staged-data"}, {kCapAdmissionOrder, "admission-order"}};
  std::string out;
  for (const auto& [bit, name] : kNames) {
    if ((bits & bit) == 0) continue;
    out += out.empty() ? "" : " ";
    out += name;
    bits &= ~bit;
  }
  if (bits != 0) out += (out.empty() ? "" : " ") + std::string("unknown bits ") + std::to_string(bits);
  return out.empty() ? "none" : out;
}

std::vector<uint8_t> encode(const Hello& h) { return encodeStruct(h); }

bool decode(const std::vector<uint8_t>& payload, Hello* h, uint32_t* version) {
  wire::Reader r(payload.data(), payload.size());
  *version = r.get<uint32_t>();
  if (!r.ok()) {
    *version = 0;
    return false;
  }
  if (*version != kProtocolVersion) {
    // Protocols 1 to 3 began with the kind (1 to 3) and the version as 8-byte fields.
    if (*version <= 3 && payload.size() >= 16) {
      wire::Reader old(payload.data() + 8, 8);
      *version = static_cast<uint32_t>(old.get<uint64_t>());
    }
    return false;
  }
  return decodeStruct(payload, h);
}

std::vector<uint8_t> encode(const Refusal& r) { return encodeStruct(r); }

std::string describeRefusal(const std::string& name, const std::vector<uint8_t>& payload) {
  Refusal refusal;
  if (decodeStruct(payload, &refusal)) {
    if (refusal.version != kProtocolVersion) {
      return "node '" + name + "' speaks wire protocol " + std::to_string(refusal.version) + ", this driver " +
             std::to_string(kProtocolVersion) + ": use a driver and a node of the same mcsim build";
    }
    return "node '" + name + "' refused: " + refusal.reason;
  }
  // A node of protocol 3 or before: its reason, as an 8-byte length and the text.
  wire::Reader old(payload.data(), payload.size());
  const uint64_t n = old.get<uint64_t>();
  const uint8_t* text = n <= payload.size() ? old.view(n) : nullptr;
  if (text != nullptr && old.atEnd()) {
    return "node '" + name + "' refused: " + std::string(reinterpret_cast<const char*>(text), n) +
           " (the node speaks an older wire protocol; this driver speaks " + std::to_string(kProtocolVersion) + ")";
  }
  return "node '" + name + "' refused the attach with an answer this driver cannot read (wire protocol " +
         std::to_string(kProtocolVersion) + ")";
}

std::vector<uint8_t> encodeRefusalForVersion3(const std::string& reason) {
  std::vector<uint8_t> out;
  wire::Writer w(&out);
  w.put<uint64_t>(reason.size());
  w.bytes(reason.data(), reason.size());
  return out;
}

std::vector<uint8_t> encode(const Welcome& w) { return encodeStruct(w); }

bool decode(const std::vector<uint8_t>& payload, Welcome* w) { return decodeStruct(payload, w); }

bool validNodeName(const std::string& name) {
  if (name.empty() || name.size() > 64 || name[0] == '.') return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                    c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

std::string nodeDirectory(const std::string& configured, const std::string& xdgRuntimeDir) {
  if (!configured.empty()) return configured;
  if (!xdgRuntimeDir.empty()) return xdgRuntimeDir + "/mcsim";
  return "/tmp/mcsim-" + std::to_string(getuid());
}

NodePaths nodePaths(const std::string& name, const std::string& dir) {
  NodePaths p;
  const std::string uid = std::to_string(getuid());
  p.dir = dir;
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
  std::vector<uint8_t> buf;
  buf.reserve(kHeaderBytes + payload.size());
  wire::Writer(&buf).put(static_cast<uint32_t>(type)).put(static_cast<uint32_t>(payload.size()));
  buf.insert(buf.end(), payload.begin(), payload.end());
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
  std::vector<uint8_t> buf(kHeaderBytes + kMaxMessage);
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
  if (n <= 0 || static_cast<size_t>(n) < kHeaderBytes || (m.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) != 0) {
    if (fd != nullptr && *fd >= 0) {
      close(*fd);
      *fd = -1;
    }
    if (n > 0) errno = EPROTO;
    return false;
  }
  wire::Reader header(buf.data(), kHeaderBytes);
  const auto kind = header.get<uint32_t>();
  const auto length = header.get<uint32_t>();
  if (length != static_cast<size_t>(n) - kHeaderBytes) {
    if (fd != nullptr && *fd >= 0) {
      close(*fd);
      *fd = -1;
    }
    errno = EPROTO;
    return false;
  }
  *type = static_cast<Msg>(kind);
  payload->assign(buf.begin() + kHeaderBytes, buf.begin() + n);
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
