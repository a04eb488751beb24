// C entry points: MoE dispatch and combine (src/moe/). Validation names the argument at fault and
// has no side effect; dispatch and combine then run as calls of the communicator, in its issue
// order, now or on a stream.
#include <algorithm>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "api/handles.h"
#include "api/submit.h"
#include "api/validate.h"
#include "fabric/heap.h"
#include "moe/moe.h"

struct sclMoe {};
struct sclMoeHandle {};

using namespace stratacl;
using namespace stratacl::api;

namespace {

// A plan bound to its communicator.
struct MoeObject : sclMoe {
  std::shared_ptr<Communicator> comm;
  std::shared_ptr<const moe::Plan> plan;
  std::shared_ptr<moe::Staging> staging = std::make_shared<moe::Staging>();
};

struct HandleObject : sclMoeHandle {
  const MoeObject* owner = nullptr;
  std::shared_ptr<moe::Handle> state;
};

// Live objects: a destroyed or forged handle is an invalid argument, not a use after free.
std::mutex g_mu;
std::unordered_map<const void*, std::shared_ptr<MoeObject>>& plans() {
  static auto* m = new std::unordered_map<const void*, std::shared_ptr<MoeObject>>();
  return *m;
}
std::unordered_map<const void*, std::unique_ptr<HandleObject>>& handles() {
  static auto* m = new std::unordered_map<const void*, std::unique_ptr<HandleObject>>();
  return *m;
}

std::shared_ptr<MoeObject> find_plan(sclMoe_t moe) {
  std::lock_guard<std::mutex> lock(g_mu);
  auto it = plans().find(moe);
  return it == plans().end() ? nullptr : it->second;
}

HandleObject* find_handle(sclMoeHandle_t h) {
  std::lock_guard<std::mutex> lock(g_mu);
  auto it = handles().find(h);
  return it == handles().end() ? nullptr : it->second.get();
}

Status not_live(const char* what, const void* p) {
  return Errorf(sclInvalidArgument, "%s: %p is NULL or not live", what, p);
}

LocalBuffer local(const MoeObject& m, const void* p, size_t bytes) {
  return LocalBuffer{static_cast<const char*>(p),
                     classify(p, bytes, existing_heap(), &m.comm->registrations())};
}

Status check_dispatch(const MoeObject& m, const sclMoeTokens_t* in, const sclMoeRecv_t* out,
                      const HandleObject* reuse) {
  const moe::Plan& p = *m.plan;
  if (!in) return Errorf(sclInvalidArgument, "in: NULL");
  if (!out) return Errorf(sclInvalidArgument, "out: NULL");
  const int t = in->numTokens;
  if (t < 0 || t > p.max_tokens) {
    return Errorf(sclInvalidArgument, "in->numTokens: %d is out of range [0, %d]", t, p.max_tokens);
  }
  if (reuse && t != reuse->state->tokens) {
    return Errorf(sclInvalidArgument, "in->numTokens: %d, but the reused handle's dispatch had %d",
                  t, reuse->state->tokens);
  }
  const size_t tokens = size_t(t), k = size_t(p.topk);
  SCL_TRY(check_buffer("in->x", in->x, tokens * p.x_row_bytes(), p.x_type));
  if (p.x_fp8())
    SCL_TRY(check_buffer("in->scales", in->scales, tokens * p.scale_cols() * 4, sclFloat32));
  if (!reuse) {
    SCL_TRY(check_buffer("in->topkIdx", in->topkIdx, tokens * k * 8, sclInt64));
    if (t > 0) SCL_TRY(moe::check_topk(p, in->topkIdx, t, "in->topkIdx"));
  }
  if (in->topkWeights) {  // optional
    SCL_TRY(check_buffer("in->topkWeights", in->topkWeights, tokens * k * 4, sclFloat32));
  }
  SCL_TRY(check_buffer("out->x", out->x, p.max_recv_rows * p.recv_row_bytes(), p.recv_type));
  if (p.recv_fp8()) {
    SCL_TRY(
        check_buffer("out->scales", out->scales, p.max_recv_rows * p.scale_cols() * 4, sclFloat32));
  }
  SCL_TRY(check_buffer("out->tokensPerExpert", out->tokensPerExpert, size_t(p.local_experts) * 4,
                       sclInt32));
  if (!p.expert_major) {
    SCL_TRY(check_buffer("out->topkIdx", out->topkIdx, p.max_recv_rows * k * 8, sclInt64));
    SCL_TRY(
        check_buffer("out->topkWeights", out->topkWeights, p.max_recv_rows * k * 4, sclFloat32));
    SCL_TRY(check_buffer("out->numRows", out->numRows, 4, sclInt32));
  }
  // Nothing received may land on what peers read of ours during the call.
  struct Span {
    const char* name;
    const void* p;
    size_t bytes;
  };
  const Span sent[] = {
      {"in->x", in->x, tokens * p.x_row_bytes()},
      {"in->scales", p.x_fp8() ? in->scales : nullptr, tokens * p.scale_cols() * 4},
      {"in->topkIdx", reuse ? nullptr : in->topkIdx, tokens * k * 8},
      {"in->topkWeights", in->topkWeights, tokens * k * 4}};
  const size_t rows = p.max_recv_rows;
  const Span received[] = {
      {"out->x", out->x, rows * p.recv_row_bytes()},
      {"out->scales", p.recv_fp8() ? out->scales : nullptr, rows * p.scale_cols() * 4},
      {"out->topkIdx", p.expert_major ? nullptr : out->topkIdx, rows * k * 8},
      {"out->topkWeights", p.expert_major ? nullptr : out->topkWeights, rows * k * 4},
      {"out->tokensPerExpert", out->tokensPerExpert, size_t(p.local_experts) * 4},
      {"out->numRows", p.expert_major ? nullptr : out->numRows, 4}};
  for (const Span& o : received) {
    for (const Span& i : sent)
      SCL_TRY(check_overlap(o.name, o.p, o.bytes, i.name, i.p, i.bytes, nullptr));
  }
  return Status::Ok();
}

// A dispatch or combine refused for its arguments still takes its turn, publishing only that
// it was refused (moe/dispatch.cc, moe/combine.cc), so that its peers fail the same call rather
// than pair it with this rank's next one, as a refused collective does (api/submit.h).
sclResult_t refuse_moe(const MoeObject& m, moe::Kind kind, sclStream_t stream, Status why) {
  moe::Call call;
  call.kind = kind;
  call.plan = m.plan;
  call.staging = m.staging;
  call.handle = std::make_shared<moe::Handle>(0);
  call.refused = why.code();
  Communicator* c = m.comm.get();
  return after_turn(c, submit(c, stream && find_stream(stream) ? stream : nullptr, call),
                    std::move(why));
}

}  // namespace

