// Case `moe`: sclMoeDispatchLayout, sclMoeDispatch and sclMoeCombine in both layouts, against
// two references (tools/moe_workload): the buffer-centric exchange built from plain alltoallv
// (pack by destination, sclAlltoAllv, unpack), and the expected results computed locally from the
// workload's pure functions. Every byte of every output buffer is compared with the alltoallv
// reference's (guards and rows no call writes included), and every written row with the local
// expectation, bitwise; combine's inputs are a function of (source rank, token, expert or
// destination), its expected sums are formed in the documented order.
//
// Scenarios: uneven token counts with a rank of T = 0, every token to one rank, -1 entries,
// k = 1, k = E_local, E not divisible by R (an explicit expertRank, with a rank owning no
// expert), bf16/fp16/fp32 rows, fp8 rows passed through, bf16 quantised to fp8 in flight, heap,
// malloc (staged) and registered (CMA) buffers, calls queued on a stream, and every handle reused
// for a second dispatch (new weights, no ids) and driving two combines.
#include <algorithm>
#include <cstring>
#include <exception>
#include <string>
#include <vector>

#include "buffers.h"
#include "harness.h"
#include "reference.h"
#include "scl_transport.h"
#include "tests.h"
#include "workload.h"

namespace mp {
namespace {

using moe_workload::RoutingSpec;
using moe_workload::Shape;
using moe_workload::Workload;

struct Scenario {
  const char* name;
  int hidden, topk, experts_per_rank;
  RoutingSpec::Kind routing;
  sclDataType_t x, recv, out;
  Mem mem;
  bool weights;  // the sender passes topkWeights
  bool stream;
  bool explicit_map;  // 2R + 1 experts, scrambled, rank 1 owning none (R >= 3)
};

const Scenario kScenarios[] = {
    {"uniform", 256, 4, 4, RoutingSpec::kUniform, sclBfloat16, sclBfloat16, sclBfloat16, Mem::kHeap,
     true, false, false},
    {"uniform-staged", 256, 3, 4, RoutingSpec::kUniform, sclBfloat16, sclBfloat16, sclFloat32,
     Mem::kMalloc, false, true, false},
    {"masked-explicit-map", 128, 3, 0, RoutingSpec::kMasked, sclFloat16, sclFloat16, sclFloat16,
     Mem::kHeap, true, false, true},
    {"k1-fp32", 64, 1, 3, RoutingSpec::kUniform, sclFloat32, sclFloat32, sclBfloat16,
     Mem::kRegistered, true, false, false},
    {"all-to-rank0", 128, 2, 2, RoutingSpec::kOneRank, sclBfloat16, sclBfloat16, sclBfloat16,
     Mem::kHeap, true, true, false},
    {"k-equals-local-experts", 128, 3, 3, RoutingSpec::kOneRankBlock, sclBfloat16, sclBfloat16,
     sclFloat16, Mem::kMalloc, true, false, false},
    {"fp8-rows", 256, 4, 4, RoutingSpec::kUniform, sclFloat8e4m3, sclFloat8e4m3, sclBfloat16,
     Mem::kHeap, true, false, false},
    {"bf16-to-fp8", 384, 4, 4, RoutingSpec::kZipf, sclBfloat16, sclFloat8e4m3, sclFloat32,
     Mem::kMalloc, true, true, false},
};

constexpr int kMaxTokens = 24;

// An output buffer of the library and the same one of the reference, alike to the byte.
struct Twin {
  Buffer lib, ref;
  Twin(Mem mem, sclDataType_t t, size_t count, unsigned char sentinel, sclComm_t comm)
      : lib(mem, t, count, 0, sentinel, comm), ref(Mem::kMalloc, t, count, 0, sentinel) {}
  std::vector<unsigned char> ref_image() const {
    const auto* p = static_cast<const unsigned char*>(ref.whole());
    return std::vector<unsigned char>(p, p + ref.whole_elems() * ref.elem_size());
  }
  void reset() {
    lib.fill_sentinel();
    ref.fill_sentinel();
  }
};

CallInfo with_dtype(CallInfo info, sclDataType_t t) {
  info.dtype = t;
  return info;
}

class ScenarioRun {
 public:
  ScenarioRun(const Scenario& sc, bool expert_major, uint64_t seed)
      : sc_(sc),
        w_(world()),
        expert_major_(expert_major),
        shape_(make_shape(sc, expert_major)),
        work_(shape_, routing(sc), token_counts(sc), seed),
        sentinel_(ref::sentinel_byte(seed)) {
    info_.coll = "moe";
    info_.detail = std::string(sc.name) + (expert_major ? " expert-major" : " token-major") +
                   " seed=" + std::to_string(seed);
  }

