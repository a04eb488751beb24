// Dispatch: every rank publishes its rows, scales, expert ids and weights; every receiver reads all
// ranks' ids, builds the routing (or reuses a handle's), and pulls the rows routed to it straight
// into its receive buffer, in source-rank then source-token order, quantising in flight when asked.
#include <algorithm>
#include <cstring>
#include <vector>

#include "exec/copy.h"
#include "moe/published.h"
#include "moe/quantize.h"
#include "moe/steps.h"

namespace stratacl::moe {
namespace {

// Every rank's expert ids, read from their published arrays and checked (a peer's ids were checked
// by its own API; invalid ones here mean a corrupt peer).
Result<std::shared_ptr<const Routing>> gather_routing(CollContext& c, Region<Lines> lines,
                                                      const Plan& p) {
  std::vector<std::vector<int64_t>> ids(size_t(c.nranks));
  const size_t row_bytes = size_t(p.topk) * sizeof(int64_t);
  for (int s = 0; s < c.nranks; ++s) {
    const Lines theirs = *lines.in(c.cb(s));
    if (theirs.tokens < 0 || theirs.tokens > p.max_tokens) {
      return Errorf(sclRemoteError, "%s: rank %d published %d tokens (at most %d)",
                    c.where().c_str(), s, theirs.tokens, p.max_tokens);
    }
    ids[size_t(s)].resize(size_t(theirs.tokens) * size_t(p.topk));
    SCL_TRY(c.read_block(s, theirs.topk, 0, 0, size_t(theirs.tokens) * row_bytes,
                         reinterpret_cast<char*>(ids[size_t(s)].data())));
    Status valid = check_topk(p, ids[size_t(s)].data(), theirs.tokens, "topkIdx");
    if (!valid.ok()) {
      return Status(sclRemoteError, c.where() + ": rank " + std::to_string(s) +
                                        " published invalid expert ids: " + valid.message());
    }
  }
  return std::shared_ptr<const Routing>(std::make_shared<Routing>(p, std::move(ids)));
}

// One source's published arrays, opened for pulling.
struct Source {
  PeerRows x, scales, weights;
};

Result<Source> open_source(CollContext& c, const Lines& from, const Plan& p, int s, int tokens) {
  Source src;
  const size_t t = size_t(tokens);
  SCL_ASSIGN_OR_RETURN(src.x, PeerRows::open(c, s, from.x, t, p.x_row_bytes()));
  if (p.x_fp8()) {
    SCL_ASSIGN_OR_RETURN(src.scales,
                         PeerRows::open(c, s, from.scales, t, p.scale_cols() * sizeof(float)));
  }
  SCL_ASSIGN_OR_RETURN(src.weights,
                       PeerRows::open(c, s, from.weights, t, size_t(p.topk) * sizeof(float)));
  return src;
}

// Writes row t of `src` into `dst` (and its scales into `dst_scales`), as recvType.
Status pull_row(const Plan& p, const Source& src, int t, char* dst, float* dst_scales, bool stream,
                std::vector<char>& scratch) {
  if (p.x_type == p.recv_type) {
    SCL_TRY(src.x.copy(size_t(t), dst, stream));
    if (p.x_fp8()) SCL_TRY(src.scales.copy(size_t(t), dst_scales, false));
    return Status::Ok();
  }
  SCL_ASSIGN_OR_RETURN(const char* row, src.x.row(size_t(t), scratch));
  quantize_bf16_to_e4m3(row, p.hidden, dst, dst_scales);
  return Status::Ok();
}

// One row to pull: source rank s's token t, into receive row `row`.
struct Pull {
  int s, t;
  size_t row;
};

// Pulls every row of `pulls`, cut over the workers (rows weigh the same). `extra(pull, scratch)`
// writes what else belongs to the row (token-major: its expert ids and weights).
template <typename Extra>
Status pull_rows(CollContext& c, const Plan& p, const std::vector<Source>& sources,
                 const std::vector<Pull>& pulls, const sclMoeRecv_t& out, Extra&& extra) {
  const size_t row_bytes = p.recv_row_bytes();
  const bool stream = streaming_pays(pulls.size() * row_bytes);
  const int parts = c.exec->parts_for(pulls.size() * row_bytes);
  // Rows in place go to the copy engines, when there are any, while the workers quantise or
  // write ids and weights; all of them land before the step ends.
  DrainOnExit drained(*c.exec);
  return c.exec->split_items(parts, pulls.size(), [&](int, Range mine) -> Status {
    std::vector<char> scratch;
    for (size_t i = mine.begin; i < mine.end; ++i) {
      const Pull& u = pulls[i];
      char* dst = static_cast<char*>(out.x) + u.row * row_bytes;
      float* dst_scales = out.scales ? out.scales + u.row * p.scale_cols() : nullptr;
      SCL_TRY(pull_row(p, sources[size_t(u.s)], u.t, dst, dst_scales, stream, scratch));
      SCL_TRY(extra(u, scratch));
    }
    return Status::Ok();
  });
}

Result<std::vector<Source>> open_sources(CollContext& c, Region<Lines> lines, const Plan& p,
                                         const Routing& routing) {
  std::vector<Source> sources;
  for (int s = 0; s < c.nranks; ++s) {
    SCL_ASSIGN_OR_RETURN(Source src, open_source(c, *lines.in(c.cb(s)), p, s, routing.tokens(s)));
    sources.push_back(src);
  }
  return sources;
}

// Token-major: one row per (s, t) with an expert here, ordered by s then t.
Status pull_token_major(CollContext& c, Region<Lines> lines, const Plan& p, const Routing& routing,
                        const sclMoeRecv_t& out) {
  const size_t k = size_t(p.topk);
  SCL_ASSIGN_OR_RETURN(std::vector<Source> sources, open_sources(c, lines, p, routing));
  std::vector<Pull> pulls;
  std::fill_n(out.tokensPerExpert, p.local_experts, 0);
  for (int s = 0; s < c.nranks; ++s) {
    for (int t = 0; t < routing.tokens(s); ++t) {
      const std::span<const int> dests = routing.destinations(s, t);
      if (!std::binary_search(dests.begin(), dests.end(), c.rank)) continue;
      const int64_t* ids = routing.ids(s, t);
      for (size_t j = 0; j < k; ++j)
        if (ids[j] >= 0 && p.owner[size_t(ids[j])] == c.rank)
          ++out.tokensPerExpert[p.local_index[size_t(ids[j])]];
      pulls.push_back(Pull{s, t, pulls.size()});
    }
  }
  if (out.numRows) *out.numRows = int(pulls.size());
  // A row's expert ids (local, -1 elsewhere) and weights (0 elsewhere).
  auto ids_and_weights = [&](const Pull& u, std::vector<char>& scratch) -> Status {
    const PeerRows& from = sources[size_t(u.s)].weights;
    const float* w = nullptr;
    if (!from.empty()) {
      SCL_ASSIGN_OR_RETURN(const char* row, from.row(size_t(u.t), scratch));
      w = reinterpret_cast<const float*>(row);
    }
    const int64_t* ids = routing.ids(u.s, u.t);
    for (size_t j = 0; j < k; ++j) {
      const bool here = ids[j] >= 0 && p.owner[size_t(ids[j])] == c.rank;
      if (out.topkIdx) out.topkIdx[u.row * k + j] = here ? p.local_index[size_t(ids[j])] : -1;
      if (out.topkWeights) out.topkWeights[u.row * k + j] = here && w ? w[j] : 0.0f;
    }
    return Status::Ok();
  };
  return pull_rows(c, p, sources, pulls, out, ids_and_weights);
}

// Expert-major: local expert e's rows are the (s, t) pairs that chose it, packed from row 0.
Status pull_expert_major(CollContext& c, Region<Lines> lines, const Plan& p, const Routing& routing,
                         const sclMoeRecv_t& out) {
  SCL_ASSIGN_OR_RETURN(std::vector<Source> sources, open_sources(c, lines, p, routing));
  std::vector<Pull> pulls;
  std::vector<int> count(size_t(p.local_experts), 0);
  for (int s = 0; s < c.nranks; ++s) {
    for (int t = 0; t < routing.tokens(s); ++t) {
      const int64_t* ids = routing.ids(s, t);
      for (int j = 0; j < p.topk; ++j) {
        if (ids[j] < 0 || p.owner[size_t(ids[j])] != c.rank) continue;
        const int e = p.local_index[size_t(ids[j])];
        pulls.push_back(Pull{s, t, size_t(e) * p.expert_rows() + size_t(count[size_t(e)]++)});
      }
    }
  }
  std::copy(count.begin(), count.end(), out.tokensPerExpert);
  return pull_rows(c, p, sources, pulls, out,
                   [](const Pull&, std::vector<char>&) { return Status::Ok(); });
}

}  // namespace

Status dispatch(CollContext& c, Region<Lines> lines, const Call& call) {
  const Plan& p = *call.plan;
  const size_t tokens = size_t(call.tokens), k = size_t(p.topk);
  Lines& mine = *lines.in(c.me());
  mine = Lines{};
  mine.plan_digest = p.digest;
  const Handle::Made reused = call.reuse ? call.handle->made() : Handle::Made{};
  mine.handle_id = reused.id;
  mine.tokens = call.tokens;
  // What peers read of ours; foreign memory is staged in the plan's blocks. Whatever keeps this
  // rank from taking part is published as its status and reported in the step, so that every
  // rank fails together instead of reading what is not there, or waiting.
  Staging& st = *call.staging;
  auto publish = [&](LocalBuffer buf, size_t row_bytes, StagedBlock* block, RemoteRef* ref) {
    SCL_ASSIGN_OR_RETURN(*ref, publish_rows(c, buf, tokens * row_bytes, row_bytes, block));
    return Status::Ok();
  };
  auto prepare = [&]() -> Status {
    if (call.refused != sclSuccess) return Status(call.refused, "refused for its arguments");
    if (call.reuse && !reused.routing) {  // its dispatch was queued on a stream and failed there
      return Errorf(sclInvalidUsage, "the dispatch that made the reused handle failed");
    }
    SCL_TRY(publish(call.x, p.x_row_bytes(), &st.x, &mine.x));
    if (p.x_fp8())
      SCL_TRY(publish(call.scales, p.scale_cols() * sizeof(float), &st.scales, &mine.scales));
    if (!call.reuse) SCL_TRY(publish(call.topk, k * sizeof(int64_t), &st.topk, &mine.topk));
    if (call.weights.ptr)
      SCL_TRY(publish(call.weights, k * sizeof(float), &st.weights, &mine.weights));
    return Status::Ok();
  };
  const Status prepared = prepare();
  mine.prepared = prepared.code();

  std::shared_ptr<const Routing> routing = reused.routing;
  Status s = run_step(c, step_desc(c, call), [&](const std::vector<CallDesc>&) -> Status {
    if (!prepared.ok()) return Status(prepared.code(), c.where() + ": " + prepared.message());
    SCL_TRY(agree(c, lines));
    if (routing) {
      for (int r = 0; r < c.nranks; ++r) {
        if (lines.in(c.cb(r))->tokens != routing->tokens(r)) {
          return Errorf(sclInvalidUsage,
                        "%s: rank %d passes %d tokens to a dispatch that reuses a handle of %d",
                        c.where().c_str(), r, lines.in(c.cb(r))->tokens, routing->tokens(r));
        }
      }
    } else {
      SCL_ASSIGN_OR_RETURN(routing, gather_routing(c, lines, p));
    }
    return p.expert_major ? pull_expert_major(c, lines, p, *routing, call.out)
                          : pull_token_major(c, lines, p, *routing, call.out);
  });
  if (is_fatal(s)) {  // a peer may still be reading them
    for (StagedBlock* b : {&st.x, &st.scales, &st.topk, &st.weights})
      c.quarantine->keep(std::move(*b));
  }
  if (s.ok() && !call.reuse) call.handle->set_made(c.seq, routing);
  return s;
}

}  // namespace stratacl::moe
