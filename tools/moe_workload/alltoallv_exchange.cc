#include "alltoallv_exchange.h"

#include <algorithm>
#include <cstring>

namespace moe_workload {
namespace {

// Offsets of consecutive blocks of the given sizes.
std::vector<size_t> offsets(const std::vector<size_t>& sizes) {
  std::vector<size_t> at(sizes.size(), 0);
  for (size_t i = 1; i < sizes.size(); ++i) at[i] = at[i - 1] + sizes[i - 1];
  return at;
}

std::vector<size_t> times(const std::vector<size_t>& counts, size_t bytes) {
  std::vector<size_t> r(counts);
  for (size_t& v : r) v *= bytes;
  return r;
}

}  // namespace

AlltoallvExchange::AlltoallvExchange(const Shape& shape, Transport& transport, SumRows sum)
    : shape_(shape), transport_(transport), sum_(sum) {
  const size_t row_and_scales =
      shape_.recv_row_bytes() + (shape_.recv_type == sclFloat8e4m3 ? shape_.scale_cols() * 4 : 0);
  meta_at_ = (row_and_scales + 7) / 8 * 8;
}

AlltoallvExchange::~AlltoallvExchange() {
  for (Staging* s : {&send_, &recv_, &back_send_, &back_recv_})
    if (s->data) transport_.release(s->data);
}

char* AlltoallvExchange::staging(Staging& s, size_t bytes) {
  if (bytes > s.bytes || !s.data) {
    if (s.data) transport_.release(s.data);
    s.bytes = std::max<size_t>(bytes, 64);
    s.data = static_cast<char*>(transport_.alloc(s.bytes));
  }
  return s.data;
}

void AlltoallvExchange::dispatch(const sclMoeTokens_t& in, const sclMoeRecv_t& out) {
  const Shape& p = shape_;
  const int R = p.nranks, T = in.numTokens;
  const size_t k = size_t(p.topk), sc = p.scale_cols(), rec = record_bytes();
  const bool fp8 = p.recv_type == sclFloat8e4m3;
  ids_.assign(in.topkIdx, in.topkIdx + size_t(T) * k);

  // Which ranks each token goes to, and how many records each rank gets.
  std::vector<uint8_t> to(size_t(T) * size_t(R), 0);
  sent_.assign(size_t(R), 0);
  for (int t = 0; t < T; ++t) {
    for (size_t j = 0; j < k; ++j) {
      const int64_t e = ids_[size_t(t) * k + j];
      if (e >= 0) to[size_t(t) * size_t(R) + size_t(p.owner[size_t(e)])] = 1;
    }
    for (int d = 0; d < R; ++d) sent_[size_t(d)] += to[size_t(t) * size_t(R) + size_t(d)];
  }

  // Rows as they are received: quantised once per token when asked.
  const char* rows = static_cast<const char*>(in.x);
  const float* row_scales = in.scales;
  if (p.x_type != p.recv_type) {
    quantised_.resize(size_t(T) * size_t(p.hidden));
    quantised_scales_.resize(size_t(T) * sc);
    for (int t = 0; t < T; ++t) {
      quantize_row(static_cast<const uint16_t*>(in.x) + size_t(t) * size_t(p.hidden), p.hidden,
                   &quantised_[size_t(t) * size_t(p.hidden)], &quantised_scales_[size_t(t) * sc]);
    }
    rows = reinterpret_cast<const char*>(quantised_.data());
    row_scales = quantised_scales_.data();
  }

  // Pack: by destination, then token.
  size_t total = 0;
  for (size_t n : sent_) total += n;
  char* send = staging(send_, total * rec);
  size_t at = 0;
  for (int d = 0; d < R; ++d) {
    for (int t = 0; t < T; ++t) {
      if (!to[size_t(t) * size_t(R) + size_t(d)]) continue;
      char* r = send + at++ * rec;
      std::memcpy(r, rows + size_t(t) * p.recv_row_bytes(), p.recv_row_bytes());
      if (fp8) std::memcpy(r + p.recv_row_bytes(), row_scales + size_t(t) * sc, sc * 4);
      std::memcpy(r + meta_at_, &ids_[size_t(t) * k], k * 8);
      float* w = reinterpret_cast<float*>(r + meta_at_ + k * 8);
      if (in.topkWeights) {
        std::memcpy(w, in.topkWeights + size_t(t) * k, k * 4);
      } else {
        std::fill_n(w, k, 0.0f);
      }
    }
  }

  // Counts, then records.
  std::vector<int64_t> send_counts(sent_.begin(), sent_.end());
  std::vector<int64_t> recv_counts(static_cast<size_t>(R));
  transport_.alltoall_counts(send_counts.data(), recv_counts.data());
  received_.assign(recv_counts.begin(), recv_counts.end());
  size_t arriving = 0;
  for (size_t n : received_) arriving += n;
  char* recv = staging(recv_, arriving * rec);
  const std::vector<size_t> send_bytes = times(sent_, rec), recv_bytes = times(received_, rec);
  transport_.alltoallv(send, send_bytes.data(), offsets(send_bytes).data(), recv, recv_bytes.data(),
                       offsets(recv_bytes).data());

  // Unpack.
  const int E_local = p.local_experts(p.rank);
  std::vector<int> count(size_t(E_local), 0);
  back_rows_.clear();
  back_count_.assign(size_t(R), 0);
  size_t i = 0;
  for (int s = 0; s < R; ++s) {
    for (size_t n = 0; n < received_[size_t(s)]; ++n, ++i) {
      const char* r = recv + i * rec;
      const int64_t* ids = reinterpret_cast<const int64_t*>(r + meta_at_);
      const float* w = reinterpret_cast<const float*>(r + meta_at_ + k * 8);
      auto copy_row = [&](size_t row) {
        std::memcpy(static_cast<char*>(out.x) + row * p.recv_row_bytes(), r, p.recv_row_bytes());
        if (fp8) std::memcpy(out.scales + row * sc, r + p.recv_row_bytes(), sc * 4);
      };
      if (!p.expert_major) copy_row(i);
      for (size_t j = 0; j < k; ++j) {
        const bool here = ids[j] >= 0 && p.owner[size_t(ids[j])] == p.rank;
        const int e = here ? p.local_index[size_t(ids[j])] : -1;
        if (!p.expert_major) {
          out.topkIdx[i * k + j] = e;
          out.topkWeights[i * k + j] = here ? w[j] : 0.0f;
          if (here) ++count[size_t(e)];
        } else if (here) {
          const size_t row = size_t(e) * p.expert_rows() + size_t(count[size_t(e)]++);
          copy_row(row);
          back_rows_.push_back(row);
          ++back_count_[size_t(s)];
        }
      }
    }
  }
  std::copy(count.begin(), count.end(), out.tokensPerExpert);
  if (!p.expert_major && out.numRows) *out.numRows = int(arriving);
}

void AlltoallvExchange::combine(const void* expert_out, const float* weights, void* out) {
  const Shape& p = shape_;
  const int R = p.nranks;
  const size_t k = size_t(p.topk), H = size_t(p.hidden), row = p.out_row_bytes();
  const int T = int(ids_.size() / k);

  // What goes back to each source, and what comes back from each destination (in rows).
  std::vector<size_t> send_rows = p.expert_major ? back_count_ : received_;
  std::vector<size_t> recv_rows(size_t(R), 0);
  for (int t = 0; t < T; ++t) {
    std::vector<uint8_t> seen(size_t(R), 0);
    for (size_t j = 0; j < k; ++j) {
      const int64_t e = ids_[size_t(t) * k + j];
      if (e < 0) continue;
      const int d = p.owner[size_t(e)];
      if (p.expert_major || !seen[size_t(d)]) ++recv_rows[size_t(d)];
      seen[size_t(d)] = 1;
    }
  }
  const char* send = static_cast<const char*>(expert_out);
  if (p.expert_major) {
    char* packed = staging(back_send_, back_rows_.size() * row);
    for (size_t i = 0; i < back_rows_.size(); ++i)
      std::memcpy(packed + i * row, send + back_rows_[i] * row, row);
    send = packed;
  }
  size_t arriving = 0;
  for (size_t n : recv_rows) arriving += n;
  char* recv = staging(back_recv_, arriving * row);
  const std::vector<size_t> send_bytes = times(send_rows, row), recv_bytes = times(recv_rows, row);
  const std::vector<size_t> recv_at = offsets(recv_bytes);
  transport_.alltoallv(send, send_bytes.data(), offsets(send_bytes).data(), recv, recv_bytes.data(),
                       recv_at.data());

  // Sum in the order of sclMoeCombine, rounding once.
  std::vector<size_t> next(recv_at);  // byte offset of the next unread row from each rank
  std::vector<const void*> rows;
  std::vector<float> w;
  for (int t = 0; t < T; ++t) {
    const int64_t* ids = &ids_[size_t(t) * k];
    rows.clear();
    w.clear();
    auto take = [&](int d, float weight) {
      rows.push_back(recv + next[size_t(d)]);
      next[size_t(d)] += row;
      w.push_back(weight);
    };
    if (!p.expert_major) {
      std::vector<uint8_t> seen(size_t(R), 0);
      for (size_t j = 0; j < k; ++j)
        if (ids[j] >= 0) seen[size_t(p.owner[size_t(ids[j])])] = 1;
      for (int d = 0; d < R; ++d)
        if (seen[size_t(d)]) take(d, 1.0f);
    } else {
      for (size_t j = 0; j < k; ++j)
        if (ids[j] >= 0) take(p.owner[size_t(ids[j])], weights ? weights[size_t(t) * k + j] : 1.0f);
    }
    sum_(static_cast<char*>(out) + size_t(t) * row, rows.data(), weights ? w.data() : nullptr,
         int(rows.size()), H, p.out_type);
  }
}

}  // namespace moe_workload
