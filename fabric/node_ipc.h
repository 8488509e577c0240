// Where a shared node lives and how its processes talk to it over its socket.
//
// A node named N, started by user U, has
//   - a directory private to U (mode 0700): nodeDirectory's, holding
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

// The wire protocol: the socket's messages, the channels' requests (node_ops.def, node_ops.h) and
// their encoding (wire.h). 3: admissions carry the simulation's run count. 4: every field at its
// own width (was: 8 bytes each), counts of 4 bytes, the hello with capabilities, the operations
// numbered from node_ops.def. 5: the IPC operations (ipcExportMemory ... ipcEventLatest), and
// DeviceOp's wait of a stream memory operation (waitCompare, waitValue). 6: loadPtx, PTX kernel
// launches, and waits that answer a kernel's fault (docs/ptx.md). 7: a PTX launch's resident
// blocks (DeviceOp::residentBlocks). 8-10: docs/multiprocess.md. 11: loadObjects, the
// relocatable objects a shared node links a kernel's functions from at their first call. 12: the
// attaching process's compute tray (Hello::tray), and the host an IPC handle was made on. 13:
// registerHost and unregisterHost (host memory the program registered). 14: unloadPtx (the driver
// dropped a PTX module: the node forgets its parsed copy), NodeStats::ptxModules. 15: the host's
// simulated clock (docs/model.md, "What the host costs"): DeviceOp::notBeforePs, and poll's hostPs.
// 16: a waitFor the node gave up answers kHang with the node's report (it answered done = false,
// no report). 17: a linked kernel's text (loadPtx) ends with a marker of the objects' key and the
// kernel alone: the driver places the image's variables whole, once per context (docs/ptx.md).
// 18: a copy's DeviceOp::peers (a peer copy without peer access is staged).
constexpr uint32_t kProtocolVersion = 18;

// What a side of the connection can do, announced in the hello and the welcome: a driver
// attaches only to a node that has every capability it needs (kNeeded).
enum Capability : uint64_t {
  kCapDescriptors = 1u << 0,     // exports cross the socket as descriptors (SCM_RIGHTS)
  kCapStagedData = 1u << 1,      // host data crosses in blocks of the segment
  kCapAdmissionOrder = 1u << 2,  // requests are numbered in admission order (traces, replays)
};
constexpr uint64_t kCapabilities = kCapDescriptors | kCapStagedData | kCapAdmissionOrder;
constexpr uint64_t kNeeded = kCapDescriptors | kCapStagedData | kCapAdmissionOrder;
// The capability bits' names, for messages ("descriptors staged-data").
std::string capabilityNames(uint64_t bits);

// Names: 1 to 64 of [A-Za-z0-9._-], not starting with '.'.
bool validNodeName(const std::string& name);

struct NodePaths {
  std::string dir, socket, lock, log;
  std::string segment;  // the shared memory object's name (without the leading '/')
};
// Where nodes live: `configured` (MCSIM_NODE_DIR) if not empty, else `xdgRuntimeDir`/mcsim
// (XDG_RUNTIME_DIR), else /tmp/mcsim-UID.
std::string nodeDirectory(const std::string& configured, const std::string& xdgRuntimeDir);
// The files of the node `name` in the directory `dir` (nodeDirectory's).
NodePaths nodePaths(const std::string& name, const std::string& dir);

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

// The first message of every connection. Its first two fields keep their place and width in every
// protocol version to come, so that a node and a driver of different versions can tell each other
// so: the version (uint32_t), then the capabilities (uint64_t).
struct Hello {
  uint32_t version = kProtocolVersion;
  uint64_t capabilities = kCapabilities;
  HelloKind kind = HelloKind::kAttach;
  int32_t rank = -1;     // kAttach: the process's MCSIM_RANK (-1: unset)
  uint64_t vaBase = 0;   // kAttach: where the process reserved the device window
  int32_t tray = -1;     // kAttach: the compute tray it runs on (MCSIM_TRAY; -1: the whole node)
};
std::vector<uint8_t> encode(const Hello& h);
// false when the message is no hello of this version; `version` is then what the sender speaks
// (0: it cannot be told), and the hello is not read further.
bool decode(const std::vector<uint8_t>& payload, Hello* h, uint32_t* version);

// The node's answer to a hello it does not take (Msg::kRefused). Version and capabilities first,
// as in the hello.
struct Refusal {
  uint32_t version = kProtocolVersion;
  uint64_t capabilities = kCapabilities;
  std::string reason;
};
std::vector<uint8_t> encode(const Refusal& r);
// The one line a driver shows for a refusal from node `name`: both versions when they differ.
// (A node of protocol 3 answered with its reason alone, encoded as that version did.)
std::string describeRefusal(const std::string& name, const std::vector<uint8_t>& payload);
// The refusal for a hello of protocol 3, encoded as that version reads it.
std::vector<uint8_t> encodeRefusalForVersion3(const std::string& reason);

// The node's answer to an attach it takes (Msg::kWelcome).
struct Welcome {
  uint32_t version = kProtocolVersion;
  uint64_t capabilities = kCapabilities;
  int32_t nodePid = 0;
  std::string segment;    // the shared memory object's name
  std::string topology;   // what loadPreset takes
  uint64_t vaLimit = 0;   // the end of the process's device window
  uint64_t firstChannel = 0;  // the offset of its first request channel in the segment
  std::string settings;   // the node's settings, JSON (Node::sharedSettings)
};
std::vector<uint8_t> encode(const Welcome& w);
bool decode(const std::vector<uint8_t>& payload, Welcome* w);

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