  void run() {
    const sclMoeConfig_t config = shape_.config();
    sclMoe_t moe = nullptr;
    MP_OK(sclMoeCreate(w_.comm, &config, &moe));
    check_info(moe);
    check_layout(moe);
    Outputs out(shape_, sc_.mem, sentinel_, w_.comm);
    Inputs in(shape_, work_, sc_);
    sclStream_t stream = nullptr;
    if (sc_.stream) MP_OK(sclStreamCreate(&stream));
    moe_workload::SclTransport transport(w_.comm, true);
    moe_workload::AlltoallvExchange baseline(shape_, transport);

    // Dispatch, then a combine queued behind it (on a stream: before the dispatch completed).
    sclMoeHandle_t handle = nullptr;
    sclMoeTokens_t tokens = in.tokens();
    sclMoeRecv_t recv = out.lib();
    MP_OK(sclMoeDispatch(moe, &tokens, &recv, &handle, stream));
    Buffer expert_out = expert_outputs(1);
    Buffer combined(sc_.mem, shape_.out_type, size_t(T()) * size_t(shape_.hidden), 0, sentinel_,
                    w_.comm);
    std::vector<float> cw = work_.weights_with(w_.rank, 11);
    const float* combine_weights = expert_major_ && sc_.weights ? cw.data() : nullptr;
    MP_OK(sclMoeCombine(moe, handle, expert_out.data(), combine_weights, combined.data(), stream));
    if (stream) MP_OK(sclStreamSynchronize(stream));
    baseline.dispatch(tokens, out.ref());
    compare_dispatch(out, 0, "dispatch");
    check_combine(baseline, expert_out, combine_weights, combined, 1, "combine");

    // A second combine through the same handle, other outputs.
    Buffer expert_out2 = expert_outputs(2);
    combined.fill_sentinel();
    MP_OK(sclMoeCombine(moe, handle, expert_out2.data(), combine_weights, combined.data(), stream));
    if (stream) MP_OK(sclStreamSynchronize(stream));
    check_combine(baseline, expert_out2, combine_weights, combined, 2, "second combine");

    // The handle reused: no ids, new weights; every output written again.
    out.reset();
    const sclMoeHandle_t before = handle;
    std::vector<float> w2 = work_.weights_with(w_.rank, 9);
    if (sc_.weights) std::copy(w2.begin(), w2.end(), in.weights_data());
    sclMoeTokens_t again = tokens;
    again.topkIdx = nullptr;
    MP_OK(sclMoeDispatch(moe, &again, &recv, &handle, stream));
    if (stream) MP_OK(sclStreamSynchronize(stream));
    global_tally().expect(handle == before, info_, "a reused handle is left as it was");
    baseline.dispatch(tokens, out.ref());
    compare_dispatch(out, sc_.weights ? 9 : 0, "dispatch reusing the handle");
    combined.fill_sentinel();
    MP_OK(sclMoeCombine(moe, handle, expert_out.data(), combine_weights, combined.data(), stream));
    if (stream) MP_OK(sclStreamSynchronize(stream));
    check_combine(baseline, expert_out, combine_weights, combined, 1, "combine after reuse");

    MP_OK(sclMoeHandleDestroy(handle));
    if (stream) MP_OK(sclStreamDestroy(stream));
    MP_OK(sclMoeDestroy(moe));
  }

 private:
  // The tokens a rank passes: uneven, the last rank none (from 3 ranks, or in every other
  // scenario from 2).
  std::vector<int> token_counts(const Scenario& sc) const {
    std::vector<int> t(size_t(w_.n));
    for (int r = 0; r < w_.n; ++r)
      t[size_t(r)] = 1 + (r * 7 + int(std::strlen(sc.name))) % kMaxTokens;
    const bool zero = w_.n >= 3 || (w_.n == 2 && std::strlen(sc.name) % 2 == 0);
    if (zero) t[size_t(w_.n - 1)] = 0;
    return t;
  }

