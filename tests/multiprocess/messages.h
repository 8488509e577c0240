// The broker's protocol on the wire (broker.h, mp_rank.cpp): one text message per SOCK_SEQPACKET
// packet, with at most one descriptor passed alongside (SCM_RIGHTS).
#pragma once

#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <string>

namespace mptest {

inline bool sendText(int sock, const std::string& text, int fd = -1) {
  iovec io{const_cast<char*>(text.data()), text.size()};
  msghdr m{};
  m.msg_iov = &io;
  m.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  if (fd >= 0) {
    m.msg_control = control;
    m.msg_controllen = sizeof control;
    cmsghdr* c = CMSG_FIRSTHDR(&m);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    std::memcpy(CMSG_DATA(c), &fd, sizeof fd);
  }
  return sendmsg(sock, &m, MSG_NOSIGNAL) >= 0;
}

// false at the end of the connection. `fd` (if given) receives a passed descriptor (close-on-exec)
// or -1.
inline bool receiveText(int sock, std::string* text, int* fd = nullptr) {
  char buf[4096];
  iovec io{buf, sizeof buf};
  msghdr m{};
  m.msg_iov = &io;
  m.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  m.msg_control = control;
  m.msg_controllen = sizeof control;
  const ssize_t n = recvmsg(sock, &m, MSG_CMSG_CLOEXEC);
  int got = -1;
  if (cmsghdr* c = CMSG_FIRSTHDR(&m); c != nullptr && c->cmsg_type == SCM_RIGHTS) std::memcpy(&got, CMSG_DATA(c), sizeof got);
  if (fd != nullptr) {
    *fd = got;
  } else if (got >= 0) {
    close(got);
  }
  if (n <= 0) return false;
  text->assign(buf, static_cast<size_t>(n));
  return true;
}

}  // namespace mptest
