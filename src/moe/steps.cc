#include "moe/steps.h"

#include "coll/call.h"

namespace stratacl::moe {
namespace {

Coll coll_of(Kind k) {
  switch (k) {
    case Kind::kCreate:
      return Coll::kMoeCreate;
    case Kind::kDispatch:
      return Coll::kMoeDispatch;
    case Kind::kCombine:
      break;
  }
  return Coll::kMoeCombine;
}

// Create: a step whose only work is the agreement.
Status plain_step(CollContext& c, Region<Lines> lines, const Call& call) {
  Lines& mine = *lines.in(c.me());
  mine = Lines{};
  mine.prepared = call.refused;
  mine.plan_digest = call.plan->digest;
  return run_step(c, step_desc(c, call),
                  [&](const std::vector<CallDesc>&) { return agree(c, lines); });
}

}  // namespace

const char* call_name(Kind kind) { return coll_name(coll_of(kind)); }

CallDesc step_desc(const CollContext& c, const Call& call) {
  CallDesc d;
  d.sig.coll = uint32_t(coll_of(call.kind));
  // A create's plans are compared whole by agree(), so that a rank whose config was refused (or
  // differs in its types or layout) is reported as such, not as a call with other arguments.
  if (call.kind != Kind::kCreate) {
    d.sig.dtype = call.kind == Kind::kCombine ? call.plan->out_type : call.plan->x_type;
    d.sig.op = call.plan->expert_major ? sclMoeExpertMajor : sclMoeTokenMajor;
  }
  d.sig.root = call.reuse ? 1 : 0;
  d.sig.round_bytes = c.round_bytes;
  // As run_refused() signs a refused collective: no call matches.
  if (call.refused != sclSuccess && call.kind != Kind::kCreate) sign_refused(d.sig, call.refused);
  return d;
}

Status agree(const CollContext& c, Region<Lines> lines) {
  const Lines& mine = *lines.in(c.cb(c.rank));
  for (int p = 0; p < c.nranks; ++p) {
    const Lines theirs = *lines.in(c.cb(p));
    if (theirs.prepared != sclSuccess) {
      const sclResult_t r = peer_result(theirs.prepared);
      return Errorf(r == sclRemoteError ? r : sclInvalidUsage,
                    "%s: rank %d could not take part (%s); see its error", c.where().c_str(), p,
                    sclGetErrorString(r));
    }
    if (theirs.plan_digest != mine.plan_digest) {
      return Errorf(sclInvalidUsage,
                    "%s: ranks %d and %d use different MoE plans (their sclMoeConfig_t differ, or "
                    "the calls are on different plans)",
                    c.where().c_str(), c.rank, p);
    }
    if (theirs.handle_id != mine.handle_id) {
      return Errorf(sclInvalidUsage,
                    "%s: rank %d follows the MoE handle of the dispatch at step %llu, rank %d that "
                    "of step %llu: every rank must pass the handle of the same dispatch",
                    c.where().c_str(), c.rank, (unsigned long long)mine.handle_id, p,
                    (unsigned long long)theirs.handle_id);
    }
  }
  return Status::Ok();
}

Status run(CollContext& c, Region<Lines> lines, const Call& call) {
  switch (call.kind) {
    case Kind::kDispatch:
      return dispatch(c, lines, call);
    case Kind::kCombine:
      return combine(c, lines, call);
    case Kind::kCreate:
      break;
  }
  return plain_step(c, lines, call);
}

}  // namespace stratacl::moe