  static RoutingSpec routing(const Scenario& sc) {
    RoutingSpec r;
    r.kind = sc.routing;
    r.zipf_s = 1.2;
    r.target = 0;
    return r;
  }

  Shape make_shape(const Scenario& sc, bool expert_major) const {
    const int n = w_.n;
    std::vector<int> owner;
    int experts = sc.experts_per_rank * n;
    if (sc.explicit_map) {
      experts = 2 * n + 1;
      for (int e = 0; e < experts; ++e) {
        int r = int(uint64_t(e) * 0x9E3779B1u % uint64_t(n));
        if (n >= 3 && r == 1) r = 2;  // rank 1 owns no expert
        owner.push_back(r);
      }
    }
    Shape s(n, w_.rank, sc.hidden, std::min(sc.topk, experts), experts, kMaxTokens, owner);
    s.x_type = sc.x, s.recv_type = sc.recv, s.out_type = sc.out;
    s.expert_major = expert_major;
    return s;
  }

  int T() const { return work_.tokens(w_.rank); }

  // This rank's inputs, in the scenario's memory.
  struct Inputs {
    Buffer x, scales, ids, weights;
    Inputs(const Shape& s, const Workload& w, const Scenario& sc)
        : x(sc.mem, s.x_type, size_t(w.tokens(s.rank)) * size_t(s.hidden), 0, 0, world().comm),
          scales(sc.mem, sclFloat32, size_t(w.tokens(s.rank)) * s.scale_cols(), 0, 0, world().comm),
          ids(sc.mem, sclInt64, w.ids(s.rank).size(), 0, 0, world().comm),
          weights(sc.mem, sclFloat32, w.weights(s.rank).size(), 0, 0, world().comm),
          fp8_(s.x_type == sclFloat8e4m3),
          tokens_(w.tokens(s.rank)),
          with_weights_(sc.weights) {
      w.fill_x(s.rank, x.data(), static_cast<float*>(scales.data()));
      std::copy(w.ids(s.rank).begin(), w.ids(s.rank).end(), static_cast<int64_t*>(ids.data()));
      std::copy(w.weights(s.rank).begin(), w.weights(s.rank).end(), weights_data());
    }
    float* weights_data() { return static_cast<float*>(weights.data()); }
    sclMoeTokens_t tokens() {
      sclMoeTokens_t t{};
      t.x = x.data();
      t.scales = fp8_ ? static_cast<const float*>(scales.data()) : nullptr;
      t.topkIdx = static_cast<const int64_t*>(ids.data());
      t.topkWeights = with_weights_ ? weights_data() : nullptr;
      t.numTokens = tokens_;
      return t;
    }
    bool fp8_;
    int tokens_;
    bool with_weights_;
  };

  // The receive buffers of the library and of the alltoallv reference.
  struct Outputs {
    Twin x, scales, ids, weights, per_expert, rows;
    bool fp8, token_major;
    Outputs(const Shape& s, Mem mem, unsigned char sentinel, sclComm_t comm)
        : x(mem, s.recv_type, s.max_recv_rows() * size_t(s.hidden), sentinel, comm),
          scales(mem, sclFloat32,
                 s.recv_type == sclFloat8e4m3 ? s.max_recv_rows() * s.scale_cols() : 0, sentinel,
                 comm),
          ids(mem, sclInt64, s.expert_major ? 0 : s.max_recv_rows() * size_t(s.topk), sentinel,
              comm),
          weights(mem, sclFloat32, s.expert_major ? 0 : s.max_recv_rows() * size_t(s.topk),
                  sentinel, comm),
          per_expert(mem, sclInt32, size_t(s.local_experts(s.rank)), sentinel, comm),
          rows(mem, sclInt32, 1, sentinel, comm),
          fp8(s.recv_type == sclFloat8e4m3),
          token_major(!s.expert_major) {}
    sclMoeRecv_t make(Buffer Twin::*side) {
      sclMoeRecv_t r{};
      r.x = (x.*side).data();
      r.scales = fp8 ? static_cast<float*>((scales.*side).data()) : nullptr;
      r.tokensPerExpert = static_cast<int*>((per_expert.*side).data());
      if (token_major) {
        r.topkIdx = static_cast<int64_t*>((ids.*side).data());
        r.topkWeights = static_cast<float*>((weights.*side).data());
        r.numRows = static_cast<int*>((rows.*side).data());
      }
      return r;
    }
    sclMoeRecv_t lib() { return make(&Twin::lib); }
    sclMoeRecv_t ref() { return make(&Twin::ref); }
    void reset() {
      for (Twin* t : {&x, &scales, &ids, &weights, &per_expert, &rows}) t->reset();
    }
  };

