// The calls of a node process: one request of an attached process, read and carried out against
// its Node, and the answer written (node_ops.h says how both look). Every NODE_OP of node_ops.def
// is served generically; the transport's own requests (NODE_WIRE) here by hand.
#pragma once

#include <cstdint>
#include <vector>

#include "fabric/admission.h"
#include "fabric/node_ops.h"
#include "fabric/node_server_process.h"
#include "fabric/wire.h"

namespace mcsim::fabric {
class NodeHost;
}

namespace mcsim::fabric::server {

class Staging;

class Dispatch {
 public:
  Dispatch(NodeHost& host, Staging& staging) : host_(host), staging_(staging) {}

  // One request of a channel: what rides along (completions dropped, blocks freed), then the call;
  // the answer (its Status first) goes to `w`. `request` is the thread's request (admission.h).
  void handle(AttachedProcess& p, wire::Reader& r, wire::Writer& w, Request* request);
  // An export asked for on the socket (it never waits): the answer, and the new descriptor in `fd`.
  std::vector<uint8_t> exportDescriptor(AttachedProcess& p, const std::vector<uint8_t>& ask, UniqueFd* fd);

 private:
  class Answer;  // writes a Status (and, for kHang, the report) and then what follows
  void allocHost(AttachedProcess& p, const channel::Request<channel::Op::allocHost>& q, Answer& answer);
  void stage(AttachedProcess& p, const channel::Request<channel::Op::stage>& q, Answer& answer);
  void submit(AttachedProcess& p, channel::Request<channel::Op::submit>& q, Answer& answer);
  template <channel::Op op>
  void askDone(AttachedProcess& p, const channel::Request<op>& q, Answer& answer);
  void onEntry(AttachedProcess& p, const channel::Request<channel::Op::onEntry>& q, Answer& answer);
  WorkDone workOf(AttachedProcess& p, uint64_t id);

  NodeHost& host_;
  Staging& staging_;
  uint64_t scratch_ = 0;  // where a timing-only copy to host memory "writes"
};

}  // namespace mcsim::fabric::server
