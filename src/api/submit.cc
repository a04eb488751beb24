#include "api/submit.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <system_error>
#include <thread>
#include <utility>

#include "api/handles.h"
#include "api/nonblocking.h"
#include "coll/step.h"

namespace stratacl::api {
namespace {

// One (communicator, stream) share of a group, or one call: its collectives in call order, then
// one fused batch of sends and receives (or one MoE call, which is never grouped), each in a turn
// of the communicator.
struct Part {
  std::shared_ptr<Communicator> comm;
  sclStream_t stream = nullptr;
  std::vector<OwnedCall> calls;
  std::vector<P2POp> p2p;
  std::optional<moe::Call> moe;
  std::vector<uint32_t> tickets;  // one per call, then one for the batch, taken at issue

  // `queue`: the stream the part will wait on (its tickets are held until its job begins).
  void issue(const Stream* queue) {
    for (size_t i = 0; i < calls.size() + (p2p.empty() ? 0 : 1) + (moe ? 1 : 0); ++i)
      tickets.push_back(comm->issue(queue));
  }
  // Runs the calls in order. After a failure the rest are skipped, each in its turn: a failure
  // every rank sees (a mismatch) skips the same calls everywhere, so the next call pairs with
  // its peers' next call, and the skipped tickets hold up nothing issued after them.
  Status run() const {
    Status first = Status::Ok();
    size_t t = 0;
    const auto step = [&](bool counted, auto&& work) {
      if (first.ok()) {
        first = work(tickets[t]);
      } else {
        comm->skip(tickets[t], counted);
      }
      ++t;
    };
    for (const OwnedCall& oc : calls) step(true, [&](uint32_t k) { return comm->run(k, oc.call); });
    if (!p2p.empty()) step(false, [&](uint32_t k) { return comm->run_p2p(k, p2p); });
    if (moe) step(true, [&](uint32_t k) { return comm->run_moe(k, *moe); });
    return first;
  }
};

struct GroupState {
  int depth = 0;
  bool queued_nonblocking = false;  // a call went to a non-blocking communicator's queue
  std::vector<Part> parts;
  // The first call of the group that failed its checks: sclGroupEnd returns it and runs none of
  // the group, as NCCL's does, rather than the rest of a group the caller thinks is whole.
  Status failure;
  // A call was refused without joining a share (refuse()): the shares' sends and receives may
  // lack their partners' ops, so sclGroupEnd cannot pair them, refused.
  bool unpaired = false;
  Part& part(Communicator* c, sclStream_t s) {
    for (Part& p : parts) {
      if (p.comm.get() == c && p.stream == s) return p;
    }
    parts.push_back(Part{share(c), s, {}, {}, {}, {}});
    return parts.back();
  }
};
thread_local GroupState t_group;

// Runs parts of a group at the same time, one thread each (the caller's for the first): a rank
// may order its communicators' parts differently from its peers, and every part must be able to
// progress while another waits. A group on one communicator needs no thread at all.
Status run_together(const std::vector<const Part*>& parts) {
  std::vector<Status> results(parts.size());
  std::vector<std::thread> helpers;
  std::vector<size_t> inline_parts;  // no thread could be started for them: run them here
  for (size_t i = 1; i < parts.size(); ++i) {
    try {
      helpers.emplace_back([&, i] { results[i] = parts[i]->run(); });
    } catch (const std::system_error&) {
      inline_parts.push_back(i);
    }
  }
  if (!parts.empty()) results[0] = parts[0]->run();
  for (size_t i : inline_parts) results[i] = parts[i]->run();
  for (std::thread& t : helpers) t.join();
  for (const Status& s : results)
    if (!s.ok()) return s;
  return Status::Ok();
}

// Queues parts on a stream: one job, which runs them together. Every part's communicator holds
// a reference in the job. The job's error is the stream's to report (once); it is also the
// communicator's asynchronous error where the communicator cannot go on, or is non-blocking
// (whose queued calls have no other way to report).
sclResult_t enqueue(Stream* s, std::vector<Part> parts) {
  auto shared = std::make_shared<std::vector<Part>>(std::move(parts));
  s->enqueue([shared]() {
    std::vector<const Part*> list;
    for (const Part& p : *shared) {
      for (uint32_t t : p.tickets) p.comm->started(t);
      list.push_back(&p);
    }
    Status st = run_together(list);
    for (const Part& p : *shared) {
      if (!st.ok() && (p.comm->broken() || !p.comm->config().blocking))
        p.comm->errors().set_async(st);
    }
    return st;
  });
  return sclSuccess;
}

// Issues the parts (their tickets, in order) and runs or queues them, grouped by stream; the NULL
// stream's parts run here. A part for a stream that is no longer live is refused before it takes a
// ticket: a ticket that never runs would hold up every later call on its communicator.
sclResult_t dispatch(std::vector<Part> parts) {
  sclResult_t first = sclSuccess;
  std::vector<Part> live;
  for (Part& p : parts) {
    if (p.stream && !find_stream(p.stream)) {
      const sclResult_t r = report(
          p.comm.get(),
          Errorf(sclInvalidArgument, "stream: %p is not a live sclStream_t", (void*)p.stream));
      if (first == sclSuccess) first = r;
      continue;
    }
    p.issue(p.stream ? find_stream(p.stream) : nullptr);
    live.push_back(std::move(p));
  }
  std::vector<const Part*> now;
  std::vector<sclStream_t> streams;
  for (const Part& p : live) {
    if (!p.stream) now.push_back(&p);
    if (p.stream && std::find(streams.begin(), streams.end(), p.stream) == streams.end())
      streams.push_back(p.stream);
  }
  for (sclStream_t st : streams) {
    std::vector<Part> mine;
    for (Part& p : live)
      if (p.stream == st) mine.push_back(std::move(p));
    const sclResult_t r = enqueue(find_stream(st), std::move(mine));
    if (first == sclSuccess) first = r;
  }
  if (!now.empty()) {
    const Status st = run_together(now);
    const sclResult_t r = report(now.front()->comm.get(), st);
    if (first == sclSuccess) first = r;
  }
  return first;
}

// A non-blocking communicator's calls on the NULL stream go to its queue (api/nonblocking.h).
sclStream_t effective(Communicator* c, sclStream_t stream, bool* queued) {
  *queued = false;
  if (stream || c->config().blocking) return stream;
  Stream* q = nonblocking::queue(handle_of(c));
  *queued = q != nullptr;
  return q ? q : stream;
}

// sclSuccess from a call that went to a queue is sclInProgress to the caller.
sclResult_t queued_result(sclResult_t r, bool queued) {
  return (r == sclSuccess && queued) ? sclInProgress : r;
}

}  // namespace

OwnedCall::OwnedCall(const Call& c, int nranks) : call(c) {
  if (c.coll != Coll::kAlltoAllv || c.refused != sclSuccess) return;  // a refusal has no arrays
  const size_t* src[4] = {c.sendcounts, c.sdispls, c.recvcounts, c.rdispls};
  for (int i = 0; i < 4; ++i) arrays[i].assign(src[i], src[i] + nranks);
  call.sendcounts = arrays[0].data();
  call.sdispls = arrays[1].data();
  call.recvcounts = arrays[2].data();
  call.rdispls = arrays[3].data();
}

sclResult_t submit(Communicator* c, sclStream_t stream, const Call& call) {
  bool queued;
  stream = effective(c, stream, &queued);
  if (t_group.depth > 0) {
    t_group.queued_nonblocking |= queued;
    t_group.part(c, stream).calls.emplace_back(call, c->nranks());
    return sclSuccess;
  }
  if (!stream) return report(c, c->run(c->issue(), call));  // the common path: no copies
  Part p{share(c), stream, {}, {}, {}, {}};
  p.calls.emplace_back(call, c->nranks());
  std::vector<Part> parts;
  parts.push_back(std::move(p));
  return queued_result(dispatch(std::move(parts)), queued);
}

sclResult_t submit(Communicator* c, sclStream_t stream, const P2POp& op) {
  if (op.peer == kAnySource && t_group.depth > 0) {
    return refuse(c, Errorf(sclInvalidUsage,
                            "sclRecvAny: a receive from any source cannot be grouped (between "
                            "sclGroupStart and sclGroupEnd)"));
  }
  if (op.peer == c->rank() && t_group.depth == 0) {
    // Its other half could only come after it, in a call of its own: it would wait out its
    // deadline.
    return refuse(c, Errorf(sclInvalidUsage,
                            "peer: %d is this rank: a send to itself and its receive must be in "
                            "one group (sclGroupStart and sclGroupEnd)",
                            op.peer));
  }
  bool queued;
  stream = effective(c, stream, &queued);
  if (t_group.depth > 0) {
    for (const Part& p : t_group.parts) {
      // Each part of a group runs as a call of its own, in turn on its communicator: a send in
      // one that waits for its receiver's answer would wait for the other part behind it.
      if (p.comm.get() == c && p.stream != stream && !p.p2p.empty()) {
        return refuse(c, Errorf(sclInvalidUsage,
                                "stream: a group's sends and receives on one communicator must "
                                "share a stream (this one is on %p, an earlier one on %p)",
                                (void*)stream, (void*)p.stream));
      }
    }
    t_group.queued_nonblocking |= queued;
    t_group.part(c, stream).p2p.push_back(op);
    return sclSuccess;
  }
  Part p{share(c), stream, {}, {op}, {}, {}};
  std::vector<Part> parts;
  parts.push_back(std::move(p));
  return queued_result(dispatch(std::move(parts)), queued);
}

sclResult_t submit(Communicator* c, sclStream_t stream, const moe::Call& call) {
  if (t_group.depth > 0) {
    return refuse(c, Errorf(sclInvalidUsage,
                            "%s: MoE calls cannot be grouped (between sclGroupStart and "
                            "sclGroupEnd)",
                            moe::call_name(call.kind)));
  }
  bool queued;
  stream = effective(c, stream, &queued);
  if (!stream) return report(c, c->run_moe(c->issue(), call));
  Part p{share(c), stream, {}, {}, call, {}};
  std::vector<Part> parts;
  parts.push_back(std::move(p));
  return queued_result(dispatch(std::move(parts)), queued);
}

namespace {

sclResult_t keep_failure(Communicator* c, Status s) {
  if (t_group.depth > 0 && t_group.failure.ok()) t_group.failure = s;
  return report(c, std::move(s));
}

}  // namespace

sclResult_t refuse(Communicator* c, Status s) {
  if (t_group.depth > 0) t_group.unpaired = true;
  return keep_failure(c, std::move(s));
}

namespace {

Call refusal(Coll coll, sclResult_t why) {
  Call call;
  call.coll = coll;
  call.refused = why;
  return call;
}

// Inside a group, the share a refused call on `c` joins, as its other calls would.
Part& refused_share(Communicator* c, sclStream_t stream) {
  bool queued;
  stream = effective(c, stream, &queued);
  t_group.queued_nonblocking |= queued;
  return t_group.part(c, stream);
}

}  // namespace

sclResult_t after_turn(Communicator* c, sclResult_t turn, Status why) {
  return is_fatal(Status(turn, "")) ? turn : report(c, std::move(why));
}

sclResult_t refuse_taking_part(Communicator* c, sclStream_t stream, Coll coll, Status s) {
  if (t_group.depth > 0) {
    refused_share(c, stream).calls.emplace_back(refusal(coll, s.code()), c->nranks());
    return keep_failure(c, std::move(s));
  }
  return after_turn(c, submit(c, stream, refusal(coll, s.code())), std::move(s));
}

sclResult_t refuse_taking_part(Communicator* c, sclStream_t stream, const P2POp& op, Status s) {
  if (t_group.depth > 0) {
    refused_share(c, stream).p2p.push_back(op);
    return keep_failure(c, std::move(s));
  }
  // A send to this rank outside a group has no partner to pair with (submit() refuses it).
  if (op.peer == c->rank()) return refuse(c, std::move(s));
  return after_turn(c, submit(c, stream, op), std::move(s));
}

sclResult_t group_start() {
  ++t_group.depth;
  return sclSuccess;
}

sclResult_t group_end() {
  if (t_group.depth == 0) {
    return report(nullptr, Errorf(sclInvalidUsage, "sclGroupEnd without a matching sclGroupStart"));
  }
  if (--t_group.depth > 0) return sclSuccess;
  std::vector<Part> parts = std::move(t_group.parts);  // in the order they were first used
  t_group.parts.clear();
  const bool queued = t_group.queued_nonblocking;
  t_group.queued_nonblocking = false;
  const bool unpaired = std::exchange(t_group.unpaired, false);
  if (Status failed = std::exchange(t_group.failure, Status::Ok()); !failed.ok()) {
    // Each communicator's share takes the turn of its first call, refused: the peers fail that
    // call (and skip the rest of their group's share, as after any failure), so the next calls
    // pair as they should. A share of sends and receives alone pairs each, refused, where every
    // call of the group joined a share (a receive from any source cannot: its peers' sends wait
    // for their deadline).
    std::vector<Part> refusals;
    for (const Part& p : parts) {
      Part r{p.comm, p.stream, {}, {}, {}, {}};
      if (!p.calls.empty()) {
        r.calls.emplace_back(refusal(p.calls.front().call.coll, failed.code()), p.comm->nranks());
      } else {
        for (P2POp op : p.p2p) {
          if (op.peer == kAnySource) continue;
          op.refused = failed.code();
          r.p2p.push_back(op);
        }
        if (unpaired || r.p2p.empty()) continue;
      }
      refusals.push_back(std::move(r));
    }
    (void)dispatch(std::move(refusals));
    return report(nullptr, Status(failed.code(),
                                  "sclGroupEnd: none of the group's calls ran; "
                                  "one of them failed: " +
                                      failed.message()));
  }
  return queued_result(dispatch(std::move(parts)), queued);
}

}  // namespace stratacl::api
