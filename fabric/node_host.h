// One simulated node and the processes attached to it.
//
// A NodeHost holds what is node-wide: physical allocations and their backing memory, the fabric
// manager (multicast objects, teams, bindings, switch slots), the records of exported handles,
// the fault plan, the timing model, and the waits for teams. Each attached process sees the node
// through a Node of its own (attach), which holds what belongs to the process: its handle values,
// its device virtual address space (reservations, mappings, access rights), and its cuMemAlloc
// and pool memory. Destroying that Node detaches the process: everything it held (handles,
// mappings, reservations, bindings, memory) is given back, as when a real process exits or dies,
// and calls waiting for teams look again at what they wait for.
//
// The embedded node (makeEmbeddedNode) is a host with one process, this one. A shared node
// (`mcsim node`, node_server.cpp) is a host in a process of its own, whose attached processes
// reach it through the shared node's transport (node_client.cpp, node_server_transport.cpp).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "fabric/admission.h"
#include "fabric/device_window.h"
#include "fabric/node.h"
#include "fabric/team_wait.h"
#include "model/engine.h"

namespace mcsim::fabric {

// A Node that one attached process holds.
class AttachedNode : public Node {
 public:
  // cuMemImportFromShareableHandle of a descriptor known by the file it refers to (fstat's device
  // and inode numbers): how a process imports a descriptor that lives in another process.
  virtual Status importPosixFile(uint64_t dev, uint64_t ino, uint64_t* handle) = 0;
  // Pinned host memory at `va` (the process's address of it) whose bytes the node reaches at
  // `data`: a shared node's block of the segment (allocHost's transport). kInvalidValue when it
  // overlaps pinned memory the process has. `unmapHost` forgets the range at `va`, whose bytes
  // must be `data`.
  virtual Status mapHost(uint64_t va, uint64_t bytes, uint8_t* data) = 0;
  virtual Status unmapHost(uint64_t va, const uint8_t* data) = 0;
  // What this process holds now: its handles, reservations and mappings (the other counts 0).
  virtual NodeStats held() = 0;
  // The node's simulation: processes spawned, timed waits, simulated time (model::Engine::stats).
  virtual model::EngineStats engineStats() = 0;
  // The process (`pid`) died: the calls it was waiting in, for teams, fault holds or device work,
  // return at once (kHang, or Engine::kGaveUp for device work), without a report, so that it can
  // be detached; its kernels that wait at a signal word stop and end. Returns how many did.
  // `who` names the process ("4242 (rank 3)"): a later hang or deadlock report on a multicast
  // object it held a handle on names it as having left.
  virtual size_t abandonWaits(int pid, const std::string& who) = 0;
};

class NodeHost {
 public:
  struct State;

  // A host for the node `preset` describes, as `settings` say (its team waits' hang policy among
  // them).
  NodeHost(Preset preset, const NodeSettings& settings);
  ~NodeHost();
  NodeHost(const NodeHost&) = delete;
  NodeHost& operator=(const NodeHost&) = delete;

  const Preset& preset() const;
  // Names the node (a shared node's name): FABRIC handles carry it, so that another node refuses
  // them. An embedded node has none.
  void setIdentity(const std::string& name);
  // A Node for one more process, whose device window (device_window.h) starts at `vaBase`, on
  // compute tray `tray` of the rack (-1: the whole node is its host). Descriptors and IPC handles
  // cross only between processes of one host (docs/multiprocess.md, "Trays"). The host lives at
  // least as long as the Nodes it handed out.
  std::unique_ptr<AttachedNode> attach(uint64_t vaBase, int tray = -1);
  // The same for this process, with the window it reserved: the Node keeps it while it lives.
  std::unique_ptr<AttachedNode> attach(DeviceWindow window);

  // Deadlock detection compares the calls blocked for teams with the application threads that
  // could still complete them: by default those of this process (model::Engine::applicationThreads); a
  // shared node counts those of every attached process.
  void setThreadCounter(std::function<int()> count);
  // The last deadlock or suspected-hang report, for the processes whose calls it failed.
  std::string lastHangReport();
  // Attached processes right now.
  size_t processCount();
  // The fault plan of the whole node (as Node::installFaultPlan).
  void installFaultPlan(std::vector<FaultRule> rules, uint64_t seed);
  // The plan's rules that never fired, one line each (unfiredRuleLines).
  std::vector<std::string> unfiredFaultRules();
  // Counts of the whole node, every process's handles, reservations and mappings together.
  NodeStats stats();
  // Whether copies move data (false: MCSIM_TIMING_ONLY=1).
  bool movesData() const;
  // The node's simulated time (0 until it has simulated anything), for status reports.
  uint64_t simulatedPs();

  // Admission order (admission.h), for a shared node's requests. The current thread's request
  // (RequestScope) is done: it is counted, and taken in first if nothing it did entered the node;
  // whatever pin it held is released (the serving thread holds none between requests).
  void finishRequest();
  // Replaying a recorded run: take tagged requests in as `schedule` says (AdmissionOrder::follow).
  void followAdmissions(std::vector<Admission> schedule, double patienceSeconds);
  // Recorded admission numbers a replayed call did not use.
  void skipAdmissions(const std::vector<uint64_t>& numbers);
  // Why the node stopped following its schedule ("" if it did not).
  std::string admissionDivergence();

 private:
  std::shared_ptr<State> state_;
};

}  // namespace mcsim::fabric
