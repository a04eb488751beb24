#include "api/submit.h"

#include <memory>

#include "api/handles.h"

namespace stratacl::api {
namespace {

// One communicator's share of a group: its collectives in call order, then one fused batch of
// sends and receives.
struct GroupPart {
  Communicator* comm;
  sclStream_t stream;
  std::vector<OwnedCall> calls;
  std::vector<P2POp> p2p;
};

struct GroupState {
  int depth = 0;
  std::vector<GroupPart> parts;
  GroupPart& part(Communicator* c, sclStream_t s) {
    for (GroupPart& p : parts) {
      if (p.comm == c) return p;
    }
    parts.push_back(GroupPart{c, s, {}, {}});
    return parts.back();
  }
};
thread_local GroupState t_group;

Status run_part(const GroupPart& g) {
  for (const OwnedCall& oc : g.calls) SCL_TRY(g.comm->run(oc.call));
  if (!g.p2p.empty()) SCL_TRY(g.comm->run_p2p(g.p2p));
  return Status::Ok();
}

sclResult_t dispatch(GroupPart part) {
  Communicator* c = part.comm;
  if (!part.stream) return report(c, run_part(part));
  Stream* s = find_stream(part.stream);
  if (!s)
    return report(
        c, Errorf(sclInvalidArgument, "stream: %p is not a live sclStream_t", (void*)part.stream));
  c->enqueue_begin();
  auto shared = std::make_shared<GroupPart>(std::move(part));
  s->enqueue([shared]() {
    Status st = run_part(*shared);
    if (!st.ok()) shared->comm->set_async_error(st);
    shared->comm->enqueue_end();
    return st;
  });
  return sclSuccess;
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
  GroupPart p{c, stream, {}, {}};
  if (stream) {
    p.calls.emplace_back(call, c->nranks());
    return dispatch(std::move(p));
  }
  return report(c, c->run(call));  // the common blocking path: no copies
}

sclResult_t submit(Communicator* c, sclStream_t stream, const P2POp& op) {
  if (t_group.depth > 0) {
    t_group.part(c, stream).p2p.push_back(op);
    return sclSuccess;
  }
  return dispatch(GroupPart{c, stream, {}, {op}});
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
  std::vector<GroupPart> parts = std::move(t_group.parts);
  t_group.parts.clear();
  sclResult_t first = sclSuccess;
  for (GroupPart& p : parts) {
    sclResult_t r = dispatch(std::move(p));
    if (first == sclSuccess) first = r;
  }
  return first;
}

}  // namespace stratacl::api