  void check_info(sclMoe_t moe) {
    int local = -1;
    size_t max_rows = 0;
    MP_OK(sclMoeGetInfo(moe, &local, &max_rows));
    global_tally().expect(local == shape_.local_experts(w_.rank), info_,
                          "localExperts " + std::to_string(local));
    global_tally().expect(max_rows == shape_.max_recv_rows(), info_,
                          "maxRecvRows " + std::to_string(max_rows));
  }

  // sclMoeDispatchLayout against the routing counted here.
  void check_layout(sclMoe_t moe) {
    const int R = w_.n, E = shape_.experts, t_count = T();
    std::vector<int> per_rank(size_t(R), -1), per_expert(size_t(E), -1);
    std::vector<uint8_t> in_rank(size_t(t_count) * size_t(R), 0xEE);
    MP_OK(sclMoeDispatchLayout(moe, work_.ids(w_.rank).data(), t_count, per_rank.data(),
                               per_expert.data(), in_rank.data()));
    std::vector<int> want_rank(size_t(R), 0), want_expert(size_t(E), 0);
    std::vector<uint8_t> want_in(in_rank.size(), 0);
    for (int t = 0; t < t_count; ++t) {
      for (int d : work_.destinations(w_.rank, t)) {
        ++want_rank[size_t(d)];
        want_in[size_t(t) * size_t(R) + size_t(d)] = 1;
      }
      for (int j = 0; j < shape_.topk; ++j) {
        const int64_t e = work_.ids(w_.rank)[size_t(t) * size_t(shape_.topk) + size_t(j)];
        if (e >= 0) ++want_expert[size_t(e)];
      }
    }
    CallInfo info = with_dtype(info_, sclInt32);
    info.coll = "moe-layout";
    global_tally().compare(info, "tokensPerRank", per_rank.data(), want_rank.data(), size_t(R));
    global_tally().compare(info, "tokensPerExpert", per_expert.data(), want_expert.data(),
                           size_t(E));
    global_tally().compare(with_dtype(info, sclUint8), "isTokenInRank", in_rank.data(),
                           want_in.data(), in_rank.size());
  }

  // The library's receive buffers equal the alltoallv reference's to the byte, and the rows it
  // wrote equal the local expectation.
  void compare_dispatch(Outputs& out, uint64_t weights_salt, const char* what) {
    CallInfo info = info_;
    info.coll = std::string("moe ") + what;
    Tally& tally = global_tally();
    for (auto [twin, name] : {std::pair{&out.x, "x"},
                              {&out.scales, "scales"},
                              {&out.ids, "topkIdx"},
                              {&out.weights, "topkWeights"},
                              {&out.per_expert, "tokensPerExpert"},
                              {&out.rows, "numRows"}}) {
      twin->lib.check(tally, with_dtype(info, twin->lib.dtype()), name, twin->ref_image());
    }
    const Workload::Received want = work_.expected_dispatch(w_.rank, sc_.weights, weights_salt);
    const Shape& s = shape_;
    info.coll += " (alltoallv reference vs expected)";
    tally.compare(with_dtype(info, sclInt32), "tokensPerExpert", out.per_expert.ref.data(),
                  want.tokens_per_expert.data(), want.tokens_per_expert.size());
    const size_t H = size_t(s.hidden), sc = s.scale_cols();
    if (!s.expert_major) {
      tally.compare(with_dtype(info, sclInt32), "numRows", out.rows.ref.data(), &want.rows, 1);
      const size_t rows = size_t(want.rows);
      tally.compare(with_dtype(info, s.recv_type), "x", out.x.ref.data(), want.x.data(), rows * H);
      if (out.fp8) {
        tally.compare(with_dtype(info, sclFloat32), "scales", out.scales.ref.data(),
                      want.scales.data(), rows * sc);
      }
      tally.compare(with_dtype(info, sclInt64), "topkIdx", out.ids.ref.data(), want.ids.data(),
                    want.ids.size());
      tally.compare(with_dtype(info, sclFloat32), "topkWeights", out.weights.ref.data(),
                    want.weights.data(), want.weights.size());
      return;
    }
    for (size_t e = 0; e < want.tokens_per_expert.size(); ++e) {
      const size_t first = e * s.expert_rows(), rows = size_t(want.tokens_per_expert[e]);
      tally.compare(with_dtype(info, s.recv_type), "x", out.x.ref.at(first * H),
                    want.x.data() + first * s.recv_row_bytes(), rows * H, (long long)(first * H));
      if (out.fp8) {
        tally.compare(with_dtype(info, sclFloat32), "scales",
                      static_cast<float*>(out.scales.ref.data()) + first * sc,
                      want.scales.data() + first * sc, rows * sc, (long long)(first * sc));
      }
    }
  }

