// A MoE dispatch/combine plan: the validated configuration of sclMoeCreate and what follows from
// it on this rank (which experts it owns, the sizes of its rows and buffers).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/status.h"
#include "stratacl/stratacl.h"

namespace stratacl::moe {

constexpr int kScaleBlock = 128;  // fp8 rows carry one fp32 scale per 128 channels

struct Plan {
  int nranks = 0, rank = 0;
  int hidden = 0, topk = 0, num_experts = 0, max_tokens = 0;
  sclDataType_t x_type = sclBfloat16, recv_type = sclBfloat16, out_type = sclBfloat16;
  bool expert_major = false;
  std::vector<int> owner;        // expert -> rank
  std::vector<int> local_index;  // expert -> its index among its owner's experts
  int local_experts = 0;         // E_local of this rank
  size_t max_recv_rows = 0;
  uint64_t digest = 0;  // of everything every rank must agree on

  // Validates `config` for `nranks` ranks (naming the field at fault).
  static Result<Plan> make(const sclMoeConfig_t* config, int nranks, int rank);

  bool x_fp8() const { return x_type == sclFloat8e4m3; }
  bool recv_fp8() const { return recv_type == sclFloat8e4m3; }
  size_t scale_cols() const { return size_t(hidden) / kScaleBlock; }
  size_t x_row_bytes() const;
  size_t recv_row_bytes() const;
  size_t out_row_bytes() const;
  // Rows of an expert-major receive buffer (and of its combine input) per local expert.
  size_t expert_rows() const { return size_t(nranks) * size_t(max_tokens); }
};

}  // namespace stratacl::moe
