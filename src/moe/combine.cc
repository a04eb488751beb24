// Combine: every rank publishes its expert outputs; every rank pulls, for each of its tokens, the
// rows its dispatch sent out, from the ranks that hold them, and sums them in fp32 in a fixed
// order (token-major: ascending destination rank; expert-major: ascending top-k slot, weighted),
// rounding once. Every run gives the same bits.
#include <vector>

#include "moe/published.h"
#include "moe/rows.h"
#include "moe/steps.h"

namespace stratacl::moe {
namespace {

// Rows this rank's expert outputs hold, which its peers may address.
size_t rows_held(const CollContext& c, const Plan& p, const Routing& routing) {
  return p.expert_major ? size_t(p.local_experts) * p.expert_rows()
                        : size_t(routing.rows_at(c.rank));
}

Status sum_token_major(CollContext& c, Region<Lines> lines, const Plan& p, const Routing& routing,
                       char* out) {
  const int o = c.rank;
  std::vector<float> acc(size_t(p.hidden));
  std::vector<char> scratch;
  std::vector<int64_t> sent(size_t(c.nranks), 0);  // our earlier tokens each rank holds rows of
  for (int t = 0; t < routing.tokens(o); ++t) {
    std::fill(acc.begin(), acc.end(), 0.0f);
    for (int d : routing.destinations(o, t)) {
      const size_t row = size_t(routing.rows_before(d, o) + sent[size_t(d)]++);
      Result<const char*> src =
          peer_row(c, d, lines.in(c.cb(d))->expert_out, row, p.out_row_bytes(), scratch);
      if (!src.ok()) return src.status();
      accumulate_row(acc.data(), *src, p.out_type, p.hidden, 1.0f);
    }
    store_row(out + size_t(t) * p.out_row_bytes(), acc.data(), p.out_type, p.hidden);
  }
  return Status::Ok();
}

Status sum_expert_major(CollContext& c, Region<Lines> lines, const Plan& p, const Routing& routing,
                        const float* weights, char* out) {
  const int o = c.rank;
  std::vector<float> acc(size_t(p.hidden));
  std::vector<char> scratch;
  std::vector<int64_t> chose(size_t(p.num_experts), 0);  // our earlier tokens that chose each
  for (int t = 0; t < routing.tokens(o); ++t) {
    std::fill(acc.begin(), acc.end(), 0.0f);
    const int64_t* ids = routing.ids(o, t);
    for (int j = 0; j < p.topk; ++j) {
      if (ids[j] < 0) continue;
      const size_t g = size_t(ids[j]);
      const int d = p.owner[g];
      const size_t pos = size_t(routing.pairs_before(int(g), o) + chose[g]++);
      const size_t row = size_t(p.local_index[g]) * p.expert_rows() + pos;
      Result<const char*> src =
          peer_row(c, d, lines.in(c.cb(d))->expert_out, row, p.out_row_bytes(), scratch);
      if (!src.ok()) return src.status();
      const float w = weights ? weights[size_t(t) * size_t(p.topk) + size_t(j)] : 1.0f;
      accumulate_row(acc.data(), *src, p.out_type, p.hidden, w);
    }
    store_row(out + size_t(t) * p.out_row_bytes(), acc.data(), p.out_type, p.hidden);
  }
  return Status::Ok();
}

}  // namespace

Status combine(CollContext& c, Region<Lines> lines, const Call& call) {
  const Plan& p = *call.plan;
  const Routing& routing = *call.handle->routing;
  Lines& mine = *lines.in(c.me());
  mine = Lines{};
  mine.plan_digest = p.digest;
  mine.handle_id = call.handle->id;
  mine.tokens = call.handle->tokens;
  StagedBlock staged;
  const size_t rows = rows_held(c, p, routing);
  Result<RemoteRef> ref =
      publish_rows(c, call.expert_out, rows * p.out_row_bytes(), p.out_row_bytes(), &staged);
  if (!ref.ok()) return ref.status();
  mine.expert_out = *ref;
  Status s = run_step(c, step_desc(c, call), [&](const std::vector<CallDesc>&) -> Status {
    SCL_TRY(agree(c, lines));
    return p.expert_major
               ? sum_expert_major(c, lines, p, routing, call.combine_weights, call.combined)
               : sum_token_major(c, lines, p, routing, call.combined);
  });
  if (is_fatal(s)) c.quarantine->keep(std::move(staged));
  return s;
}

}  // namespace stratacl::moe
