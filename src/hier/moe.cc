// MoE dispatch and combine across hosts: DeepEP's semantics and layouts, bit for bit those of one
// host (src/moe), over the world's own collectives. Within a host the receivers pull rows from
// their peers' published buffers; across hosts rows must travel as messages, so each call here is
//  - one allgather of every rank's card (status, plan digest, handle) and, for a dispatch that
//    does not reuse a handle, its expert ids: every rank then builds the same routing
//    (moe/routing.h) and checks what the step protocol's agreement checks within a host;
//  - one alltoallv of rows: a dispatch sends each destination its rows (with scales and weights)
//    in token order, a combine sends each source its expert outputs back;
//  - the placement (token-major or expert-major, quantising when asked) or the fixed-order sums,
//    as on one host.
// The alltoallv is the hierarchical one: zero-copy between the ranks of a host, messages between
// hosts. What it costs over one host: the rows are packed and placed by this rank (one copy each
// way) instead of pulled in place.
#include <algorithm>
#include <cstring>
#include <vector>

#include "hier/hierarchical.h"
#include "moe/quantize.h"
#include "moe/routing.h"
#include "reduce/reduce.h"

namespace stratacl::hier {
namespace {

using moe::Plan;
using moe::Routing;

// What every rank says of one MoE call, before any row moves.
struct Card {
  int32_t prepared = 0;  // sclSuccess, or why this rank cannot take part
  int32_t tokens = 0;
  uint64_t digest = 0;     // of its plan
  uint64_t handle_id = 0;  // of the dispatch it follows (0: none)
};

// Allgathers every rank's card (fixed size, whatever the plans: a rank on another plan fails
// the call, not the link) and checks what moe::agree checks on one host.
Status share_cards(Context& c, const moe::Call& call, const Card& mine, std::vector<Card>* all) {
  all->resize(size_t(c.world_ranks));
  SCL_TRY(allgather_bytes(c, &mine, sizeof mine, all->data()));
  const char* what = moe::call_name(call.kind);
  for (int r = 0; r < c.world_ranks; ++r) {
    const Card& theirs = (*all)[size_t(r)];
    if (theirs.prepared != sclSuccess) {
      const bool remote = theirs.prepared == sclRemoteError;
      return Errorf(remote ? sclRemoteError : sclInvalidUsage,
                    "%s across hosts: rank %d could not take part (%s); see its error", what, r,
                    sclGetErrorString(remote ? sclRemoteError : sclInvalidUsage));
    }
    if (theirs.digest != mine.digest) {
      return Errorf(sclInvalidUsage,
                    "%s across hosts: ranks %d and %d use different MoE plans (their "
                    "sclMoeConfig_t differ, or the calls are on different plans)",
                    what, c.world_rank, r);
    }
    if (theirs.handle_id != mine.handle_id) {
      return Errorf(sclInvalidUsage,
                    "%s across hosts: ranks %d and %d follow the handles of different dispatches: "
                    "every rank must pass the handle of the same dispatch",
                    what, c.world_rank, r);
    }
  }
  return Status::Ok();
}

// The world's alltoallv of bytes: `send` holds our blocks for every rank at their offsets, and
// every rank's block for us lands in `recv` (heap memory) in rank order.
Status exchange(Context& c, LocalBuffer send, const std::vector<size_t>& sendcounts, char* recv,
                const std::vector<size_t>& recvcounts) {
  std::vector<size_t> sdispls(sendcounts.size()), rdispls(recvcounts.size());
  for (size_t r = 1; r < sendcounts.size(); ++r) {
    sdispls[r] = sdispls[r - 1] + sendcounts[r - 1];
    rdispls[r] = rdispls[r - 1] + recvcounts[r - 1];
  }
  Call a;
  a.coll = Coll::kAlltoAllv;
  a.dtype = sclUint8;
  a.send = send;
  a.recv = recv;
  a.recv_kind = MemKind::kHeap;
  a.sendcounts = sendcounts.data();
  a.sdispls = sdispls.data();
  a.recvcounts = recvcounts.data();
  a.rdispls = rdispls.data();
  return alltoallv(c, a);
}

// A dispatched row on the wire: the x row, its scales (fp8 x), then k weights (0 without).
struct Record {
  size_t x, scales, weights;
  size_t bytes() const { return x + scales + weights; }
  static Record of(const Plan& p) {
    return {p.x_row_bytes(), p.x_fp8() ? p.scale_cols() * sizeof(float) : 0,
            size_t(p.topk) * sizeof(float)};
  }
};

// Every rank's ids (blocks of max_tokens x k, the first `tokens` rows used), checked, as a routing.
Result<std::shared_ptr<const Routing>> routing_of(const Context& c, const Plan& p,
                                                  const std::vector<Card>& cards,
                                                  const std::vector<char>& blocks) {
  const size_t block = size_t(p.max_tokens) * size_t(p.topk) * sizeof(int64_t);
  std::vector<std::vector<int64_t>> ids(size_t(c.world_ranks));
  for (int s = 0; s < c.world_ranks; ++s) {
    const int tokens = cards[size_t(s)].tokens;
    if (tokens < 0 || tokens > p.max_tokens) {
      return Errorf(sclRemoteError, "moe-dispatch across hosts: rank %d sent %d tokens", s, tokens);
    }
    ids[size_t(s)].assign(reinterpret_cast<const int64_t*>(blocks.data() + size_t(s) * block),
                          reinterpret_cast<const int64_t*>(blocks.data() + size_t(s) * block) +
                              size_t(tokens) * size_t(p.topk));
    Status valid = moe::check_topk(p, ids[size_t(s)].data(), tokens, "topkIdx");
    if (!valid.ok()) {
      return Status(sclRemoteError, "moe-dispatch across hosts: rank " + std::to_string(s) +
                                        " sent invalid expert ids: " + valid.message());
    }
  }
  return std::shared_ptr<const Routing>(std::make_shared<Routing>(p, std::move(ids)));
}

// Writes one received record's row as recvType at `row` of the receive buffer.
void place_row(const Plan& p, const Record& rec, const char* from, const sclMoeRecv_t& out,
               size_t row) {
  char* dst = static_cast<char*>(out.x) + row * p.recv_row_bytes();
  float* dst_scales = out.scales ? out.scales + row * p.scale_cols() : nullptr;
  if (p.x_type == p.recv_type) {
    std::memcpy(dst, from, rec.x);
    if (rec.scales && dst_scales) std::memcpy(dst_scales, from + rec.x, rec.scales);
  } else {
    moe::quantize_bf16_to_e4m3(from, p.hidden, dst, dst_scales);
  }
}

Status moe_dispatch(Context& c, const moe::Call& call) {
  const Plan& p = *call.plan;
  const int me = c.world_rank, n = c.world_ranks;
  const size_t k = size_t(p.topk);
  const moe::Handle::Made reused = call.reuse ? call.handle->made() : moe::Handle::Made{};
  // A dispatch queued on a stream may have failed there: its handle has no routing.
  const Status own =
      call.refused != sclSuccess ? Status(call.refused, "refused for its arguments")
      : call.reuse && !reused.routing
          ? Errorf(sclInvalidUsage, "the dispatch that made the reused handle failed")
          : Status::Ok();
  const Card mine{int32_t(own.code()), call.tokens, p.digest, reused.id};
  std::vector<Card> cards;
  const Status agreed = share_cards(c, call, mine, &cards);
  SCL_TRY(own);  // ours first, once the peers know
  SCL_TRY(agreed);
  std::shared_ptr<const Routing> routing = reused.routing;
  if (routing) {
    for (int r = 0; r < n; ++r) {
      if (cards[size_t(r)].tokens != routing->tokens(r)) {
        return Errorf(sclInvalidUsage,
                      "moe-dispatch across hosts: rank %d passes %d tokens to a dispatch that "
                      "reuses a handle of %d",
                      r, cards[size_t(r)].tokens, routing->tokens(r));
      }
    }
  } else {
    // The plans agree, so every rank's block of ids has one size: as many tokens as any rank
    // may pass.
    std::vector<int64_t> ids(size_t(p.max_tokens) * k, -1);
    if (call.tokens > 0) {
      std::memcpy(ids.data(), call.topk.ptr, size_t(call.tokens) * k * sizeof(int64_t));
    }
    std::vector<char> blocks(ids.size() * sizeof(int64_t) * size_t(n));
    SCL_TRY(allgather_bytes(c, ids.data(), ids.size() * sizeof(int64_t), blocks.data()));
    SCL_ASSIGN_OR_RETURN(routing, routing_of(c, p, cards, blocks));
  }

  // Our rows for each destination, in token order.
  const Record rec = Record::of(p);
  std::vector<size_t> sendcounts(size_t(n), 0), recvcounts(size_t(n), 0);
  for (int t = 0; t < call.tokens; ++t) {
    for (int d : routing->destinations(me, t)) sendcounts[size_t(d)] += rec.bytes();
  }
  for (int s = 0; s < n; ++s) {
    recvcounts[size_t(s)] =
        size_t(routing->rows_before(me, s + 1) - routing->rows_before(me, s)) * rec.bytes();
  }
  size_t total = 0;
  for (size_t b : sendcounts) total += b;
  SCL_ASSIGN_OR_RETURN(char* send, c.moe.send.get(total));
  std::vector<size_t> cursor(size_t(n), 0);
  for (int d = 1; d < n; ++d) cursor[size_t(d)] = cursor[size_t(d) - 1] + sendcounts[size_t(d) - 1];
  const char* x = call.x.ptr;
  const char* scales = call.scales.ptr;
  const auto* weights = reinterpret_cast<const float*>(call.weights.ptr);
  for (int t = 0; t < call.tokens; ++t) {
    for (int d : routing->destinations(me, t)) {
      char* r = send + cursor[size_t(d)];
      cursor[size_t(d)] += rec.bytes();
      std::memcpy(r, x + size_t(t) * rec.x, rec.x);
      if (rec.scales) std::memcpy(r + rec.x, scales + size_t(t) * rec.scales, rec.scales);
      float* w = reinterpret_cast<float*>(r + rec.x + rec.scales);
      for (size_t j = 0; j < k; ++j) w[j] = weights ? weights[size_t(t) * k + j] : 0.0f;
    }
  }
  total = 0;
  for (size_t b : recvcounts) total += b;
  SCL_ASSIGN_OR_RETURN(char* recv, c.moe.recv.get(total));
  SCL_TRY(exchange(c, LocalBuffer{send, MemKind::kHeap}, sendcounts, recv, recvcounts));

  // Place what came, source by source, token by token: the order of the rows on one host.
  const sclMoeRecv_t& out = call.out;
  std::vector<int> count(size_t(p.local_experts), 0);
  size_t row = 0;
  const char* from = recv;
  for (int s = 0; s < n; ++s) {
    for (int t = 0; t < routing->tokens(s); ++t) {
      const std::span<const int> dests = routing->destinations(s, t);
      if (!std::binary_search(dests.begin(), dests.end(), me)) continue;
      const int64_t* tid = routing->ids(s, t);
      const auto* w = reinterpret_cast<const float*>(from + rec.x + rec.scales);
      for (size_t j = 0; j < k; ++j) {
        const bool here = tid[j] >= 0 && p.owner[size_t(tid[j])] == me;
        const int e = here ? p.local_index[size_t(tid[j])] : -1;
        if (p.expert_major) {
          if (here)
            place_row(p, rec, from, out, size_t(e) * p.expert_rows() + size_t(count[size_t(e)]++));
          continue;
        }
        if (here) ++count[size_t(e)];
        if (out.topkIdx) out.topkIdx[row * k + j] = e;
        if (out.topkWeights) out.topkWeights[row * k + j] = here ? w[j] : 0.0f;
      }
      if (!p.expert_major) place_row(p, rec, from, out, row++);
      from += rec.bytes();
    }
  }
  std::copy(count.begin(), count.end(), out.tokensPerExpert);
  if (!p.expert_major && out.numRows) *out.numRows = int(row);
  if (!call.reuse) call.handle->set_made(++c.moe.dispatches, routing);
  return Status::Ok();
}

Status moe_combine(Context& c, const moe::Call& call) {
  const Plan& p = *call.plan;
  const int me = c.world_rank, n = c.world_ranks;
  const moe::Handle::Made made = call.handle->made();
  const Routing* routing = made.routing.get();
  Status ready = call.refused != sclSuccess ? Status(call.refused, "refused for its arguments")
                 : routing
                     ? moe::check_combine_buffers(p, *routing, call.expert_out.ptr, call.combined,
                                                  size_t(routing->tokens(me)) * p.out_row_bytes())
                     : Errorf(sclInvalidUsage,
                              "the dispatch that made this handle failed; its combine cannot run");
  const Card mine{int32_t(ready.code()), call.handle->tokens, p.digest, made.id};
  std::vector<Card> cards;
  const Status agreed = share_cards(c, call, mine, &cards);
  SCL_TRY(ready);  // ours first, once the peers know
  SCL_TRY(agreed);

  // Every row we hold goes back to its token's rank, in that rank's token order (then top-k
  // slot order, expert-major): its terms, in the order it sums them.
  const size_t row = p.out_row_bytes();
  LocalBuffer held = call.expert_out;
  std::vector<size_t> sendcounts(size_t(n), 0), recvcounts(size_t(n), 0);
  if (!p.expert_major) {
    // Our rows are already ordered by source, then token: send them where they lie.
    for (int s = 0; s < n; ++s) {
      sendcounts[size_t(s)] =
          size_t(routing->rows_before(me, s + 1) - routing->rows_before(me, s)) * row;
    }
    for (int t = 0; t < routing->tokens(me); ++t) {
      for (int d : routing->destinations(me, t)) recvcounts[size_t(d)] += row;
    }
  } else {
    size_t rows = 0;  // the pairs whose expert is ours
    for (int g = 0; g < p.num_experts; ++g) {
      if (p.owner[size_t(g)] == me) rows += size_t(routing->pairs_before(g, n));
    }
    SCL_ASSIGN_OR_RETURN(char* send, c.moe.send.get(rows * row));
    char* next = send;
    std::vector<int64_t> chose(size_t(p.num_experts), 0);
    for (int s = 0; s < n; ++s) {
      std::fill(chose.begin(), chose.end(), 0);
      for (int t = 0; t < routing->tokens(s); ++t) {
        const int64_t* ids = routing->ids(s, t);
        for (int j = 0; j < p.topk; ++j) {
          if (ids[j] < 0) continue;
          const size_t g = size_t(ids[j]);
          const int64_t pos = routing->pairs_before(int(g), s) + chose[g]++;
          if (s == me) recvcounts[size_t(p.owner[g])] += row;
          if (p.owner[g] != me) continue;
          const size_t at = (size_t(p.local_index[g]) * p.expert_rows() + size_t(pos)) * row;
          std::memcpy(next, held.ptr + at, row);
          next += row;
          sendcounts[size_t(s)] += row;
        }
      }
    }
    held = LocalBuffer{send, MemKind::kHeap};
  }
  size_t total = 0;
  for (size_t b : recvcounts) total += b;
  SCL_ASSIGN_OR_RETURN(char* recv, c.moe.recv.get(total));
  SCL_TRY(exchange(c, held, sendcounts, recv, recvcounts));

  // Sum each token's terms in the order of one host: ascending destination (token-major),
  // ascending top-k slot, weighted (expert-major). A token without terms gets a zero row.
  std::vector<size_t> cursor(size_t(n), 0);
  for (int d = 1; d < n; ++d) cursor[size_t(d)] = cursor[size_t(d) - 1] + recvcounts[size_t(d) - 1];
  std::vector<const void*> terms;
  std::vector<float> w;
  const bool weighted = p.expert_major && call.combine_weights;
  for (int t = 0; t < routing->tokens(me); ++t) {
    terms.clear(), w.clear();
    auto take = [&](int d, float weight) {
      terms.push_back(recv + cursor[size_t(d)]);
      cursor[size_t(d)] += row;
      w.push_back(weight);
    };
    if (!p.expert_major) {
      for (int d : routing->destinations(me, t)) take(d, 1.0f);
    } else {
      const int64_t* ids = routing->ids(me, t);
      for (int j = 0; j < p.topk; ++j) {
        if (ids[j] < 0) continue;
        take(p.owner[size_t(ids[j])],
             weighted ? call.combine_weights[size_t(t) * size_t(p.topk) + size_t(j)] : 1.0f);
      }
    }
    char* dst = call.combined + size_t(t) * row;
    if (terms.empty()) {
      std::memset(dst, 0, row);
    } else if (weighted) {
      reduce::weighted_sum_n(dst, terms.data(), w.data(), int(terms.size()), size_t(p.hidden),
                             p.out_type);
    } else {
      reduce::reduce_n(dst, terms.data(), int(terms.size()), size_t(p.hidden), p.out_type, sclSum,
                       1);
    }
  }
  return Status::Ok();
}

}  // namespace

Status run_moe(Context& c, const moe::Call& call) {
  c.rail.begin(uint32_t(call.kind == moe::Kind::kDispatch  ? Coll::kMoeDispatch
                        : call.kind == moe::Kind::kCombine ? Coll::kMoeCombine
                                                           : Coll::kMoeCreate),
               0);  // a plan that differs is the cards' to report: the call fails, not the link
  switch (call.kind) {
    case moe::Kind::kDispatch:
      return moe_dispatch(c, call);
    case moe::Kind::kCombine:
      return moe_combine(c, call);
    case moe::Kind::kCreate:
      break;
  }
  // Create: only the agreement.
  std::vector<Card> cards;
  return share_cards(c, call, Card{call.refused, 0, call.plan->digest, 0}, &cards);
}

}  // namespace stratacl::hier