  // This rank's combine input: the expert outputs of the rows it received.
  Buffer expert_outputs(uint64_t salt) {
    const std::vector<char> rows = work_.expert_out(w_.rank, salt);
    Buffer b(sc_.mem, shape_.out_type, shape_.max_recv_rows() * size_t(shape_.hidden), 0, 0,
             w_.comm);
    if (!rows.empty()) std::memcpy(b.data(), rows.data(), rows.size());
    return b;
  }

  void check_combine(moe_workload::AlltoallvExchange& baseline, const Buffer& expert_out,
                     const float* weights, const Buffer& combined, uint64_t salt,
                     const char* what) {
    CallInfo info = with_dtype(info_, shape_.out_type);
    info.coll = std::string("moe ") + what;
    std::vector<char> want = work_.expected_combine(w_.rank, salt, weights);
    std::vector<unsigned char> image = combined.image();
    // A rank with no tokens has nothing to expect; memcpy may not see null.
    if (!want.empty()) std::memcpy(combined.image_data(image), want.data(), want.size());
    combined.check(global_tally(), info, "out", image);
    // The alltoallv reference gives the same bits.
    std::vector<char> ref(want.size() + 1);
    baseline.combine(expert_out.data(), weights, ref.data());
    info.coll += " (alltoallv reference)";
    global_tally().compare(info, "out", ref.data(), want.data(),
                           size_t(T()) * size_t(shape_.hidden));
  }

  const Scenario& sc_;
  const Comm& w_;
  bool expert_major_;
  Shape shape_;
  Workload work_;
  unsigned char sentinel_;
  CallInfo info_;
};

// Every rank passes a config that differs on one rank: sclInvalidUsage everywhere, and the
// communicator goes on.
void check_config_mismatch() {
  const Comm& w = world();
  if (w.n < 2) return;
  Shape s(w.n, w.rank, w.rank == w.n - 1 ? 256 : 128, 2, 2 * w.n, 8);
  const sclMoeConfig_t config = s.config();
  sclMoe_t moe = reinterpret_cast<sclMoe_t>(&s);  // must come back NULL
  const sclResult_t r = sclMoeCreate(w.comm, &config, &moe);
  CallInfo info;
  info.coll = "moe create with configs that differ";
  global_tally().expect(
      r == sclInvalidUsage && moe == nullptr, info,
      std::string("returned ") + sclGetErrorString(r) + ": " + sclGetLastError(w.comm));
  Shape same(w.n, w.rank, 128, 2, 2 * w.n, 8);
  const sclMoeConfig_t good = same.config();
  const sclResult_t again = sclMoeCreate(w.comm, &good, &moe);
  global_tally().expect(again == sclSuccess, info, "a matching create afterwards");
  if (again == sclSuccess) MP_OK(sclMoeDestroy(moe));
}

}  // namespace

int run_moe(int argc, char**) {
  if (argc != 0) fatal("moe: takes no arguments");
  const double start = now();
  try {
    uint64_t seed = 0x40E;
    for (const Scenario& sc : kScenarios) {
      for (bool expert_major : {false, true}) {
        ScenarioRun(sc, expert_major, ref::make_seed(seed++)).run();
      }
    }
    check_config_mismatch();
  } catch (const std::exception& e) {
    fatal("moe: %s", e.what());
  }
  if (world().rank == 0)
    std::printf("moe: %zu scenarios x 2 layouts in %.2f s\n", std::size(kScenarios), now() - start);
  return finish("moe");
}

}  // namespace mp
