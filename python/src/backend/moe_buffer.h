// MoE dispatch and combine on torch tensors, over a "stratacl" process group's communicator:
// the calls sclMoeCreate/Dispatch/Combine take, with tensors in and tensors out. The
// DeepEP-shaped Python class (stratacl/moe/) is built on it. Calls block (without the GIL)
// or, with `async_op`, are queued on the buffer's own stream and finish at wait(): their outputs
// may be read only then (a token-major dispatch's outputs take their row count then). Like every
// call on the communicator, they run after the group's earlier queued calls.
#pragma once

#include <ATen/ATen.h>

#include <functional>
#include <memory>
#include <optional>
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <tuple>
#include <vector>

#include "stratacl/stratacl.h"

namespace stratacl_torch {

// The routing one dispatch chose: it drives that dispatch's combines (and reused dispatches).
class MoeRouting {
 public:
  MoeRouting(sclMoeHandle_t h, int64_t tokens) : handle_(h), tokens_(tokens) {}
  ~MoeRouting() {
    if (handle_) sclMoeHandleDestroy(handle_);
  }
  MoeRouting(const MoeRouting&) = delete;
  MoeRouting& operator=(const MoeRouting&) = delete;
  sclMoeHandle_t get() const { return handle_; }
  sclMoeHandle_t* slot() { return &handle_; }
  int64_t tokens() const { return tokens_; }
  int64_t rows() const { return rows_; }
  void set_rows(int64_t rows) { rows_ = rows; }

 private:
  sclMoeHandle_t handle_;
  int64_t tokens_;    // T of the dispatch: combine's output rows
  int64_t rows_ = 0;  // rows it delivered here (token-major): combine's expert outputs
};

struct MoeOptions {
  int hidden, topk, experts, max_tokens;
  at::ScalarType x_type;  // bf16, fp16, fp32, or uint8 for fp8 e4m3 rows (with scales)
  bool fp8_in_flight;     // bf16 rows arrive as fp8 e4m3 with scales
  at::ScalarType out_type;
  bool expert_major;  // DeepEP's low-latency layout: [local experts, ranks * max tokens, H]
};

class MoeBuffer {
 public:
  MoeBuffer(const c10::intrusive_ptr<c10d::ProcessGroup>& group, const MoeOptions& options);
  ~MoeBuffer();

  int local_experts() const { return local_experts_; }
  // tokens per rank [R] int32, tokens per expert [E] int32, is token in rank [T, R] bool.
  std::tuple<at::Tensor, at::Tensor, at::Tensor> layout(const at::Tensor& topk_idx);

  struct Received {
    at::Tensor x, scales, topk_idx, topk_weights, tokens_per_expert;
    int64_t rows;
    std::shared_ptr<MoeRouting> routing;
  };
  // A new routing (reuse empty), or the routing of `reuse` again (topk_idx may be undefined).
  Received dispatch(const at::Tensor& x, const std::optional<at::Tensor>& scales,
                    const std::optional<at::Tensor>& topk_idx,
                    const std::optional<at::Tensor>& topk_weights,
                    const std::shared_ptr<MoeRouting>& reuse, bool async_op = false);
  at::Tensor combine(const std::shared_ptr<MoeRouting>& routing, const at::Tensor& expert_out,
                     const std::optional<at::Tensor>& topk_weights, bool async_op = false);
  // Waits for the calls queued with async_op and completes their outputs.
  void wait();

 private:
  MoeOptions options_;
  c10::intrusive_ptr<c10d::ProcessGroup> group_;  // keeps the communicator alive
  sclComm_t comm_;
  sclMoe_t moe_ = nullptr;
  int local_experts_ = 0, ranks_ = 0;
  size_t max_rows_ = 0;
  // Calls queued with async_op: the stream they run on, the tensors they read and write (kept
  // alive until they finish), and what completes their outputs after wait().
  sclStream_t stream_ = nullptr;
  std::vector<at::Tensor> in_flight_;
  std::vector<std::function<void()>> on_finish_;
  sclStream_t submit_stream(bool async_op, std::initializer_list<at::Tensor> keep);
  void finish(size_t calls, size_t tensors);  // completes the first queued calls
};

}  // namespace stratacl_torch
