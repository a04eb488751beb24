#include "measure.h"

#include <chrono>
#include <cstdio>
#include <cstring>
#include <optional>

#include "core/dtype.h"

namespace moe_workload {
namespace {

double now_us() {
  return std::chrono::duration<double, std::micro>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// Counts differing elements of `elem` bytes, noting the first.
uint64_t diff(const char* region, const void* got, const void* want, size_t count, size_t elem,
              std::string* first) {
  uint64_t wrong = 0;
  for (size_t i = 0; i < count; ++i) {
    const char* g = static_cast<const char*>(got) + i * elem;
    const char* w = static_cast<const char*>(want) + i * elem;
    if (std::memcmp(g, w, elem) == 0) continue;
    if (wrong++ == 0 && first && first->empty())
      *first = std::string(region) + "[" + std::to_string(i) + "]";
  }
  return wrong;
}

uint64_t valid_pairs(const Workload& work) {
  uint64_t pairs = 0;
  for (int r = 0; r < work.shape().nranks; ++r)
    for (int64_t id : work.ids(r)) pairs += id >= 0;
  return pairs;
}

}  // namespace

Buffers::Buffers(const Workload& work, bool weights, Alloc alloc, Release release)
    : work_(work), weights_(weights), release_(std::move(release)), alloc_(std::move(alloc)) {
  const Shape& s = work.shape();
  const size_t T = size_t(work.tokens(s.rank)), k = size_t(s.topk), rows = s.max_recv_rows();
  x_ = take(T * s.x_row_bytes());
  scales_ = take(T * s.scale_cols() * 4);
  ids_ = take(T * k * 8);
  topk_weights_ = take(T * k * 4);
  rx_ = take(rows * s.recv_row_bytes());
  rscales_ = take(rows * s.scale_cols() * 4);
  rids_ = take(s.expert_major ? 0 : rows * k * 8);
  rweights_ = take(s.expert_major ? 0 : rows * k * 4);
  per_expert_ = take(size_t(s.local_experts(s.rank)) * 4);
  rows_ = take(4);
  expert_out_ = take(rows * s.out_row_bytes());
  combined_ = take(T * s.out_row_bytes());
  work.fill_x(s.rank, x_, static_cast<float*>(scales_));
  // Empty vectors may hold null, which memcpy must not see even for 0 bytes.
  if (T > 0) {
    std::memcpy(ids_, work.ids(s.rank).data(), T * k * 8);
    std::memcpy(topk_weights_, work.weights(s.rank).data(), T * k * 4);
  }
  const std::vector<char> out = work.expert_out(s.rank, kExpertSalt);
  if (!out.empty()) std::memcpy(expert_out_, out.data(), out.size());
  // Touch what calls write, so page faults stay out of the timings.
  std::memset(rx_, 0, rows * s.recv_row_bytes());
  std::memset(rscales_, 0, rows * s.scale_cols() * 4);
  if (!s.expert_major) {
    std::memset(rids_, 0, rows * k * 8);
    std::memset(rweights_, 0, rows * k * 4);
  }
  std::memset(combined_, 0, T * s.out_row_bytes());
}

Buffers::~Buffers() {
  for (void* p : owned_) release_(p);
}

void* Buffers::take(size_t bytes) {
  void* p = alloc_(bytes < 64 ? 64 : bytes);
  owned_.push_back(p);
  return p;
}

sclMoeTokens_t Buffers::tokens() const {
  const Shape& s = work_.shape();
  sclMoeTokens_t t{};
  t.x = x_;
  t.scales = s.x_type == sclFloat8e4m3 ? static_cast<const float*>(scales_) : nullptr;
  t.topkIdx = static_cast<const int64_t*>(ids_);
  t.topkWeights = weights_ ? static_cast<const float*>(topk_weights_) : nullptr;
  t.numTokens = work_.tokens(s.rank);
  return t;
}

sclMoeRecv_t Buffers::recv() const {
  const Shape& s = work_.shape();
  sclMoeRecv_t r{};
  r.x = rx_;
  r.scales = s.recv_type == sclFloat8e4m3 ? static_cast<float*>(rscales_) : nullptr;
  r.tokensPerExpert = static_cast<int*>(per_expert_);
  if (!s.expert_major) {
    r.topkIdx = static_cast<int64_t*>(rids_);
    r.topkWeights = static_cast<float*>(rweights_);
    r.numRows = static_cast<int*>(rows_);
  }
  return r;
}

const float* Buffers::combine_weights() const {
  return work_.shape().expert_major && weights_ ? static_cast<const float*>(topk_weights_)
                                                : nullptr;
}

Times time_method(Group& group, Method& method, int warmup, int iters) {
  for (int i = 0; i < warmup; ++i) {
    method.dispatch();
    method.combine();
  }
  Times t;
  group.barrier();
  double start = now_us();
  for (int i = 0; i < iters; ++i) method.dispatch();
  t.dispatch_us = group.max((now_us() - start) / iters);
  group.barrier();
  start = now_us();
  for (int i = 0; i < iters; ++i) method.combine();
  t.combine_us = group.max((now_us() - start) / iters);
  return t;
}

uint64_t wrong_dispatch(const Workload& work, const Buffers& b, bool weights, std::string* first) {
  const Shape& s = work.shape();
  const Workload::Received want = work.expected_dispatch(s.rank, weights);
  const sclMoeRecv_t got = b.recv();
  const size_t sc = s.scale_cols(), k = size_t(s.topk), row = s.recv_row_bytes();
  const bool fp8 = s.recv_type == sclFloat8e4m3;
  uint64_t wrong = diff("tokensPerExpert", got.tokensPerExpert, want.tokens_per_expert.data(),
                        want.tokens_per_expert.size(), 4, first);
  if (!s.expert_major) {
    const size_t rows = size_t(want.rows);
    wrong += diff("numRows", got.numRows, &want.rows, 1, 4, first);
    wrong += diff("x", got.x, want.x.data(), rows, row, first);
    if (fp8) wrong += diff("scales", got.scales, want.scales.data(), rows, sc * 4, first);
    wrong += diff("topkIdx", got.topkIdx, want.ids.data(), rows * k, 8, first);
    wrong += diff("topkWeights", got.topkWeights, want.weights.data(), rows * k, 4, first);
    return wrong;
  }
  for (size_t e = 0; e < want.tokens_per_expert.size(); ++e) {
    const size_t at = e * s.expert_rows(), rows = size_t(want.tokens_per_expert[e]);
    wrong += diff("x", static_cast<const char*>(got.x) + at * row, want.x.data() + at * row, rows,
                  row, first);
    if (fp8)
      wrong +=
          diff("scales", got.scales + at * sc, want.scales.data() + at * sc, rows, sc * 4, first);
  }
  return wrong;
}

uint64_t wrong_combine(const Workload& work, const Buffers& b, std::string* first) {
  const Shape& s = work.shape();
  const std::vector<char> want =
      work.expected_combine(s.rank, Buffers::kExpertSalt, b.combine_weights());
  return diff("out", b.combined(), want.data(), want.size() / s.out_row_bytes(), s.out_row_bytes(),
              first);
}

double dispatch_bytes_per_rank(const Workload& work) {
  const Shape& s = work.shape();
  const double row = s.recv_type == sclFloat8e4m3 ? double(s.hidden) + 4.0 * double(s.scale_cols())
                                                  : double(s.recv_row_bytes());
  return double(valid_pairs(work)) * row / s.nranks;
}

double combine_bytes_per_rank(const Workload& work) {
  const Shape& s = work.shape();
  return double(valid_pairs(work)) * double(s.out_row_bytes()) / s.nranks;
}

std::string csv_header() {
  return "method,layout,call,ranks,tokens,hidden,topk,experts,routing,x,recv,out,time_us,gbs,"
         "repeat";
}

std::string csv_row(const std::string& method, const Workload& work, const std::string& routing,
                    const char* call, double time_us, double bytes, int repeat) {
  const Shape& s = work.shape();
  char line[512];
  std::snprintf(line, sizeof line, "%s,%s,%s,%d,%d,%d,%d,%d,%s,%s,%s,%s,%.2f,%.3f,%d",
                method.c_str(), s.expert_major ? "expert" : "token", call, s.nranks, s.max_tokens,
                s.hidden, s.topk, s.experts, routing.c_str(), stratacl::dtype_name(s.x_type),
                stratacl::dtype_name(s.recv_type), stratacl::dtype_name(s.out_type), time_us,
                bytes / time_us * 1e-3, repeat);
  return line;
}

bool parse_type(const std::string& text, sclDataType_t* t) {
  const std::optional<sclDataType_t> d = stratacl::parse_dtype(text);
  if (!d || (*d != sclBfloat16 && *d != sclFloat16 && *d != sclFloat32 && *d != sclFloat8e4m3))
    return false;
  *t = *d;
  return true;
}

}  // namespace moe_workload
