#include "moe/routing.h"

#include <algorithm>

namespace stratacl::moe {

Status check_topk(const Plan& plan, const int64_t* topk, int tokens, const char* who) {
  const size_t k = size_t(plan.topk);
  for (int t = 0; t < tokens; ++t) {
    const int64_t* ids = topk + size_t(t) * k;
    for (size_t j = 0; j < k; ++j) {
      if (ids[j] < -1 || ids[j] >= plan.num_experts) {
        return Errorf(sclInvalidArgument, "%s[%d, %zu]: %lld is not an expert of [0, %d) or -1",
                      who, t, j, (long long)ids[j], plan.num_experts);
      }
      for (size_t i = 0; i < j; ++i) {
        if (ids[j] >= 0 && ids[i] == ids[j]) {
          return Errorf(sclInvalidArgument, "%s[%d]: expert %lld is chosen twice", who, t,
                        (long long)ids[j]);
        }
      }
    }
  }
  return Status::Ok();
}

Routing::Routing(const Plan& plan, std::vector<std::vector<int64_t>> topk)
    : k_(plan.topk), topk_(std::move(topk)) {
  const int n = nranks();
  const size_t stride = size_t(n) + 1;
  rows_before_.assign(size_t(n) * stride, 0);
  pairs_before_.assign(size_t(plan.num_experts) * stride, 0);
  dest_at_.resize(size_t(n));
  std::vector<int> mine;
  for (int s = 0; s < n; ++s) {
    // Columns s + 1 start from column s: prefix sums over sources, built as we go.
    for (int d = 0; d < n; ++d) rows_before_[size_t(d) * stride + s + 1] = rows_before(d, s);
    for (int g = 0; g < plan.num_experts; ++g)
      pairs_before_[size_t(g) * stride + s + 1] = pairs_before(g, s);
    const int count = tokens(s);
    dest_at_[size_t(s)].resize(size_t(count) + 1);
    for (int t = 0; t < count; ++t) {
      dest_at_[size_t(s)][size_t(t)] = dest_.size();
      mine.clear();
      const int64_t* id = ids(s, t);
      for (int j = 0; j < k_; ++j) {
        if (id[j] < 0) continue;
        ++pairs_before_[size_t(id[j]) * stride + s + 1];
        mine.push_back(plan.owner[size_t(id[j])]);
      }
      std::sort(mine.begin(), mine.end());
      mine.erase(std::unique(mine.begin(), mine.end()), mine.end());
      for (int d : mine) {
        dest_.push_back(d);
        ++rows_before_[size_t(d) * stride + s + 1];
      }
    }
    dest_at_[size_t(s)][size_t(count)] = dest_.size();
  }
}

std::span<const int> Routing::destinations(int s, int t) const {
  const std::vector<size_t>& at = dest_at_[size_t(s)];
  return std::span<const int>(dest_.data() + at[size_t(t)], at[size_t(t) + 1] - at[size_t(t)]);
}

}  // namespace stratacl::moe
