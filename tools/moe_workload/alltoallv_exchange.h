// The buffer-centric MoE exchange that StrataCL's dispatch and combine replace, on a plain
// alltoallv: the baseline scl-bench measures (over sclAlltoAllv and MPI_Alltoallv) and the
// reference the multi-rank tests compare sclMoeDispatch with, bit for bit.
//
// Dispatch: quantise once per token when asked, pack each token once per destination rank into a
// send buffer as a record (row as received, its scales, its k expert ids, its k weights), swap
// record counts with an alltoall, move the records with an alltoallv, and unpack them into the
// receive layout of sclMoeDispatch (token-major: records arrive ordered by source rank, then
// token, which is that layout; expert-major: each record's row is copied to every local expert
// it chose). Combine: send the expert outputs back along the same routes (token-major outputs
// are already grouped by source and go without packing) and sum at the token's rank in the fixed
// order of sclMoeCombine.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "workload.h"

namespace moe_workload {

// What the exchange runs on.
class Transport {
 public:
  virtual ~Transport() = default;
  // Staging buffers of the exchange (heap memory for a zero-copy alltoallv); never NULL.
  virtual void* alloc(size_t bytes) = 0;
  virtual void release(void* p) = 0;
  // One int64 to and from every rank.
  virtual void alltoall_counts(const int64_t* send, int64_t* recv) = 0;
  // Bytes, as MPI_Alltoallv with MPI_BYTE.
  virtual void alltoallv(const void* send, const size_t* send_bytes, const size_t* send_at,
                         void* recv, const size_t* recv_bytes, const size_t* recv_at) = 0;
};

class AlltoallvExchange {
 public:
  // `sum`: combine's arithmetic (workload.h); a program with faster kernels of the same bits
  // passes them (scl-bench passes the library's), so that comparisons measure the communication.
  AlltoallvExchange(const Shape& shape, Transport& transport, SumRows sum = sum_rows);
  ~AlltoallvExchange();
  AlltoallvExchange(const AlltoallvExchange&) = delete;
  AlltoallvExchange& operator=(const AlltoallvExchange&) = delete;

  // Fills `out` as sclMoeDispatch does (x, scales, ids, weights, tokens per expert, rows).
  void dispatch(const sclMoeTokens_t& in, const sclMoeRecv_t& out);
  // The combine of the last dispatch: expert_out as sclMoeCombine takes it, `weights` for
  // expert-major (NULL: 1), `out` [T, H] of outType.
  void combine(const void* expert_out, const float* weights, void* out);

 private:
  // A staging buffer that grows to the largest size asked of it.
  struct Staging {
    char* data = nullptr;
    size_t bytes = 0;
  };
  char* staging(Staging& s, size_t bytes);

  // Records stay 8-aligned, for their ids.
  size_t record_bytes() const { return (meta_at_ + size_t(shape_.topk) * 12 + 7) / 8 * 8; }

  const Shape shape_;
  Transport& transport_;
  SumRows sum_;
  size_t meta_at_ = 0;  // a record's ids after its row and scales, 8-aligned
  Staging send_, recv_, back_send_, back_recv_;
  std::vector<uint8_t> quantised_;
  std::vector<float> quantised_scales_;
  // Of the last dispatch.
  std::vector<int64_t> ids_;             // this rank's [T, k]
  std::vector<size_t> sent_, received_;  // records per peer
  std::vector<size_t> back_rows_;        // expert-major: rows to send back, grouped by source
  std::vector<size_t> back_count_;       // ... per source
};

}  // namespace moe_workload
