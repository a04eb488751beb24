// A MoE dispatch/combine workload that every rank can reconstruct alone: the shape (the
// sclMoeConfig_t the ranks share), every rank's routing and token rows as pure functions of a
// seed, the expert outputs each rank feeds to combine, and the expected results of dispatch and
// combine computed from those functions with no communication at all (the semantics of
// include/stratacl/stratacl.h, literally). scl-bench, its MPI peer and the multi-rank tests share
// it; it does not link the library (only its header types and scalar conversions).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "stratacl/stratacl.h"

namespace moe_workload {

constexpr int kScaleBlock = 128;

// What every rank agrees on (an sclMoeConfig_t), and what follows for one rank.
struct Shape {
  int nranks = 1, rank = 0;
  int hidden = 0, topk = 0, experts = 0, max_tokens = 0;
  sclDataType_t x_type = sclBfloat16, recv_type = sclBfloat16, out_type = sclBfloat16;
  bool expert_major = false;
  std::vector<int> owner;           // expert -> rank
  std::vector<int> local_index;     // expert -> index among its owner's experts, by ascending id
  std::vector<int> explicit_owner;  // what config() passes as expertRank (empty: NULL)

  // `owner_map` empty: E/R consecutive experts per rank (E must divide).
  Shape(int nranks, int rank, int hidden, int topk, int experts, int max_tokens,
        std::vector<int> owner_map = {});
  sclMoeConfig_t config() const;  // points into explicit_owner
  int local_experts(int r) const;
  size_t x_row_bytes() const;
  size_t recv_row_bytes() const;
  size_t out_row_bytes() const;
  size_t scale_cols() const { return size_t(hidden) / kScaleBlock; }
  size_t expert_rows() const { return size_t(nranks) * size_t(max_tokens); }  // per local expert
  size_t max_recv_rows() const;
};

// How token ids are drawn.
struct RoutingSpec {
  enum Kind {
    kUniform,       // k distinct experts uniformly at random
    kZipf,          // k distinct experts, expert e drawn with weight 1/(e+1)^s (hot experts first)
    kOneRank,       // every token's experts all on rank `target` (as many as it owns; -1 after)
    kMasked,        // uniform, then each entry -1 with probability 1/3
    kOneRankBlock,  // each token chooses all experts of rank (t mod R): k = E_local
  } kind = kUniform;
  double zipf_s = 1.2;
  int target = 0;
  // Parses "uniform", "zipf:S", "onerank:R", "masked"; empty message when it parses.
  static std::string parse(const std::string& text, RoutingSpec* out);
  std::string name() const;
};

// Every rank's tokens: T per rank, ids [T, k], weights [T, k], rows, scales.
class Workload {
 public:
  // tokens[r]: T of rank r (each <= max_tokens).
  Workload(const Shape& shape, const RoutingSpec& routing, std::vector<int> tokens, uint64_t seed);

  const Shape& shape() const { return shape_; }
  int tokens(int r) const { return tokens_[size_t(r)]; }
  const std::vector<int64_t>& ids(int r) const { return ids_[size_t(r)]; }
  const std::vector<float>& weights(int r) const { return weights_[size_t(r)]; }
  uint64_t seed() const { return seed_; }

  // Rank r's token rows [T, H] of xType and, for fp8 rows, their scales [T, H/128].
  void fill_x(int r, void* x, float* scales) const;
  // Weights for a later call (a reused handle gets new ones): a function of (seed, r, salt).
  std::vector<float> weights_with(int r, uint64_t salt) const;

  // The (source rank, source token) pairs rank d receives, token-major order.
  std::vector<std::pair<int, int>> token_rows(int d) const;
  // The pairs local expert e of rank d receives, expert-major order.
  std::vector<std::pair<int, int>> expert_rows(int d, int e) const;
  // Destinations of token (s, t), ascending, each once.
  std::vector<int> destinations(int s, int t) const;

  // The expected receive buffers of rank d (every byte of every row that dispatch writes):
  // x as recvType rows, scales, ids, weights (token-major), tokens per local expert, numRows.
  struct Received {
    std::vector<char> x;
    std::vector<float> scales;
    std::vector<int64_t> ids;
    std::vector<float> weights;
    std::vector<int> tokens_per_expert;
    int rows = 0;
  };
  // The senders' weights: none (`with_weights` false: received weights are 0), those of the
  // constructor (`weights_salt` 0), or weights_with(s, weights_salt).
  Received expected_dispatch(int d, bool with_weights, uint64_t weights_salt = 0) const;

  // Expert outputs: the row a rank computes for token (s, t) under `key` (token-major: the rank
  // holding it; expert-major: the global expert), element h, as outType; a function of `salt`.
  void fill_expert_row(int s, int t, int key, uint64_t salt, void* row) const;
  // Rank d's whole combine input (max_recv_rows rows; rows it does not hold are zero).
  std::vector<char> expert_out(int d, uint64_t salt) const;
  // Rank o's expected combine result [T, H] of outType (weights: expert-major, or NULL).
  std::vector<char> expected_combine(int o, uint64_t salt, const float* weights) const;

 private:
  Shape shape_;
  std::vector<int> tokens_;
  std::vector<std::vector<int64_t>> ids_;
  std::vector<std::vector<float>> weights_;
  uint64_t seed_;
};

// Combine's arithmetic, written plainly: dst = round(((w[0] * rows[0]) + w[1] * rows[1]) + ...)
// element by element in fp32 (weights NULL: the plain sum), each product rounded before it is
// added, rounded once to `type` (bf16, fp16: nearest even; fp32: NaNs canonical); n == 0 gives a
// zero row.
void sum_rows(void* dst, const void* const* rows, const float* weights, int n, size_t count,
              sclDataType_t type);
using SumRows = decltype(&sum_rows);

// Bits of one e4m3 quantisation of a bf16 row as the API specifies it (scale = max(amax, 1e-4) /
// 448 per 128-channel block, q = x / scale in fp32, nearest even, saturating).
void quantize_row(const uint16_t* bf16, int hidden, uint8_t* q, float* scales);

}  // namespace moe_workload
