#include "workload.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "core/dtype.h"
#include "core/hash.h"
#include "reduce/convert.h"

namespace moe_workload {
namespace {

namespace cv = stratacl::reduce;
using stratacl::dtype_size;
using stratacl::kGoldenGamma;
using stratacl::splitmix64;

uint64_t hash(uint64_t a, uint64_t b, uint64_t c = 0, uint64_t d = 0) {
  return splitmix64(splitmix64(splitmix64(a ^ kGoldenGamma) ^ b) ^
                    splitmix64(c + 0x632BE59BD9B4E019ull) ^ d);
}

// Float with a random sign and mantissa and an exponent in [lo, lo + span).
float random_float(uint64_t h, int lo, int span) {
  const uint32_t sign = uint32_t(h >> 63) << 31;
  const int e = lo + int((h >> 40) % uint64_t(span));
  return __builtin_bit_cast(float, sign | (uint32_t(127 + e) << 23) | uint32_t(h & 0x7FFFFFu));
}

void store(void* row, size_t i, sclDataType_t t, float v) {
  switch (t) {
    case sclBfloat16:
      static_cast<uint16_t*>(row)[i] = cv::float_to_bf16(v);
      return;
    case sclFloat16:
      static_cast<uint16_t*>(row)[i] = cv::float_to_half(v);
      return;
    default:
      static_cast<float*>(row)[i] = v;
      return;
  }
}

float load(const void* row, size_t i, sclDataType_t t) {
  switch (t) {
    case sclBfloat16:
      return cv::bf16_to_float(static_cast<const uint16_t*>(row)[i]);
    case sclFloat16:
      return cv::half_to_float(static_cast<const uint16_t*>(row)[i]);
    default:
      return static_cast<const float*>(row)[i];
  }
}

// k distinct experts drawn by cumulative weights `cdf` (rejection of repeats).
void draw_distinct(const std::vector<double>& cdf, uint64_t h, int k, int64_t* ids) {
  for (int j = 0; j < k; ++j) {
    for (uint64_t attempt = 0;; ++attempt) {
      const double u =
          double(splitmix64(h + uint64_t(j) * stratacl::kFnvPrime + attempt) >> 11) * 0x1p-53;
      const int64_t e =
          int64_t(std::upper_bound(cdf.begin(), cdf.end(), u * cdf.back()) - cdf.begin());
      const int64_t g = std::min<int64_t>(e, int64_t(cdf.size()) - 1);
      if (std::find(ids, ids + j, g) == ids + j) {
        ids[j] = g;
        break;
      }
    }
  }
}

}  // namespace

Shape::Shape(int nranks_, int rank_, int hidden_, int topk_, int experts_, int max_tokens_,
             std::vector<int> owner_map)
    : nranks(nranks_),
      rank(rank_),
      hidden(hidden_),
      topk(topk_),
      experts(experts_),
      max_tokens(max_tokens_),
      explicit_owner(std::move(owner_map)) {
  owner = explicit_owner;
  if (owner.empty()) {
    if (experts % nranks != 0) throw std::invalid_argument("experts not divisible by ranks");
    for (int e = 0; e < experts; ++e) owner.push_back(e / (experts / nranks));
  }
  std::vector<int> next(size_t(nranks), 0);
  for (int e = 0; e < experts; ++e) local_index.push_back(next[size_t(owner[size_t(e)])]++);
}

sclMoeConfig_t Shape::config() const {
  sclMoeConfig_t c = SCL_MOE_CONFIG_INITIALIZER;
  c.hidden = hidden, c.topk = topk, c.numExperts = experts, c.maxTokensPerRank = max_tokens;
  c.expertRank = explicit_owner.empty() ? nullptr : explicit_owner.data();
  c.xType = x_type, c.recvType = recv_type, c.outType = out_type;
  c.layout = expert_major ? sclMoeExpertMajor : sclMoeTokenMajor;
  return c;
}

int Shape::local_experts(int r) const { return int(std::count(owner.begin(), owner.end(), r)); }
size_t Shape::x_row_bytes() const { return size_t(hidden) * dtype_size(x_type); }
size_t Shape::recv_row_bytes() const { return size_t(hidden) * dtype_size(recv_type); }
size_t Shape::out_row_bytes() const { return size_t(hidden) * dtype_size(out_type); }
size_t Shape::max_recv_rows() const {
  return expert_major ? size_t(local_experts(rank)) * expert_rows() : expert_rows();
}

std::string RoutingSpec::parse(const std::string& text, RoutingSpec* out) {
  RoutingSpec r;
  if (text == "uniform") {
    r.kind = kUniform;
  } else if (text == "masked") {
    r.kind = kMasked;
  } else if (text.rfind("zipf:", 0) == 0) {
    r.kind = kZipf;
    char* end = nullptr;
    r.zipf_s = std::strtod(text.c_str() + 5, &end);
    if (*end || !(r.zipf_s >= 0)) return "zipf:S needs a number S >= 0";
  } else if (text.rfind("onerank:", 0) == 0) {
    r.kind = kOneRank;
    r.target = std::atoi(text.c_str() + 8);
  } else {
    return "routing '" + text + "': uniform, zipf:S, masked or onerank:R";
  }
  *out = r;
  return "";
}

std::string RoutingSpec::name() const {
  switch (kind) {
    case kUniform:
      return "uniform";
    case kZipf: {
      char b[32];
      snprintf(b, sizeof b, "zipf:%g", zipf_s);
      return b;
    }
    case kOneRank:
      return "onerank:" + std::to_string(target);
    case kMasked:
      return "masked";
    case kOneRankBlock:
      break;
  }
  return "rankblock";
}

Workload::Workload(const Shape& shape, const RoutingSpec& spec, std::vector<int> tokens,
                   uint64_t seed)
    : shape_(shape), tokens_(std::move(tokens)), seed_(seed) {
  const int k = shape_.topk, E = shape_.experts;
  std::vector<double> cdf(static_cast<size_t>(E));
  double sum = 0;
  for (int e = 0; e < E; ++e) {
    sum += spec.kind == RoutingSpec::kZipf ? 1.0 / std::pow(double(e + 1), spec.zipf_s) : 1.0;
    cdf[size_t(e)] = sum;
  }
  for (int r = 0; r < shape_.nranks; ++r) {
    const int T = tokens_[size_t(r)];
    std::vector<int64_t> ids(size_t(T) * size_t(k), -1);
    for (int t = 0; t < T; ++t) {
      int64_t* id = ids.data() + size_t(t) * size_t(k);
      const uint64_t h = hash(seed, uint64_t(r), uint64_t(t), 1);
      switch (spec.kind) {
        case RoutingSpec::kUniform:
        case RoutingSpec::kZipf:
        case RoutingSpec::kMasked:
          draw_distinct(cdf, h, k, id);
          if (spec.kind == RoutingSpec::kMasked) {
            for (int j = 0; j < k; ++j)
              if (splitmix64(h ^ uint64_t(j + 77)) % 3 == 0) id[j] = -1;
          }
          break;
        case RoutingSpec::kOneRank:
        case RoutingSpec::kOneRankBlock: {
          const int target = spec.kind == RoutingSpec::kOneRank ? spec.target : t % shape_.nranks;
          int j = 0;
          for (int e = 0; e < E && j < k; ++e)
            if (shape_.owner[size_t(e)] == target) id[j++] = e;
          // A token's entries in a random order: the slot of an expert must not matter.
          for (int i = k - 1; i > 0; --i)
            std::swap(id[i], id[splitmix64(h + uint64_t(i)) % uint64_t(i + 1)]);
          break;
        }
      }
    }
    ids_.push_back(std::move(ids));
    weights_.push_back(weights_with(r, 0));
  }
}

std::vector<float> Workload::weights_with(int r, uint64_t salt) const {
  const size_t n = size_t(tokens_[size_t(r)]) * size_t(shape_.topk);
  std::vector<float> w(n);
  for (size_t i = 0; i < n; ++i) w[i] = random_float(hash(seed_, uint64_t(r), i, 2 + salt), -3, 3);
  for (float& v : w) v = std::fabs(v);
  return w;
}

void Workload::fill_x(int r, void* x, float* scales) const {
  const Shape& p = shape_;
  const size_t H = size_t(p.hidden);
  for (int t = 0; t < tokens_[size_t(r)]; ++t) {
    char* row = static_cast<char*>(x) + size_t(t) * p.x_row_bytes();
    for (size_t b = 0; b * kScaleBlock < H; ++b) {
      // Block magnitudes vary: some blocks are tiny (the 1e-4 clamp of the fp8 scale, subnormal
      // e4m3 codes) and a few are all zero.
      const uint64_t hb = hash(seed_, uint64_t(r), uint64_t(t), 1000 + b);
      const int pick = int(hb % 32);
      const int lo = p.x_type == sclFloat16 ? (pick < 2 ? -14 : -4)
                                            : (pick < 2   ? -24
                                               : pick < 4 ? -12
                                                          : -4);
      const size_t end = std::min(H, (b + 1) * kScaleBlock);
      for (size_t h = b * kScaleBlock; h < end; ++h) {
        const uint64_t he = hash(seed_, uint64_t(r), uint64_t(t) * H + h, 3);
        if (p.x_type == sclFloat8e4m3) {
          uint8_t code = uint8_t(he);
          if ((code & 0x7F) == 0x7F) code ^= 1;  // not NaN
          reinterpret_cast<uint8_t*>(row)[h] = code;
        } else {
          store(row, h, p.x_type, pick == 31 ? 0.0f : random_float(he, lo, 8));
        }
      }
    }
    if (p.x_type == sclFloat8e4m3) {
      for (size_t b = 0; b < p.scale_cols(); ++b) {
        scales[size_t(t) * p.scale_cols() + b] =
            std::fabs(random_float(hash(seed_, uint64_t(r), uint64_t(t), 5000 + b), -8, 8));
      }
    }
  }
}

std::vector<int> Workload::destinations(int s, int t) const {
  std::vector<int> d;
  const int64_t* id = ids_[size_t(s)].data() + size_t(t) * size_t(shape_.topk);
  for (int j = 0; j < shape_.topk; ++j)
    if (id[j] >= 0) d.push_back(shape_.owner[size_t(id[j])]);
  std::sort(d.begin(), d.end());
  d.erase(std::unique(d.begin(), d.end()), d.end());
  return d;
}

std::vector<std::pair<int, int>> Workload::token_rows(int d) const {
  std::vector<std::pair<int, int>> rows;
  for (int s = 0; s < shape_.nranks; ++s) {
    for (int t = 0; t < tokens_[size_t(s)]; ++t) {
      const std::vector<int> dests = destinations(s, t);
      if (std::find(dests.begin(), dests.end(), d) != dests.end()) rows.emplace_back(s, t);
    }
  }
  return rows;
}

std::vector<std::pair<int, int>> Workload::expert_rows(int d, int e) const {
  std::vector<std::pair<int, int>> rows;
  for (int s = 0; s < shape_.nranks; ++s) {
    for (int t = 0; t < tokens_[size_t(s)]; ++t) {
      const int64_t* id = ids_[size_t(s)].data() + size_t(t) * size_t(shape_.topk);
      for (int j = 0; j < shape_.topk; ++j) {
        if (id[j] >= 0 && shape_.owner[size_t(id[j])] == d &&
            shape_.local_index[size_t(id[j])] == e)
          rows.emplace_back(s, t);
      }
    }
  }
  return rows;
}

Workload::Received Workload::expected_dispatch(int d, bool with_weights,
                                               uint64_t weights_salt) const {
  const Shape& p = shape_;
  const size_t k = size_t(p.topk), sc = p.scale_cols();
  const bool fp8 = p.recv_type == sclFloat8e4m3;
  Received r;
  const int E_local = p.local_experts(d);
  r.tokens_per_expert.assign(size_t(E_local), 0);
  // Source rows of every rank, as sent, on demand.
  std::vector<std::vector<char>> x(size_t(p.nranks));
  std::vector<std::vector<float>> xs(size_t(p.nranks));
  std::vector<std::vector<float>> w(size_t(p.nranks));
  for (int s = 0; s < p.nranks; ++s) {
    x[size_t(s)].resize(size_t(tokens_[size_t(s)]) * p.x_row_bytes());
    xs[size_t(s)].resize(size_t(tokens_[size_t(s)]) * sc);
    fill_x(s, x[size_t(s)].data(), xs[size_t(s)].data());
    w[size_t(s)] = weights_salt ? weights_with(s, weights_salt) : weights_[size_t(s)];
  }
  // One received row: the source row converted to recvType.
  auto put_row = [&](int s, int t, size_t row) {
    char* dst = r.x.data() + row * p.recv_row_bytes();
    const char* src = x[size_t(s)].data() + size_t(t) * p.x_row_bytes();
    if (p.x_type == p.recv_type) {
      std::memcpy(dst, src, p.x_row_bytes());
      if (fp8) std::memcpy(&r.scales[row * sc], &xs[size_t(s)][size_t(t) * sc], sc * 4);
    } else {
      quantize_row(reinterpret_cast<const uint16_t*>(src), p.hidden,
                   reinterpret_cast<uint8_t*>(dst), &r.scales[row * sc]);
    }
  };
  if (!p.expert_major) {
    const std::vector<std::pair<int, int>> rows = token_rows(d);
    r.rows = int(rows.size());
    r.x.resize(rows.size() * p.recv_row_bytes());
    r.scales.resize(fp8 ? rows.size() * sc : 0);
    r.ids.assign(rows.size() * k, -1);
    r.weights.assign(rows.size() * k, 0.0f);
    for (size_t i = 0; i < rows.size(); ++i) {
      const auto [s, t] = rows[i];
      put_row(s, t, i);
      const int64_t* id = ids_[size_t(s)].data() + size_t(t) * k;
      for (size_t j = 0; j < k; ++j) {
        if (id[j] < 0 || p.owner[size_t(id[j])] != d) continue;
        const int e = p.local_index[size_t(id[j])];
        r.ids[i * k + j] = e;
        r.weights[i * k + j] = with_weights ? w[size_t(s)][size_t(t) * k + j] : 0.0f;
        ++r.tokens_per_expert[size_t(e)];
      }
    }
    return r;
  }
  const size_t rows_per_expert = p.expert_rows();
  r.x.resize(size_t(E_local) * rows_per_expert * p.recv_row_bytes());
  r.scales.resize(fp8 ? size_t(E_local) * rows_per_expert * sc : 0);
  for (int e = 0; e < E_local; ++e) {
    const std::vector<std::pair<int, int>> rows = expert_rows(d, e);
    r.tokens_per_expert[size_t(e)] = int(rows.size());
    for (size_t i = 0; i < rows.size(); ++i)
      put_row(rows[i].first, rows[i].second, size_t(e) * rows_per_expert + i);
  }
  return r;
}

void Workload::fill_expert_row(int s, int t, int key, uint64_t salt, void* row) const {
  const uint64_t base = hash(seed_ ^ salt, uint64_t(s), uint64_t(t), 7 + uint64_t(key) * 131);
  for (int h = 0; h < shape_.hidden; ++h)
    store(row, size_t(h), shape_.out_type, random_float(splitmix64(base + uint64_t(h)), -4, 8));
}

std::vector<char> Workload::expert_out(int d, uint64_t salt) const {
  const Shape& p = shape_;
  Shape mine = p;
  mine.rank = d;
  std::vector<char> out(mine.max_recv_rows() * p.out_row_bytes(), 0);
  if (!p.expert_major) {
    const std::vector<std::pair<int, int>> rows = token_rows(d);
    for (size_t i = 0; i < rows.size(); ++i)
      fill_expert_row(rows[i].first, rows[i].second, d, salt, &out[i * p.out_row_bytes()]);
    return out;
  }
  for (int g = 0; g < p.experts; ++g) {
    if (p.owner[size_t(g)] != d) continue;
    const int e = p.local_index[size_t(g)];
    const std::vector<std::pair<int, int>> rows = expert_rows(d, e);
    for (size_t i = 0; i < rows.size(); ++i) {
      fill_expert_row(rows[i].first, rows[i].second, g, salt,
                      &out[(size_t(e) * p.expert_rows() + i) * p.out_row_bytes()]);
    }
  }
  return out;
}

std::vector<char> Workload::expected_combine(int o, uint64_t salt, const float* weights) const {
  const Shape& p = shape_;
  const size_t k = size_t(p.topk), row = p.out_row_bytes();
  std::vector<char> out(size_t(tokens_[size_t(o)]) * row);
  std::vector<std::vector<char>> terms(k, std::vector<char>(row));
  std::vector<const void*> rows;
  std::vector<float> w;
  for (int t = 0; t < tokens_[size_t(o)]; ++t) {
    rows.clear();
    w.clear();
    if (!p.expert_major) {
      for (int d : destinations(o, t)) {
        fill_expert_row(o, t, d, salt, terms[rows.size()].data());
        rows.push_back(terms[rows.size()].data());
      }
    } else {
      const int64_t* id = ids_[size_t(o)].data() + size_t(t) * k;
      for (size_t j = 0; j < k; ++j) {
        if (id[j] < 0) continue;
        fill_expert_row(o, t, int(id[j]), salt, terms[rows.size()].data());
        rows.push_back(terms[rows.size()].data());
        w.push_back(weights ? weights[size_t(t) * k + j] : 1.0f);
      }
    }
    sum_rows(out.data() + size_t(t) * row, rows.data(), weights ? w.data() : nullptr,
             int(rows.size()), size_t(p.hidden), p.out_type);
  }
  return out;
}

void sum_rows(void* dst, const void* const* rows, const float* weights, int n, size_t count,
              sclDataType_t type) {
  for (size_t i = 0; i < count; ++i) {
    float acc = 0.0f;
    for (int k = 0; k < n; ++k) {
      const float v = load(rows[k], i, type) * (weights ? weights[k] : 1.0f);
      acc = k == 0 ? v : acc + v;
    }
    if (type == sclFloat32 && acc != acc) acc = __builtin_bit_cast(float, 0x7FC00000u);
    store(dst, i, type, acc);
  }
}

void quantize_row(const uint16_t* bf16, int hidden, uint8_t* q, float* scales) {
  for (int b = 0; b < hidden / kScaleBlock; ++b) {
    float amax = 0;
    for (int i = 0; i < kScaleBlock; ++i) {
      const float v = std::fabs(cv::bf16_to_float(bf16[b * kScaleBlock + i]));
      if (v > amax) amax = v;
    }
    const float scale = (amax < 1e-4f ? 1e-4f : amax) / 448.0f;
    scales[b] = scale;
    for (int i = 0; i < kScaleBlock; ++i)
      q[b * kScaleBlock + i] =
          cv::float_to_e4m3(cv::bf16_to_float(bf16[b * kScaleBlock + i]) / scale);
  }
}

}  // namespace moe_workload
