// Measuring MoE dispatch and combine the same way in every program that does (scl-bench moe and
// its MPI peer): the buffers of one rank filled from the workload, a method (a way of doing
// dispatch and combine over those buffers), the timing loop, the check of every received row and
// every combined row, DeepEP's byte counts, and the CSV row.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "alltoallv_exchange.h"
#include "workload.h"

namespace moe_workload {

// The ranks of the job, for timing.
class Group {
 public:
  virtual ~Group() = default;
  virtual void barrier() = 0;
  virtual double max(double v) = 0;
  virtual uint64_t sum(uint64_t v) = 0;
};

// One rank's buffers: its tokens, what it receives, its expert outputs and combine's result,
// all from `alloc` (released with `release`), filled and touched before any timing.
class Buffers {
 public:
  using Alloc = std::function<void*(size_t)>;
  using Release = std::function<void(void*)>;
  // `weights`: whether the tokens carry top-k weights (combine uses them in expert-major).
  Buffers(const Workload& work, bool weights, Alloc alloc, Release release);
  ~Buffers();
  Buffers(const Buffers&) = delete;
  Buffers& operator=(const Buffers&) = delete;

  sclMoeTokens_t tokens() const;
  sclMoeRecv_t recv() const;
  const void* expert_out() const { return expert_out_; }
  const float* combine_weights() const;  // expert-major with weights, else NULL
  void* combined() const { return combined_; }
  static constexpr uint64_t kExpertSalt = 1;  // of the expert outputs (Workload::expert_out)

 private:
  void* take(size_t bytes);
  const Workload& work_;
  bool weights_;
  Release release_;
  Alloc alloc_;
  std::vector<void*> owned_;
  void *x_, *scales_, *ids_, *topk_weights_, *rx_, *rscales_, *rids_, *rweights_, *per_expert_,
      *rows_, *expert_out_, *combined_;
};

// A way of doing dispatch and combine over a rank's buffers.
class Method {
 public:
  virtual ~Method() = default;
  virtual void dispatch() = 0;
  virtual void combine() = 0;  // of the last dispatch
};

// The baseline: pack + alltoallv + unpack over a transport (alltoallv_exchange.h).
class ExchangeMethod : public Method {
 public:
  ExchangeMethod(const Shape& shape, Transport& transport, const Buffers& buffers,
                 SumRows sum = sum_rows)
      : exchange_(shape, transport, sum), buffers_(buffers) {}
  void dispatch() override { exchange_.dispatch(buffers_.tokens(), buffers_.recv()); }
  void combine() override {
    exchange_.combine(buffers_.expert_out(), buffers_.combine_weights(), buffers_.combined());
  }

 private:
  AlltoallvExchange exchange_;
  const Buffers& buffers_;
};

struct Times {
  double dispatch_us = 0, combine_us = 0;  // the slowest rank's mean per call
};
// `warmup` dispatch + combine pairs, then `iters` dispatches timed together, then `iters`
// combines timed together (a combine needs only the last dispatch).
Times time_method(Group& group, Method& method, int warmup, int iters);

// Wrong elements of this rank's receive buffers after a dispatch, and of its combine result,
// against the workload's expected results (every row); the first mismatch goes to `first`.
uint64_t wrong_dispatch(const Workload& work, const Buffers& b, bool weights, std::string* first);
uint64_t wrong_combine(const Workload& work, const Buffers& b, std::string* first);

// DeepEP's byte counts, per rank (the mean over ranks): (token, expert) pairs x row bytes, the
// pairs whose expert is on the token's own rank included. Dispatch rows as received (bf16 2H;
// fp8 H + 4H/128), combine rows as outType.
double dispatch_bytes_per_rank(const Workload& work);
double combine_bytes_per_rank(const Workload& work);

// One CSV line (no newline) and its header.
std::string csv_header();
std::string csv_row(const std::string& method, const Workload& work, const std::string& routing,
                    const char* call, double time_us, double bytes, int repeat);

// A row type of the MoE calls (bfloat16, float16, float32 or fp8e4m3), in any spelling
// core/dtype.h accepts (bf16, fp16, fp32 and fp8 among them).
bool parse_type(const std::string& text, sclDataType_t* t);

}  // namespace moe_workload
