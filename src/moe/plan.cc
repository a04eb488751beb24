#include "moe/plan.h"

#include <algorithm>
#include <cstring>

#include "core/dtype.h"
#include "core/hash.h"

namespace stratacl::moe {
namespace {

// Enums arrive from C as any int: read them through their bytes (see api/validate.h).
template <typename Enum>
int raw(const Enum& e) {
  static_assert(sizeof(Enum) == sizeof(int));
  int v;
  std::memcpy(&v, &e, sizeof v);
  return v;
}

bool is_row_type(int t) {
  return t == sclBfloat16 || t == sclFloat16 || t == sclFloat32 || t == sclFloat8e4m3;
}
bool is_out_type(int t) { return t == sclBfloat16 || t == sclFloat16 || t == sclFloat32; }

}  // namespace

size_t Plan::x_row_bytes() const { return size_t(hidden) * dtype_size(x_type); }
size_t Plan::recv_row_bytes() const { return size_t(hidden) * dtype_size(recv_type); }
size_t Plan::out_row_bytes() const { return size_t(hidden) * dtype_size(out_type); }

Result<Plan> Plan::make(const sclMoeConfig_t* c, int nranks, int rank) {
  if (!c) return Errorf(sclInvalidArgument, "config: NULL");
  if (c->magic != SCL_MOE_CONFIG_MAGIC || c->version == 0 || c->version > SCL_MOE_CONFIG_VERSION ||
      c->size < sizeof(sclMoeConfig_t)) {
    return Errorf(sclInvalidArgument,
                  "config: not initialised with SCL_MOE_CONFIG_INITIALIZER (size %zu, magic "
                  "0x%x, version %u)",
                  c->size, c->magic, c->version);
  }
  Plan p;
  p.nranks = nranks, p.rank = rank;
  p.hidden = c->hidden, p.topk = c->topk, p.num_experts = c->numExperts;
  p.max_tokens = c->maxTokensPerRank;
  if (p.hidden < 1) return Errorf(sclInvalidArgument, "config.hidden: %d must be >= 1", p.hidden);
  if (p.num_experts < 1)
    return Errorf(sclInvalidArgument, "config.numExperts: %d must be >= 1", p.num_experts);
  if (p.topk < 1 || p.topk > p.num_experts) {
    return Errorf(sclInvalidArgument, "config.topk: %d must be in [1, numExperts = %d]", p.topk,
                  p.num_experts);
  }
  if (p.max_tokens < 1)
    return Errorf(sclInvalidArgument, "config.maxTokensPerRank: %d must be >= 1", p.max_tokens);
  const int layout = raw(c->layout);
  if (layout != sclMoeTokenMajor && layout != sclMoeExpertMajor)
    return Errorf(sclInvalidArgument, "config.layout: %d is not an sclMoeLayout_t", layout);
  p.expert_major = layout == sclMoeExpertMajor;
  const int x = raw(c->xType), recv = raw(c->recvType), out = raw(c->outType);
  if (!is_row_type(x)) {
    return Errorf(sclInvalidArgument,
                  "config.xType: %d: rows are bfloat16, float16, float32 or fp8e4m3", x);
  }
  if (!is_row_type(recv) || !is_out_type(out)) {
    return Errorf(sclInvalidArgument, "config.%s: %d: not a type MoE rows can have",
                  is_row_type(recv) ? "outType" : "recvType", is_row_type(recv) ? out : recv);
  }
  p.x_type = sclDataType_t(x), p.recv_type = sclDataType_t(recv), p.out_type = sclDataType_t(out);
  if (!(p.recv_type == p.x_type || (p.x_type == sclBfloat16 && p.recv_type == sclFloat8e4m3))) {
    return Errorf(sclInvalidArgument,
                  "config.recvType: %s from xType %s: rows are received as they are sent, or as "
                  "fp8e4m3 from bfloat16",
                  dtype_name(p.recv_type), dtype_name(p.x_type));
  }
  if ((p.x_fp8() || p.recv_fp8()) && p.hidden % kScaleBlock != 0) {
    return Errorf(sclInvalidArgument,
                  "config.hidden: %d: fp8 rows need a multiple of %d (one scale per %d channels)",
                  p.hidden, kScaleBlock, kScaleBlock);
  }
  // The largest buffers must fit the address space: R * T_max rows of H fp32 elements.
  size_t bytes;
  if (__builtin_mul_overflow(size_t(nranks) * size_t(p.max_tokens), size_t(p.hidden) * 4, &bytes) ||
      bytes > (size_t(1) << 56)) {
    return Errorf(sclInvalidArgument, "config: %d ranks x %d tokens x %d channels overflow", nranks,
                  p.max_tokens, p.hidden);
  }

  p.owner.resize(size_t(p.num_experts));
  if (c->expertRank) {
    for (int e = 0; e < p.num_experts; ++e) {
      const int r = c->expertRank[e];
      if (r < 0 || r >= nranks) {
        return Errorf(sclInvalidArgument, "config.expertRank[%d]: %d is not a rank of [0, %d)", e,
                      r, nranks);
      }
      p.owner[size_t(e)] = r;
    }
  } else {
    if (p.num_experts % nranks != 0) {
      return Errorf(sclInvalidArgument,
                    "config.numExperts: %d is not divisible by %d ranks; pass expertRank",
                    p.num_experts, nranks);
    }
    const int per = p.num_experts / nranks;
    for (int e = 0; e < p.num_experts; ++e) p.owner[size_t(e)] = e / per;
  }
  // Local ids follow ascending global ids on every rank.
  p.local_index.resize(size_t(p.num_experts));
  std::vector<int> next(size_t(nranks), 0);
  for (int e = 0; e < p.num_experts; ++e) p.local_index[size_t(e)] = next[size_t(p.owner[e])]++;
  p.local_experts = next[size_t(rank)];
  p.max_recv_rows = p.expert_major ? size_t(p.local_experts) * p.expert_rows() : p.expert_rows();
  // So must the receive buffers of the rank with the most experts (expert-major: a block of rows
  // per local expert), rows of H fp32 elements and of topk 8-byte ids: checked alike on every
  // rank, so that every rank refuses the same configuration.
  const size_t most = size_t(*std::max_element(next.begin(), next.end()));
  size_t rows, row_bytes, id_bytes;
  if (__builtin_mul_overflow(p.expert_major ? most : 1, p.expert_rows(), &rows) ||
      __builtin_mul_overflow(rows, size_t(p.hidden) * 4, &row_bytes) ||
      __builtin_mul_overflow(rows, size_t(p.topk) * 8, &id_bytes) ||
      std::max(row_bytes, id_bytes) > (size_t(1) << 56)) {
    return Errorf(sclInvalidArgument,
                  "config: %d ranks x %d tokens%s, of %d channels and %d ids a row, overflow the "
                  "receive buffers",
                  nranks, p.max_tokens, p.expert_major ? " x the experts of a rank" : "", p.hidden,
                  p.topk);
  }

  // FNV-1a over the fields every rank must share.
  p.digest = kFnvBasisShared;
  for (int64_t v : {int64_t(p.hidden), int64_t(p.topk), int64_t(p.num_experts),
                    int64_t(p.max_tokens), int64_t(p.x_type), int64_t(p.recv_type),
                    int64_t(p.out_type), int64_t(layout), int64_t(nranks)})
    p.digest = fnv1a_u64(p.digest, uint64_t(v));
  for (int r : p.owner) p.digest = fnv1a_u64(p.digest, uint64_t(r));
  return p;
}

}  // namespace stratacl::moe
