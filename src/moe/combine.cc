// Combine: every rank publishes its expert outputs; every rank pulls, for each of its tokens, the
// rows its dispatch sent out, from the ranks that hold them, and sums them in fp32 in a fixed
// order (token-major: ascending destination rank; expert-major: ascending top-k slot, weighted),
// rounding once, with the reduction kernels (reduce/reduce.h). Every run gives the same bits.
#include <algorithm>
#include <cstring>
#include <vector>

#include "fabric/heap.h"
#include "moe/published.h"
#include "moe/steps.h"
#include "reduce/reduce.h"

namespace stratacl::moe {
namespace {

// This rank's expert outputs, for its peers. Token-major: block = row. Expert-major: block e =
// local expert e's rows, of which only those routed to it are read; foreign memory stages just
// those, packed (*packed; see packed_starts).
Result<RemoteRef> publish_outputs(const CollContext& c, const Plan& p, const Routing& routing,
                                  LocalBuffer expert_out, StagedBlock* staged, bool* packed) {
  const size_t row = p.out_row_bytes();
  *packed = false;
  if (!p.expert_major)
    return publish_rows(c, expert_out, size_t(routing.rows_at(c.rank)) * row, row, staged);
  std::vector<size_t> used;
  for (int g = 0; g < p.num_experts; ++g) {  // ascending global id: local expert order
    if (p.owner[size_t(g)] == c.rank)
      used.push_back(size_t(routing.pairs_before(g, c.nranks)) * row);
  }
  return c.stager.publish_prefixes(
      Outgoing{expert_out, p.expert_rows() * row, p.local_experts, row}, used, staged, packed);
}

// Where each expert's rows start in its owner's packed outputs: the rows of the owner's experts
// before it (local ids follow ascending global ids).
std::vector<size_t> packed_starts(const Plan& p, const Routing& routing, int nranks) {
  std::vector<size_t> start(size_t(p.num_experts)), next(size_t(nranks), 0);
  for (int g = 0; g < p.num_experts; ++g) {
    const int d = p.owner[size_t(g)];
    start[size_t(g)] = next[size_t(d)];
    next[size_t(d)] += size_t(routing.pairs_before(g, nranks));
  }
  return start;
}

// The rows every token of ours sums, in order: token t's terms are terms[first[t], first[t+1]).
// Worked out first, in token order (a row's position depends on the tokens before it), so that
// the sums can then be cut over the workers by bytes.
struct Term {
  int peer;
  const RemoteRef* ref;  // in the peer's published lines
  size_t block, offset;
  float weight;
};
struct TermList {
  std::vector<Term> terms;
  std::vector<uint64_t> first{0};
  void end_token() { first.push_back(terms.size()); }
};

TermList token_major_terms(const CollContext& c, Region<Lines> lines, const Routing& routing) {
  const int o = c.rank;
  TermList list;
  std::vector<int64_t> sent(size_t(c.nranks), 0);  // our earlier tokens each rank holds rows of
  for (int t = 0; t < routing.tokens(o); ++t) {
    for (int d : routing.destinations(o, t)) {
      const size_t row = size_t(routing.rows_before(d, o) + sent[size_t(d)]++);
      list.terms.push_back(Term{d, &lines.in(c.cb(d))->expert_out, row, 0, 1.0f});
    }
    list.end_token();
  }
  return list;
}

TermList expert_major_terms(const CollContext& c, Region<Lines> lines, const Plan& p,
                            const Routing& routing, const float* weights) {
  const int o = c.rank;
  TermList list;
  const std::vector<size_t> start = packed_starts(p, routing, c.nranks);
  std::vector<int64_t> chose(size_t(p.num_experts), 0);  // our earlier tokens that chose each
  const size_t row = p.out_row_bytes();
  for (int t = 0; t < routing.tokens(o); ++t) {
    const int64_t* ids = routing.ids(o, t);
    for (int j = 0; j < p.topk; ++j) {
      if (ids[j] < 0) continue;
      const size_t g = size_t(ids[j]);
      const int d = p.owner[g];
      const size_t pos = size_t(routing.pairs_before(int(g), o) + chose[g]++);
      const float w = weights ? weights[size_t(t) * size_t(p.topk) + size_t(j)] : 1.0f;
      const Lines& theirs = *lines.in(c.cb(d));
      // In place: block = local expert; packed: one block, the expert's rows from its start.
      const size_t block = theirs.packed ? 0 : size_t(p.local_index[g]);
      const size_t at = theirs.packed ? start[g] + pos : pos;
      list.terms.push_back(Term{d, &theirs.expert_out, block, at * row, w});
    }
    list.end_token();
  }
  return list;
}

// Sums every token's terms into its row of `out` (a zero row when it has none), in term order,
// weighted or not; the tokens are cut over the workers by the bytes they read.
Status sum_terms(CollContext& c, const Plan& p, const TermList& list, bool weighted, char* out) {
  const size_t row = p.out_row_bytes();
  std::vector<uint64_t> bytes(list.first.size());
  for (size_t t = 0; t < bytes.size(); ++t) bytes[t] = (list.first[t] + t) * row;  // + the write
  return c.exec->split_weighted(bytes, [&](int, Range tokens) -> Status {
    size_t most = 0;
    for (size_t t = tokens.begin; t < tokens.end; ++t)
      most = std::max<size_t>(most, list.first[t + 1] - list.first[t]);
    std::vector<std::vector<char>> scratch(most);
    std::vector<const void*> rows(most);
    std::vector<float> w(most);
    for (size_t t = tokens.begin; t < tokens.end; ++t) {
      const size_t a = list.first[t], n = list.first[t + 1] - a;
      for (size_t i = 0; i < n; ++i) {
        const Term& term = list.terms[a + i];
        SCL_ASSIGN_OR_RETURN(
            rows[i], peer_bytes(c, term.peer, *term.ref, term.block, term.offset, row, scratch[i]));
        w[i] = term.weight;
      }
      char* dst = out + t * row;
      if (n == 0) {
        std::memset(dst, 0, row);
      } else if (weighted) {
        reduce::weighted_sum_n(dst, rows.data(), w.data(), int(n), size_t(p.hidden), p.out_type);
      } else {
        reduce::reduce_n(dst, rows.data(), int(n), size_t(p.hidden), p.out_type, sclSum, 1);
      }
    }
    return Status::Ok();
  });
}

// Bytes of expertOut that peers address: token-major the rows received, expert-major the whole
// documented shape [E_local, R*T_max, H].
size_t held_bytes(const Plan& p, const Routing& routing) {
  const size_t rows =
      p.expert_major ? size_t(p.local_experts) * p.expert_rows() : size_t(routing.rows_at(p.rank));
  return rows * p.out_row_bytes();
}

}  // namespace

Status check_combine_buffers(const Plan& p, const Routing& routing, const void* expert_out,
                             const void* out, size_t out_bytes) {
  const size_t held = held_bytes(p, routing);
  if (held == 0) return Status::Ok();
  if (!expert_out) {
    return Errorf(sclInvalidArgument, "expertOut: NULL, but this rank's dispatch received %zu rows",
                  held / p.out_row_bytes());
  }
  if (const Heap* h = existing_heap(); h && h->contains(expert_out, 1)) {
    const uint64_t left = h->bytes_to_allocation_end(expert_out);
    if (left < held) {
      return Errorf(sclInvalidArgument,
                    "expertOut: %p holds %llu bytes of its sclMemAlloc block, but the %zu rows "
                    "this rank's dispatch received need %zu",
                    expert_out, (unsigned long long)left, held / p.out_row_bytes(), held);
    }
  }
  const auto a = reinterpret_cast<uintptr_t>(expert_out), b = reinterpret_cast<uintptr_t>(out);
  if (out_bytes > 0 && a < b + out_bytes && b < a + held) {
    return Errorf(sclInvalidArgument,
                  "out [%p, +%zu) overlaps expertOut [%p, +%zu), which peers read during the call",
                  out, out_bytes, expert_out, held);
  }
  return Status::Ok();
}

Status combine(CollContext& c, Region<Lines> lines, const Call& call) {
  const Plan& p = *call.plan;
  const Handle::Made made = call.handle->made();
  const Routing* routing = made.routing.get();
  Lines& mine = *lines.in(c.me());
  mine = Lines{};
  mine.plan_digest = p.digest;
  mine.handle_id = made.id;
  mine.tokens = call.handle->tokens;
  // What only now can be known: whether the dispatch behind the handle succeeded (it may have
  // been queued on a stream), and the sizes its routing gives the buffers. A failure publishes
  // nothing but its status, and fails in the step, so that every rank fails together instead of
  // reading what is not there, or waiting.
  Status ready = call.refused != sclSuccess ? Status(call.refused, "refused for its arguments")
                 : routing
                     ? check_combine_buffers(p, *routing, call.expert_out.ptr, call.combined,
                                             size_t(routing->tokens(c.rank)) * p.out_row_bytes())
                     : Errorf(sclInvalidUsage,
                              "the dispatch that made this handle failed; its combine cannot run");
  StagedBlock& staged = call.staging->expert_out;
  if (ready.ok()) {
    bool packed = false;
    Result<RemoteRef> ref = publish_outputs(c, p, *routing, call.expert_out, &staged, &packed);
    if (ref.ok()) {
      mine.expert_out = *ref;
      mine.packed = packed;
    } else {
      ready = ref.status();
    }
  }
  mine.prepared = ready.code();
  Status s = run_step(c, step_desc(c, call), [&](const std::vector<CallDesc>&) -> Status {
    if (!ready.ok()) return Status(ready.code(), c.where() + ": " + ready.message());
    SCL_TRY(agree(c, lines));
    const TermList terms = p.expert_major
                               ? expert_major_terms(c, lines, p, *routing, call.combine_weights)
                               : token_major_terms(c, lines, *routing);
    return sum_terms(c, p, terms, p.expert_major && call.combine_weights, call.combined);
  });
  if (is_fatal(s)) c.quarantine->keep(std::move(staged));
  return s;
}

}  // namespace stratacl::moe
