#include "fabric/node_server_dispatch.h"

#include <cstring>
#include <string>
#include <utility>

#include "fabric/node_host.h"
#include "fabric/node_server_staging.h"

namespace mcsim::fabric::server {

using channel::HostData;
using channel::Op;

class Dispatch::Answer {
 public:
  Answer(wire::Writer& w, NodeHost& host) : w_(w), host_(host) {}
  wire::Writer& operator()(Status s) {
    w_.put(s);
    if (s == Status::kHang) {
      w_.put(host_.lastHangReport());
    } else if (s != Status::kOk) {
      // Why the node refused, for the client's call log (MCSIM_DEBUG; model/status.h).
      w_.put(takeFailureReason());
    }
    return w_;
  }
  // A NODE_WIRE reply, after kOk.
  template <typename A>
  void ok(const A& a) {
    (*this)(Status::kOk).put(a);
  }

 private:
  wire::Writer& w_;
  NodeHost& host_;
};

namespace {

// A transport request's inputs: false when the message is malformed or has bytes left over.
template <typename Q>
bool readRequest(wire::Reader& r, Q* q) {
  r.read(q);
  return r.ok() && r.atEnd();
}

}  // namespace

void Dispatch::handle(AttachedProcess& p, wire::Reader& r, wire::Writer& w, Request* request) {
  channel::RequestHeader header;
  r.read(&header);
  request->tag = header.tag;
  request->traced = header.traced;
  clearFailureReason();  // a reason is the refusal of this request, never of one before
  {
    std::lock_guard<std::mutex> lock(p.workMu);
    for (uint64_t id : header.released) p.work.erase(id);
  }
  for (uint64_t block : header.freed) staging_.freeBlock(p.number, block);
  CallerScope caller(Caller{p.pid, static_cast<long>(header.thread), p.rank});
  AttachedNode& n = *p.node;
  Answer answer(w, host_);
  if (!r.ok()) {
    answer(Status::kInvalidValue);
    return;
  }
  switch (header.op) {
    // Every NODE_OP of node_ops.def: its inputs, the call on the process's Node, the answer.
#define NODE_OP(Return, name, params)                                                                 \
  case Op::name:                                                                                       \
    wire::serve<Return>(wire::Kinds<MCSIM_NODE_KINDS(params)>{}, r, answer,                            \
                        [&n](auto&&... a) -> Return { return n.name(std::forward<decltype(a)>(a)...); }); \
    return;
#define NODE_CALL(Return, name, params)
#define NODE_WIRE(name, inputs, outputs)
#include "fabric/node_ops.def"
    case Op::importPosixFile: {
      channel::Request<Op::importPosixFile> q;
      if (!readRequest(r, &q)) break;
      channel::Reply<Op::importPosixFile> a;
      const Status s = n.importPosixFile(q.dev, q.ino, &a.handle);
      if (s == Status::kOk) {
        answer.ok(a);
      } else {
        answer(s);
      }
      return;
    }
    case Op::stage: {
      channel::Request<Op::stage> q;
      if (!readRequest(r, &q)) break;
      stage(p, q, answer);
      return;
    }
    case Op::allocHost: {
      channel::Request<Op::allocHost> q;
      if (!readRequest(r, &q)) break;
      allocHost(p, q, answer);
      return;
    }
    case Op::freeHost: {
      channel::Request<Op::freeHost> q;
      if (!readRequest(r, &q)) break;
      uint8_t* data = staging_.ownBlock(p.number, q.block, 1);
      const Status s = data == nullptr ? Status::kInvalidValue : n.unmapHost(q.segmentBase + q.block, data);
      if (s == Status::kOk) staging_.freeBlock(p.number, q.block);
      answer(s);
      return;
    }
    case Op::submit: {
      channel::Request<Op::submit> q;
      if (!readRequest(r, &q)) break;
      submit(p, q, answer);
      return;
    }
#define MCSIM_ASK_DONE(name)             \
  case Op::name: {                       \
    channel::Request<Op::name> q;        \
    if (!readRequest(r, &q)) break;      \
    askDone<Op::name>(p, q, answer);     \
    return;                              \
  }
      MCSIM_ASK_DONE(waitFor)
      MCSIM_ASK_DONE(poll)
      MCSIM_ASK_DONE(isDone)
#undef MCSIM_ASK_DONE
    case Op::onEntry: {
      channel::Request<Op::onEntry> q;
      if (!readRequest(r, &q)) break;
      onEntry(p, q, answer);
      return;
    }
    case Op::ipcEventRecord: {
      channel::Request<Op::ipcEventRecord> q;
      if (!readRequest(r, &q)) break;
      answer(n.ipcEventRecord(q.key, workOf(p, q.work)));
      return;
    }
    case Op::ipcEventLatest: {
      channel::Request<Op::ipcEventLatest> q;
      if (!readRequest(r, &q)) break;
      WorkDone latest;
      const Status s = n.ipcEventLatest(q.key, &latest);
      if (s != Status::kOk) {
        answer(s);
        return;
      }
      channel::Reply<Op::ipcEventLatest> a;
      if (latest) {
        // A new id of the process's for the work: the client drops it like any other.
        std::lock_guard<std::mutex> lock(p.workMu);
        a.work = ++p.nextWork;
        p.work[a.work] = latest;
      }
      answer.ok(a);
      return;
    }
    case Op::skipAdmissions: {
      channel::Request<Op::skipAdmissions> q;
      if (!readRequest(r, &q)) break;
      host_.skipAdmissions(q.numbers);
      answer(Status::kOk);
      return;
    }
    case Op::kNone:
    case Op::kCount:
      break;
  }
  answer(Status::kInvalidValue);  // an Op this node does not know, or a malformed request
}

std::vector<uint8_t> Dispatch::exportDescriptor(AttachedProcess& p, const std::vector<uint8_t>& ask, UniqueFd* fd) {
  wire::Reader r(ask.data(), ask.size());
  const uint64_t handle = r.get<uint64_t>();
  Request request;
  request.tag = r.get<uint64_t>();
  request.traced = r.getBool();
  int got = -1;
  Status s = Status::kInvalidValue;
  {
    RequestScope scope(&request);
    if (r.ok() && r.atEnd()) s = p.node->exportPosixFd(handle, &got);  // (no CallerScope: it never waits)
    host_.finishRequest();
  }
  UniqueFd owned(got);
  if (s == Status::kOk) fd->reset(owned.release());
  std::vector<uint8_t> out;
  wire::Writer(&out).put(request.admission).put(s);
  return out;
}

// Pinned host memory in a block of the segment, zeroed, known to the process's Node at the address
// the process maps it at.
void Dispatch::allocHost(AttachedProcess& p, const channel::Request<Op::allocHost>& q, Answer& answer) {
  channel::Reply<Op::allocHost> a;
  a.block = q.bytes == 0 ? 0 : staging_.newBlock(p.number, q.bytes);
  uint8_t* data = a.block == 0 ? nullptr : staging_.ownBlock(p.number, a.block, q.bytes);
  if (data == nullptr) {
    answer(Status::kOutOfMemory);
    return;
  }
  std::memset(data, 0, q.bytes);
  const Status s = p.node->mapHost(q.segmentBase + a.block, q.bytes, data);
  if (s != Status::kOk) {
    staging_.freeBlock(p.number, a.block);
    answer(s);
    return;
  }
  answer.ok(a);
}

void Dispatch::stage(AttachedProcess& p, const channel::Request<Op::stage>& q, Answer& answer) {
  channel::Reply<Op::stage> a;
  a.block = staging_.newBlock(p.number, q.bytes);
  if (a.block == 0) {
    answer(Status::kOutOfMemory);
    return;
  }
  answer.ok(a);
}

// A host source arrives in the request, and is staged by the node at once, or in a block
// (Op::stage), which goes back to the segment once the copy is done; a host destination is a block
// the node writes and the process copies out.
void Dispatch::submit(AttachedProcess& p, channel::Request<Op::submit>& q, Answer& answer) {
  DeviceOp& op = q.op;
  uint64_t srcBlock = 0;
  if (q.src == HostData::kInline) {
    op.src = q.data.size >= op.bytes ? reinterpret_cast<uint64_t>(q.data.data) : 0;
    op.stageSource = true;
  } else if (q.src == HostData::kBlock) {
    srcBlock = q.srcBlock;
    op.src = reinterpret_cast<uint64_t>(staging_.ownBlock(p.number, srcBlock, op.bytes));
  }
  if (q.src != HostData::kNone && op.src == 0) {
    if (srcBlock != 0) staging_.freeBlock(p.number, srcBlock);
    answer(Status::kInvalidValue);
    return;
  }
  uint64_t dstBlock = 0;
  if (q.dst == HostData::kReturn && host_.movesData()) {
    dstBlock = staging_.newBlock(p.number, op.bytes);
    if (dstBlock == 0) {
      if (srcBlock != 0) staging_.freeBlock(p.number, srcBlock);
      answer(Status::kOutOfMemory);
      return;
    }
    op.dst = reinterpret_cast<uint64_t>(staging_.blockAt(dstBlock));
  } else if (q.dst == HostData::kReturn) {
    op.dst = reinterpret_cast<uint64_t>(&scratch_);  // timing only: nothing is written
  }
  std::vector<WorkDone> after;
  for (uint64_t id : q.after) {
    if (WorkDone a = workOf(p, id)) after.push_back(std::move(a));
  }
  WorkDone done;
  const Status s = p.node->submit(op, after, &done);
  if (s != Status::kOk) {
    if (srcBlock != 0) staging_.freeBlock(p.number, srcBlock);
    if (dstBlock != 0) staging_.freeBlock(p.number, dstBlock);
    answer(s);
    return;
  }
  // The copy reads a staged source when it runs; the block goes back to the segment after that.
  if (srcBlock != 0) staging_.handOver(p.number, srcBlock, done);
  if (dstBlock != 0) staging_.setUser(p.number, dstBlock, done);
  channel::Reply<Op::submit> a;
  {
    std::lock_guard<std::mutex> lock(p.workMu);
    a.work = ++p.nextWork;
    p.work[a.work] = done;
  }
  a.dstBlock = dstBlock;
  answer.ok(a);
}

// waitFor / poll / isDone, which also say which of the process's pending copies are done.
template <Op op>
void Dispatch::askDone(AttachedProcess& p, const channel::Request<op>& q, Answer& answer) {
  AttachedNode& n = *p.node;
  channel::Reply<op> a;
  a.done = true;
  if (const WorkDone work = workOf(p, q.work)) {
    if constexpr (op == Op::waitFor) {
      // A wait given up is not done: the client must not take its work for finished. It is
      // answered kHang with the report of the hang (the serving thread's, Engine::takeHangReport),
      // which the process prints, as for a team wait given up.
      if (n.waitFor(work, &a.ps) != Status::kOk) {
        answer(Status::kHang);
        return;
      }
    } else {
      if constexpr (op == Op::poll) {
        n.poll(work, q.hostPs, &a.done);
      } else {
        n.isDone(work, &a.done);
      }
      a.ps = a.done ? work->donePs() : 0;
    }
    if (work->done() && work->fault()) {
      a.fault = static_cast<uint8_t>(work->fault()->kind);
      a.faultMessage = work->fault()->message;
    }
  } else {
    a.ps = n.nowPs();
  }
  for (uint64_t id : q.pending) {
    const WorkDone o = workOf(p, id);
    a.doneAt.push_back(!o ? 1 : o->done() ? o->donePs() + 1 : 0);
  }
  answer.ok(a);
}

void Dispatch::onEntry(AttachedProcess& p, const channel::Request<Op::onEntry>& q, Answer& answer) {
  std::vector<FaultArgument> args;
  for (const channel::WireFaultArgument& w : q.args) {
    FaultArgument a("", w.value);
    a.name = w.name.c_str();
    a.isText = w.isText;
    a.present = w.present;
    a.text = w.isText && w.present ? w.text.c_str() : nullptr;
    args.push_back(a);
  }
  const Node::FaultOutcome o =
      p.node->onEntry(q.symbol.c_str(), q.device, q.rank, args.data(), args.size(), q.fabricMoment);
  if (o.status == Status::kHang) {
    answer(Status::kHang);  // a block given up: the process shows the report
    return;
  }
  answer.ok(channel::Reply<Op::onEntry>{o.fail, o.result, o.status});
}

WorkDone Dispatch::workOf(AttachedProcess& p, uint64_t id) {
  std::lock_guard<std::mutex> lock(p.workMu);
  auto it = p.work.find(id);
  return it == p.work.end() ? nullptr : it->second;
}

}  // namespace mcsim::fabric::server
