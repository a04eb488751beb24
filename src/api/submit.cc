#include "api/submit.h"

#include <algorithm>
#include <memory>
#include <system_error>
#include <thread>

#include "api/handles.h"

namespace stratacl::api {
namespace {

// One (communicator, stream) share of a group, or one call: its collectives in call order, then
// one fused batch of sends and receives, all in one turn of the communicator.
struct Part {
  std::shared_ptr<Communicator> comm;
  sclStream_t stream = nullptr;
  std::vector<OwnedCall> calls;
  std::vector<P2POp> p2p;
  std::vector<uint32_t> tickets;  // one per collective, then one for the batch, taken at issue

  void issue() {
    for (size_t i = 0; i < calls.size() + (p2p.empty() ? 0 : 1); ++i)
      tickets.push_back(comm->issue());
  }
  Status run() const {
    size_t t = 0;
    for (const OwnedCall& oc : calls) SCL_TRY(comm->run(tickets[t++], oc.call));
    if (!p2p.empty()) SCL_TRY(comm->run_p2p(tickets[t], p2p));
    return Status::Ok();
  }
};

struct GroupState {
  int depth = 0;
  std::vector<Part> parts;
  Part& part(Communicator* c, sclStream_t s) {
    for (Part& p : parts) {
      if (p.comm.get() == c && p.stream == s) return p;
    }
    parts.push_back(Part{share(c), s, {}, {}, {}});
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
// a reference in the job, and records the job's error as its asynchronous error.
sclResult_t enqueue(Stream* s, std::vector<Part> parts) {
  auto shared = std::make_shared<std::vector<Part>>(std::move(parts));
  s->enqueue([shared]() {
    std::vector<const Part*> list;
    for (const Part& p : *shared) list.push_back(&p);
    Status st = run_together(list);
    if (!st.ok())
      for (const Part& p : *shared) p.comm->errors().set_async(st);
    return st;
  });
  return sclSuccess;
}

// Runs or queues issued parts, grouped by stream. The NULL stream's parts run here.
sclResult_t dispatch(std::vector<Part> parts) {
  std::vector<const Part*> now;
  for (const Part& p : parts)
    if (!p.stream) now.push_back(&p);
  std::vector<sclStream_t> streams;
  for (const Part& p : parts)
    if (p.stream && std::find(streams.begin(), streams.end(), p.stream) == streams.end())
      streams.push_back(p.stream);
  sclResult_t first = sclSuccess;
  for (sclStream_t st : streams) {
    Stream* s = find_stream(st);
    std::vector<Part> mine;
    for (Part& p : parts)
      if (p.stream == st) mine.push_back(std::move(p));
    const sclResult_t r =
        s ? enqueue(s, std::move(mine))
          : report(nullptr,
                   Errorf(sclInvalidArgument, "stream: %p is not a live sclStream_t", (void*)st));
    if (first == sclSuccess) first = r;
  }
  if (!now.empty()) {
    const Status st = run_together(now);
    const sclResult_t r = report(now.front()->comm.get(), st);
    if (first == sclSuccess) first = r;
  }
  return first;
}

}  // namespace

OwnedCall::OwnedCall(const Call& c, int nranks) : call(c) {
  if (c.coll != Coll::kAlltoAllv) return;
  const size_t* src[4] = {c.sendcounts, c.sdispls, c.recvcounts, c.rdispls};
  for (int i = 0; i < 4; ++i) arrays[i].assign(src[i], src[i] + nranks);
  call.sendcounts = arrays[0].data();
  call.sdispls = arrays[1].data();
  call.recvcounts = arrays[2].data();
  call.rdispls = arrays[3].data();
}

sclResult_t submit(Communicator* c, sclStream_t stream, const Call& call) {
  if (t_group.depth > 0) {
    t_group.part(c, stream).calls.emplace_back(call, c->nranks());
    return sclSuccess;
  }
  if (!stream) return report(c, c->run(c->issue(), call));  // the common path: no copies
  Part p{share(c), stream, {}, {}, {}};
  p.calls.emplace_back(call, c->nranks());
  p.issue();
  std::vector<Part> parts;
  parts.push_back(std::move(p));
  return dispatch(std::move(parts));
}

sclResult_t submit(Communicator* c, sclStream_t stream, const P2POp& op) {
  if (t_group.depth > 0) {
    t_group.part(c, stream).p2p.push_back(op);
    return sclSuccess;
  }
  Part p{share(c), stream, {}, {op}, {}};
  p.issue();
  std::vector<Part> parts;
  parts.push_back(std::move(p));
  return dispatch(std::move(parts));
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
  std::vector<Part> parts = std::move(t_group.parts);
  t_group.parts.clear();
  for (Part& p : parts) p.issue();  // tickets in the order the parts were first used
  return dispatch(std::move(parts));
}

}  // namespace stratacl::api
