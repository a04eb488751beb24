// MoE dispatch and combine under bad input: every bad argument is sclInvalidArgument naming it,
// with no side effect (a failed dispatch leaves *handle NULL; correct calls afterwards give the
// right rows); calls that disagree across ranks (a plan's config, the handle a combine follows,
// a reused handle on some ranks only) are sclInvalidUsage on every rank; a queued combine whose
// buffer turns out too small fails on every rank at synchronisation; the communicator goes on.
#include <cstdint>
#include <string>
#include <vector>

#include "fault_common.h"

namespace fault {
namespace {

constexpr int kHidden = 128, kTopk = 2, kTokens = 8;

sclMoeConfig_t config(int n, sclMoeLayout_t layout = sclMoeTokenMajor) {
  sclMoeConfig_t c = SCL_MOE_CONFIG_INITIALIZER;
  c.hidden = kHidden, c.topk = kTopk, c.numExperts = 2 * n, c.maxTokensPerRank = kTokens;
  c.layout = layout;
  return c;
}

template <typename T>
T* heap(size_t count) {
  void* p = nullptr;
  sclMemAlloc(&p, count * sizeof(T) + 64);
  return static_cast<T*>(p);
}

// One rank's buffers for the config above; token t of rank r goes to experts 2*((r+t)%n) and
// 2*((r+t+1)%n)+1 (two ranks when n > 1), row values r*1000 + t.
struct Rig {
  int n, rank;
  sclMoe_t moe = nullptr;
  uint16_t* x;
  int64_t* ids;
  float* weights;
  uint16_t *rx, *expert_out, *combined;
  int64_t* rids;
  float* rweights;
  int *per_expert, *rows;
  Rig(sclComm_t comm, int n_, int rank_) : n(n_), rank(rank_) {
    const sclMoeConfig_t c = config(n);
    expect(sclMoeCreate(comm, &c, &moe) == sclSuccess, "create", sclGetLastError(comm));
    const size_t max_rows = size_t(n) * kTokens;
    x = heap<uint16_t>(kTokens * kHidden);
    ids = heap<int64_t>(kTokens * kTopk);
    weights = heap<float>(kTokens * kTopk);
    rx = heap<uint16_t>(max_rows * kHidden);
    expert_out = heap<uint16_t>(max_rows * kHidden);
    combined = heap<uint16_t>(kTokens * kHidden);
    rids = heap<int64_t>(max_rows * kTopk);
    rweights = heap<float>(max_rows * kTopk);
    per_expert = heap<int>(2);
    rows = heap<int>(1);
    for (int t = 0; t < kTokens; ++t) {
      ids[t * kTopk] = 2 * ((rank + t) % n);
      ids[t * kTopk + 1] = 2 * ((rank + t + 1) % n) + 1;
      weights[t * kTopk] = weights[t * kTopk + 1] = 0.5f;
      for (int h = 0; h < kHidden; ++h) x[t * kHidden + h] = uint16_t(rank * 1000 + t);
    }
  }
  sclMoeTokens_t in() const { return sclMoeTokens_t{x, nullptr, ids, weights, kTokens}; }
  sclMoeRecv_t out() const { return sclMoeRecv_t{rx, nullptr, rids, rweights, per_expert, rows}; }
  // A correct dispatch, checked: every rank receives each source's tokens routed here.
  void dispatch_and_check(sclComm_t comm, const char* after) {
    sclMoeHandle_t h = nullptr;
    sclMoeTokens_t i = in();
    sclMoeRecv_t o = out();
    const sclResult_t r = sclMoeDispatch(moe, &i, &o, &h, nullptr);
    expect(r == sclSuccess, after, sclGetLastError(comm));
    if (r != sclSuccess) return;
    int want = 0;
    for (int s = 0; s < n; ++s)
      for (int t = 0; t < kTokens; ++t) want += (s + t) % n == rank || (s + t + 1) % n == rank;
    expect(*rows == want, after, "rows " + std::to_string(*rows) + " want " + std::to_string(want));
    sclMoeHandleDestroy(h);
  }
};

}  // namespace

int run_moe_bad_arguments() {
  sclComm_t comm = init_or_die();
  int n = 0;
  sclCommCount(comm, &n);
  const sclResult_t kArg = sclInvalidArgument;
  Rig rig(comm, n, g_rank);
  sclMoe_t moe = rig.moe;

  // Create: a config invalid on every rank fails on every rank, leaving *moe NULL.
  sclMoe_t made = reinterpret_cast<sclMoe_t>(&rig);
  expect_error(sclMoeCreate(comm, nullptr, &made), kArg, comm, "config", "null config");
  expect(made == nullptr, "a failed create leaves *moe NULL");
  sclMoeConfig_t c = config(n);
  c.topk = 2 * n + 1;
  expect_error(sclMoeCreate(comm, &c, &made), kArg, comm, "config.topk", "topk > E");
  // Expert-major receive buffers of 2^16 experts a rank x n x 2^30 tokens x 2^17 bytes a row:
  // beyond 2^64 bytes, though every rank's tokens fit.
  c = config(n);
  c.layout = sclMoeExpertMajor, c.hidden = 32768, c.maxTokensPerRank = 1 << 30;
  c.numExperts = n << 16, c.topk = 1;
  expect_error(sclMoeCreate(comm, &c, &made), kArg, comm, "overflow the receive buffers",
               "expert-major rows overflow");
  expect(made == nullptr, "a failed create leaves *moe NULL");
  c = config(n);
  expect_error(sclMoeCreate(comm, &c, nullptr), kArg, comm, "moe", "null output");
  expect_error(sclMoeGetInfo(nullptr, nullptr, nullptr), kArg, nullptr, "moe", "null moe");

  // Dispatch.
  sclMoeTokens_t in = rig.in();
  sclMoeRecv_t out = rig.out();
  sclMoeHandle_t h = nullptr;
  auto dispatch_fails = [&](const char* needle, const char* what) {
    h = nullptr;
    expect_error(sclMoeDispatch(moe, &in, &out, &h, nullptr), kArg, comm, needle, what);
    expect(h == nullptr, what, "a failed dispatch must leave *handle NULL");
    in = rig.in();
    out = rig.out();
  };
  expect_error(sclMoeDispatch(nullptr, &in, &out, &h, nullptr), kArg, nullptr, "moe", "null moe");
  expect_error(sclMoeDispatch(moe, nullptr, &out, &h, nullptr), kArg, comm, "in", "null in");
  expect_error(sclMoeDispatch(moe, &in, nullptr, &h, nullptr), kArg, comm, "out", "null out");
  expect_error(sclMoeDispatch(moe, &in, &out, nullptr, nullptr), kArg, comm, "handle",
               "null handle pointer");
  in.numTokens = -1;
  dispatch_fails("in->numTokens", "negative tokens");
  in.numTokens = kTokens + 1;
  dispatch_fails("in->numTokens", "tokens above maxTokensPerRank");
  in.x = nullptr;
  dispatch_fails("in->x", "null x");
  in.x = reinterpret_cast<const char*>(rig.x) + 1;
  dispatch_fails("in->x", "unaligned x");
  in.topkIdx = nullptr;
  dispatch_fails("in->topkIdx", "null ids without a handle");
  rig.ids[5] = 2 * n;
  dispatch_fails("in->topkIdx[2, 1]", "expert id out of range");
  rig.ids[5] = rig.ids[4];
  dispatch_fails("chosen twice", "an expert chosen twice");
  rig.ids[5] = 2 * ((g_rank + 2 + 1) % n) + 1;
  in.topkWeights = reinterpret_cast<const float*>(reinterpret_cast<const char*>(rig.weights) + 2);
  dispatch_fails("in->topkWeights", "unaligned weights");
  out.x = nullptr;
  dispatch_fails("out->x", "null receive rows");
  out.tokensPerExpert = nullptr;
  dispatch_fails("out->tokensPerExpert", "null counts");
  out.numRows = nullptr;
  dispatch_fails("out->numRows", "null row count (token-major)");
  out.x = rig.x;  // a heap block far smaller than maxRecvRows rows
  dispatch_fails("out->x", "receive buffer too small");
  in.x = rig.rx;  // sending rows from our own receive buffer

  dispatch_fails("overlap", "receive rows over the rows we send");
  h = reinterpret_cast<sclMoeHandle_t>(&rig);
  expect_error(sclMoeDispatch(moe, &in, &out, &h, nullptr), kArg, comm, "*handle", "forged handle");

  // Combine and handles.
  expect_error(sclMoeCombine(moe, nullptr, rig.expert_out, nullptr, rig.combined, nullptr), kArg,
               comm, "handle", "null handle");
  sclMoeHandle_t good = nullptr;
  expect(sclMoeDispatch(moe, &in, &out, &good, nullptr) == sclSuccess, "a correct dispatch",
         sclGetLastError(comm));
  expect_error(sclMoeCombine(moe, good, nullptr, nullptr, rig.combined, nullptr), kArg, comm,
               "expertOut", "null expert outputs");
  expect_error(sclMoeCombine(moe, good, rig.expert_out, nullptr, nullptr, nullptr), kArg, comm,
               "out", "null combine output");
  expect_error(sclMoeCombine(moe, good, rig.expert_out, rig.weights, rig.combined, nullptr), kArg,
               comm, "topkWeights", "weights to a token-major combine");
  expect_error(sclMoeCombine(moe, good, rig.expert_out, nullptr, rig.expert_out, nullptr), kArg,
               comm, "overlap", "combining over our own published outputs");
  in.numTokens = kTokens - 1;
  sclMoeHandle_t reuse = good;
  expect_error(sclMoeDispatch(moe, &in, &out, &reuse, nullptr), kArg, comm, "in->numTokens",
               "reusing a handle with another token count");
  in = rig.in();
  expect(sclMoeHandleDestroy(good) == sclSuccess, "destroy a handle");
  expect_error(sclMoeHandleDestroy(good), kArg, nullptr, "handle", "destroy a handle twice");
  expect_error(sclMoeCombine(moe, good, rig.expert_out, nullptr, rig.combined, nullptr), kArg, comm,
               "handle", "combine with a destroyed handle");

  // Layout.
  int per_rank[64], per_expert[128];
  uint8_t in_rank[kTokens * 64];
  expect_error(sclMoeDispatchLayout(moe, rig.ids, kTokens + 1, per_rank, per_expert, in_rank), kArg,
               comm, "numTokens", "layout of too many tokens");
  rig.ids[0] = -5;
  expect_error(sclMoeDispatchLayout(moe, rig.ids, kTokens, per_rank, per_expert, in_rank), kArg,
               comm, "topkIdx[0, 0]", "layout of a bad id");
  rig.ids[0] = 2 * (g_rank % n);

  // Nothing above had an effect: correct calls line up and give the right rows.
  rig.dispatch_and_check(comm, "dispatch after the bad arguments");
  expect(sclMoeDestroy(moe) == sclSuccess, "destroy", sclGetLastError(comm));
  expect_error(sclMoeDestroy(moe), kArg, nullptr, "moe", "destroy twice");
  sclCommDestroy(comm);
  return g_failures ? 1 : 0;
}

int run_moe_mismatch() {
  sclComm_t comm = init_or_die();
  int n = 0;
  sclCommCount(comm, &n);
  Rig rig(comm, n, g_rank);
  const bool odd = g_rank == n - 1;
  sclMoeTokens_t in = rig.in();
  sclMoeRecv_t out = rig.out();

  // A config that differs on one rank.
  sclMoeConfig_t c = config(n);
  if (odd) c.hidden = 2 * kHidden;
  sclMoe_t other = nullptr;
  expect_error(sclMoeCreate(comm, &c, &other), sclInvalidUsage, comm, "different MoE plans",
               "configs differ");
  expect(other == nullptr, "a failed create leaves *moe NULL");
  rig.dispatch_and_check(comm, "dispatch after the config mismatch");
  // Row types that differ on one rank: the plans differ (not a call with other arguments).
  c = config(n);
  if (odd) c.xType = c.recvType = sclFloat32;
  expect_error(sclMoeCreate(comm, &c, &other), sclInvalidUsage, comm, "different MoE plans",
               "row types differ");
  // One rank's create refused for its arguments (a NULL output, a negative top-k, a dtype out of
  // range) still takes part in the step: the others fail with it at once, not at their
  // deadline, and name it.
  const std::string culprit = "rank " + std::to_string(n - 1) + " could not take part";
  for (int bad = 0; bad < 3; ++bad) {
    c = config(n);
    if (odd && bad == 1) c.topk = -1;
    if (odd && bad == 2) c.xType = static_cast<sclDataType_t>(77);
    const sclResult_t refused = sclMoeCreate(comm, &c, odd && bad == 0 ? nullptr : &other);
    const char* what[] = {"moe", "topk", "xType"};
    if (odd) {
      expect_error(refused, sclInvalidArgument, comm, what[bad], "a bad argument on one rank");
    } else {
      expect_error(refused, sclInvalidUsage, comm, culprit.c_str(), "another rank's bad argument");
    }
    rig.dispatch_and_check(comm, "dispatch after the refused create");
  }

  // Combines that follow different dispatches.
  sclMoeHandle_t h1 = nullptr, h2 = nullptr;
  expect(sclMoeDispatch(rig.moe, &in, &out, &h1, nullptr) == sclSuccess, "dispatch 1");
  expect(sclMoeDispatch(rig.moe, &in, &out, &h2, nullptr) == sclSuccess, "dispatch 2");
  expect_error(
      sclMoeCombine(rig.moe, odd ? h1 : h2, rig.expert_out, nullptr, rig.combined, nullptr),
      sclInvalidUsage, comm, "handle", "combines follow different handles");
  expect(sclMoeCombine(rig.moe, h2, rig.expert_out, nullptr, rig.combined, nullptr) == sclSuccess,
         "a combine afterwards", sclGetLastError(comm));

  // A dispatch, then a combine, refused for their arguments on one rank only (a NULL handle
  // pointer; weights passed to a token-major combine): that rank still takes the call's turn,
  // so the others fail the same call, naming it, and the next dispatch pairs.
  sclMoeHandle_t h5 = nullptr;
  const sclResult_t refused_dispatch =
      sclMoeDispatch(rig.moe, &in, &out, odd ? nullptr : &h5, nullptr);
  expect_error(refused_dispatch, odd ? sclInvalidArgument : sclInvalidUsage, comm,
               odd ? "handle" : culprit.c_str(), "a dispatch refused on one rank");
  rig.dispatch_and_check(comm, "dispatch after one rank's refused dispatch");
  expect(sclMoeDispatch(rig.moe, &in, &out, &h5, nullptr) == sclSuccess, "dispatch 5");
  std::vector<float> weights(size_t(kTokens) * kTopk, 1.0f);
  const sclResult_t refused_combine = sclMoeCombine(
      rig.moe, h5, rig.expert_out, odd ? weights.data() : nullptr, rig.combined, nullptr);
  expect_error(refused_combine, odd ? sclInvalidArgument : sclInvalidUsage, comm,
               odd ? "topkWeights" : culprit.c_str(), "a combine refused on one rank");
  rig.dispatch_and_check(comm, "dispatch after one rank's refused combine");
  // A dispatch that reuses h5 on every rank but one, whose call is refused: the others still
  // name that rank (its refused step's signature is no call's).
  sclMoeHandle_t h6 = h5;
  expect_error(sclMoeDispatch(rig.moe, &in, &out, odd ? nullptr : &h6, nullptr),
               odd ? sclInvalidArgument : sclInvalidUsage, comm, odd ? "handle" : culprit.c_str(),
               "a reusing dispatch refused on one rank");
  rig.dispatch_and_check(comm, "dispatch after one rank's refused reusing dispatch");
  // On a stream: the refused rank's stream has no error of its own (it heard it at the call),
  // the others' synchronisation fails.
  sclStream_t queue = nullptr;
  sclStreamCreate(&queue);
  expect_error(sclMoeCombine(rig.moe, h5, rig.expert_out, odd ? weights.data() : nullptr,
                             rig.combined, queue),
               odd ? sclInvalidArgument : sclSuccess, comm, odd ? "topkWeights" : nullptr,
               "a combine refused on one rank, queued");
  const sclResult_t queued = sclStreamSynchronize(queue);
  expect(queued == (odd || n == 1 ? sclSuccess : sclInvalidUsage),
         "the queued combine fails on the others only", sclGetLastError(comm));
  sclStreamDestroy(queue);
  rig.dispatch_and_check(comm, "dispatch after one rank's refused queued combine");
  sclMoeHandleDestroy(h5);

  // One rank reuses its handle, the others dispatch afresh.
  sclMoeHandle_t h3 = odd ? h1 : nullptr;
  const sclResult_t r = sclMoeDispatch(rig.moe, &in, &out, &h3, nullptr);
  expect_error(r, sclInvalidUsage, comm, "moe-dispatch", "reuse on one rank only");
  if (!odd) expect(h3 == nullptr, "a failed dispatch leaves *handle NULL");
  rig.dispatch_and_check(comm, "dispatch after the reuse mismatch");

  // On a stream, a combine queued behind its dispatch meets expertOut's size only when it runs:
  // one rank's block is too small, and every rank's synchronisation fails instead of hanging.
  sclStream_t stream = nullptr;
  sclStreamCreate(&stream);
  uint16_t* tiny = heap<uint16_t>(1);
  sclMoeHandle_t h4 = nullptr;
  expect(sclMoeDispatch(rig.moe, &in, &out, &h4, stream) == sclSuccess, "queue a dispatch");
  expect(h4 != nullptr, "a queued dispatch gives its handle at once");
  expect(sclMoeCombine(rig.moe, h4, odd ? tiny : rig.expert_out, nullptr, rig.combined, stream) ==
             sclSuccess,
         "queue a combine behind it");
  const sclResult_t synced = sclStreamSynchronize(stream);
  if (n > 1 || odd) {
    expect_error(synced, odd ? sclInvalidArgument : sclInvalidUsage, comm,
                 odd ? "expertOut" : "could not take part",
                 "a queued combine with too small an expertOut");
  }
  sclMoeHandleDestroy(h4);
  sclStreamDestroy(stream);
  sclMemFree(tiny);
  rig.dispatch_and_check(comm, "dispatch after the failed queued combine");
  sclMoeHandleDestroy(h1);
  sclMoeHandleDestroy(h2);
  expect(sclMoeDestroy(rig.moe) == sclSuccess, "destroy", sclGetLastError(comm));
  sclCommDestroy(comm);
  return g_failures ? 1 : 0;
}

}  // namespace fault