extern "C" {

sclResult_t sclMoeCreate(sclComm_t comm, const sclMoeConfig_t* config, sclMoe_t* moe) {
  if (auto r = refused_in_child()) return *r;
  Communicator* c = find_comm(comm);
  if (!c) return report(nullptr, api::not_live(comm));
  Result<moe::Plan> plan = Errorf(sclInvalidArgument, "moe: NULL output pointer");
  if (moe) *moe = nullptr, plan = moe::Plan::make(config, c->nranks(), c->rank());
  moe::Call call;
  call.kind = moe::Kind::kCreate;
  // An invalid config or output still takes part in the create step, saying it was refused, so
  // that every rank fails at once instead of waiting for this one.
  call.plan = std::make_shared<const moe::Plan>(plan.ok() ? *plan : moe::Plan{});
  call.refused = plan.status().code();
  const sclResult_t r = submit(c, nullptr, call);
  if (!plan.ok()) return report(c, plan.status());
  // sclInProgress: a non-blocking communicator's queue holds the create; the plan exists from
  // now on, and calls queued after it follow it (a create that fails is the queue's error).
  if (r != sclSuccess && r != sclInProgress) return r;
  auto obj = std::make_shared<MoeObject>();
  obj->comm = share(c);
  obj->plan = call.plan;
  std::lock_guard<std::mutex> lock(g_mu);
  plans().emplace(static_cast<sclMoe*>(obj.get()), obj);
  *moe = obj.get();
  return r;
}

sclResult_t sclMoeDestroy(sclMoe_t moe) {
  if (auto r = refused_in_child()) return *r;
  // Local: every call of a plan ends only when every rank is done with it (the step's done
  // count), so no peer reads anything of the plan between calls, and ranks may destroy it at
  // different moments (a garbage collector's). Calls still queued on a stream hold the plan's
  // parts they use until they have run.
  std::lock_guard<std::mutex> lock(g_mu);
  auto it = plans().find(moe);
  if (it == plans().end()) return report(nullptr, not_live("moe", moe));
  const MoeObject* m = it->second.get();
  for (auto h = handles().begin(); h != handles().end();) {
    h = h->second->owner == m ? handles().erase(h) : std::next(h);
  }
  plans().erase(it);
  return sclSuccess;
}

sclResult_t sclMoeGetInfo(sclMoe_t moe, int* localExperts, size_t* maxRecvRows) {
  if (auto r = refused_in_child()) return *r;
  std::shared_ptr<MoeObject> m = find_plan(moe);
  if (!m) return report(nullptr, not_live("moe", moe));
  if (localExperts) *localExperts = m->plan->local_experts;
  if (maxRecvRows) *maxRecvRows = m->plan->max_recv_rows;
  return sclSuccess;
}

sclResult_t sclMoeDispatchLayout(sclMoe_t moe, const int64_t* topkIdx, int numTokens,
                                 int* tokensPerRank, int* tokensPerExpert, uint8_t* isTokenInRank) {
  if (auto r = refused_in_child()) return *r;
  std::shared_ptr<MoeObject> m = find_plan(moe);
  if (!m) return report(nullptr, not_live("moe", moe));
  const moe::Plan& p = *m->plan;
  Communicator* c = m->comm.get();
  if (numTokens < 0 || numTokens > p.max_tokens) {
    return report(c, Errorf(sclInvalidArgument, "numTokens: %d is out of range [0, %d]", numTokens,
                            p.max_tokens));
  }
  if (Status s = check_buffer("topkIdx", topkIdx, size_t(numTokens) * size_t(p.topk) * 8, sclInt64);
      !s.ok())
    return report(c, s);
  if (Status s = moe::check_topk(p, topkIdx, numTokens, "topkIdx"); !s.ok()) return report(c, s);
  if (tokensPerRank) std::fill_n(tokensPerRank, p.nranks, 0);
  if (tokensPerExpert) std::fill_n(tokensPerExpert, p.num_experts, 0);
  std::vector<uint8_t> in_rank(size_t(p.nranks));
  for (int t = 0; t < numTokens; ++t) {
    std::fill(in_rank.begin(), in_rank.end(), 0);
    for (int j = 0; j < p.topk; ++j) {
      const int64_t e = topkIdx[size_t(t) * size_t(p.topk) + size_t(j)];
      if (e < 0) continue;
      in_rank[size_t(p.owner[size_t(e)])] = 1;
      if (tokensPerExpert) ++tokensPerExpert[e];
    }
    for (int r = 0; r < p.nranks; ++r) {
      if (tokensPerRank) tokensPerRank[r] += in_rank[size_t(r)];
      if (isTokenInRank)
        isTokenInRank[size_t(t) * size_t(p.nranks) + size_t(r)] = in_rank[size_t(r)];
    }
  }
  return sclSuccess;
}

sclResult_t sclMoeDispatch(sclMoe_t moe, const sclMoeTokens_t* in, sclMoeRecv_t* out,
                           sclMoeHandle_t* handle, sclStream_t stream) {
  if (auto r = refused_in_child()) return *r;
  std::shared_ptr<MoeObject> m = find_plan(moe);
  if (!m) return report(nullptr, not_live("moe", moe));
  Communicator* c = m->comm.get();
  const auto refused = [&](Status why) {
    return refuse_moe(*m, moe::Kind::kDispatch, stream, std::move(why));
  };
  if (!handle) return refused(Errorf(sclInvalidArgument, "handle: NULL pointer"));
  if (stream && !find_stream(stream)) return refused(not_live("stream", stream));
  HandleObject* reuse = nullptr;
  if (*handle) {
    reuse = find_handle(*handle);
    if (!reuse || reuse->owner != m.get()) {
      return refused(Errorf(sclInvalidArgument,
                            "*handle: %p is not a live handle of this plan (NULL for a new one)",
                            (void*)*handle));
    }
  }
  if (Status s = check_dispatch(*m, in, out, reuse); !s.ok()) return refused(s);
  const moe::Plan& p = *m->plan;
  const size_t tokens = size_t(in->numTokens), k = size_t(p.topk);
  moe::Call call;
  call.kind = moe::Kind::kDispatch;
  call.plan = m->plan;
  call.staging = m->staging;
  call.reuse = reuse != nullptr;
  call.x = local(*m, in->x, tokens * p.x_row_bytes());
  call.scales = local(*m, in->scales, tokens * p.scale_cols() * 4);
  call.topk = local(*m, in->topkIdx, tokens * k * 8);
  call.weights = local(*m, in->topkWeights, tokens * k * 4);
  call.tokens = in->numTokens;
  call.out = *out;
  std::unique_ptr<HandleObject> fresh;
  if (reuse) {
    call.handle = reuse->state;
  } else {
    fresh = std::make_unique<HandleObject>();
    fresh->owner = m.get();
    fresh->state = std::make_shared<moe::Handle>(in->numTokens);
    call.handle = fresh->state;
  }
  const sclResult_t r = submit(c, stream, call);
  if (fresh && (r == sclSuccess || r == sclInProgress)) {
    // On a stream or a non-blocking communicator's queue, the handle exists from now on; a combine
    // queued after the dispatch follows it (and fails, on every rank, if the dispatch fails when it
    // runs).
    std::lock_guard<std::mutex> lock(g_mu);
    *handle = fresh.get();
    handles().emplace(static_cast<sclMoeHandle*>(fresh.get()), std::move(fresh));
  }
  return r;
}

sclResult_t sclMoeCombine(sclMoe_t moe, sclMoeHandle_t handle, const void* expertOut,
                          const float* topkWeights, void* out, sclStream_t stream) {
  if (auto r = refused_in_child()) return *r;
  std::shared_ptr<MoeObject> m = find_plan(moe);
  if (!m) return report(nullptr, not_live("moe", moe));
  Communicator* c = m->comm.get();
  const auto refused = [&](Status why) {
    return refuse_moe(*m, moe::Kind::kCombine, stream, std::move(why));
  };
  if (stream && !find_stream(stream)) return refused(not_live("stream", stream));
  HandleObject* h = find_handle(handle);
  if (!h || h->owner != m.get()) {
    return refused(
        Errorf(sclInvalidArgument, "handle: %p is not a live handle of this plan", (void*)handle));
  }
  const moe::Plan& p = *m->plan;
  const size_t tokens = size_t(h->state->tokens);
  if (!p.expert_major && topkWeights) {
    return refused(
        Errorf(sclInvalidArgument, "topkWeights: token-major combine is unweighted (pass NULL)"));
  }
  // A rank that receives no rows may pass NULL (an empty tensor has no memory): the rows are
  // known once the dispatch completed, and the step checks them (below).
  if (expertOut) {
    if (Status s = check_buffer("expertOut", expertOut, 1, p.out_type); !s.ok()) return refused(s);
  }
  if (topkWeights) {
    if (Status s =
            check_buffer("topkWeights", topkWeights, tokens * size_t(p.topk) * 4, sclFloat32);
        !s.ok())
      return refused(s);
  }
  if (Status s = check_buffer("out", out, tokens * p.out_row_bytes(), p.out_type); !s.ok())
    return refused(s);
  // The rows expertOut must hold are known once the dispatch completed, which may still be
  // queued on a stream here on one rank and done on another: they are checked in the step
  // (moe/combine.cc), where a rank that cannot take part fails the call on every rank, whatever
  // the timing.
  moe::Call call;
  call.kind = moe::Kind::kCombine;
  call.plan = m->plan;
  call.staging = m->staging;
  call.handle = h->state;
  call.expert_out = local(*m, expertOut, p.max_recv_rows * p.out_row_bytes());
  call.combine_weights = topkWeights;
  call.combined = static_cast<char*>(out);
  return submit(c, stream, call);
}

sclResult_t sclMoeHandleDestroy(sclMoeHandle_t handle) {
  if (auto r = refused_in_child()) return *r;
  std::lock_guard<std::mutex> lock(g_mu);
  if (!handles().erase(handle)) return report(nullptr, not_live("handle", handle));
  return sclSuccess;
}

}  // extern "C"
