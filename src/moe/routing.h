// The routing of one dispatch as every rank sees it: every rank's top-k expert ids, and what
// follows from them, so that any rank can place any (source rank, source token) row at any
// destination in both layouts without exchanging a single count:
//  - token-major: the row of (s, t) at rank d is rows_before(d, s) plus the number of s's earlier
//    tokens that go to d;
//  - expert-major: the position of (s, t) in expert g's rows is pairs_before(g, s) plus the
//    number of s's earlier tokens that chose g.
// Pure functions of the ids: unit-tested without processes. A handle owns one (immutable).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/status.h"
#include "moe/plan.h"

namespace stratacl::moe {

// Checks one rank's ids: each in [-1, E), a token's valid ids distinct. `who` names the input in
// messages ("topkIdx" for ours, "rank 2's topkIdx" for a peer's).
Status check_topk(const Plan& plan, const int64_t* topk, int tokens, const char* who);

class Routing {
 public:
  // topk[s]: rank s's ids, [tokens(s), k], already checked.
  Routing(const Plan& plan, std::vector<std::vector<int64_t>> topk);

  int nranks() const { return int(topk_.size()); }
  int tokens(int s) const { return int(topk_[size_t(s)].size() / size_t(k_)); }
  const int64_t* ids(int s, int t) const { return topk_[size_t(s)].data() + size_t(t) * k_; }
  // The ranks token (s, t) goes to, ascending, each once.
  std::span<const int> destinations(int s, int t) const;
  // Rows at rank d that come from sources before s (token-major).
  int64_t rows_before(int d, int s) const { return rows_before_[size_t(d) * (nranks() + 1) + s]; }
  // Rows rank d receives in all (token-major).
  int64_t rows_at(int d) const { return rows_before(d, nranks()); }
  // Pairs (s', t) with s' < s that chose expert g (expert-major).
  int64_t pairs_before(int g, int s) const { return pairs_before_[size_t(g) * (nranks() + 1) + s]; }

 private:
  int k_;
  std::vector<std::vector<int64_t>> topk_;
  std::vector<int> dest_;                     // destinations of every token, back to back
  std::vector<std::vector<size_t>> dest_at_;  // per source: token t's first entry in dest_
  std::vector<int64_t> rows_before_;          // [d][s], s in [0, R]
  std::vector<int64_t> pairs_before_;         // [g][s], s in [0, R]
};

}  // namespace stratacl::moe
