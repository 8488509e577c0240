// Where a shared node lives and how its processes talk to it over its socket.
//
// A node named N, started by user U, has
//   - a directory private to U (mode 0700): $MCSIM_NODE_DIR, else $XDG_RUNTIME_DIR/mcsim, else
//     /tmp/mcsim-U, holding
//       N.sock   the attach socket (AF_UNIX, SOCK_SEQPACKET, mode 0600)
//       N.lock   held (flock) by the node process while it runs; it holds the node's pid
//       N.log    the node process's standard error (reports of deadlocks and hangs, crashes)
//   - a shared memory segment /dev/shm/mcsim-U-N (mode 0600): the request channels and the bulk
//     data of copies (node_channel.h).
// The socket carries the attach handshake, new channels, exported descriptors (SCM_RIGHTS), and
// `mcsim node status|stop`; its end closing is how the node learns that a process is gone.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace mcsim::fabric::ipc {

constexpr uint32_t kProtocolVersion = 3;  // 3: admissions carry the simulation's run count

// Names: 1 to 64 of [A-Za-z0-9._-], not starting with '.'.
bool validNodeName(const std::string& name);

struct NodePaths {
  std::string dir, socket, lock, log;
  std::string segment;  // the shared memory object's name (without the leading '/')
};
NodePaths nodePaths(const std::string& name);

// Makes the directory (mode 0700) if it is missing and checks that it belongs to this user and
// lets nobody else in. Returns "" or the problem.
std::string prepareDirectory(const std::string& dir);

enum class Msg : uint32_t {
  kHello = 1,    // client -> node: HelloKind, then what it needs
  kWelcome,      // node -> client: the attach succeeded
  kRefused,      // node -> client: why not
  kNewChannel,   // client -> node: one more request channel
  kChannel,      // node -> client: its offset in the segment
  kExport,       // client -> node: export this handle as a descriptor
  kDescriptor,   // node -> client: the Status, and the descriptor (SCM_RIGHTS) on success
  kStatusText,   // node -> `mcsim node status`
  kStopping,     // node -> `mcsim node stop`
};
enum class HelloKind : uint32_t { kAttach = 1, kStatus, kStop };

// One message: its type, a payload (at most kMaxMessage bytes) and at most one descriptor.
constexpr size_t kMaxMessage = 256 * 1024;
bool sendMessage(int sock, Msg type, const std::vector<uint8_t>& payload, int fd = -1);
// false at the end of the connection or on an error. `fd` (if given) receives the passed
// descriptor (close-on-exec), or -1.
bool receiveMessage(int sock, Msg* type, std::vector<uint8_t>* payload, int* fd = nullptr);

// Connects to the node's socket (close-on-exec); -1 with the problem in `error`.
int connectToNode(const NodePaths& paths, std::string* error);

// Whether a node process holds the lock file, and then its pid.
bool nodeRunning(const NodePaths& paths, int* pid);

}  // namespace mcsim::fabric::ipc
