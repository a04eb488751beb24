// Case `hosts`: collectives across hosts (run under stratarun --netns, one namespace per host).
//   - allreduce, broadcast, reduce, allgather, reducescatter with counts around the per-host
//     shard and tail boundaries (0, 1, L-1 .. L+1, odd sizes, 1Mi+3), every root, heap and
//     malloc buffers, in place and out of place; every element and guard checked bitwise; small
//     allreduces split over the rails (16384 and 6001 elements); scatter-gather over 4 hosts
//     and more (65537 and 65538 elements); broadcasts down the chain of hosts and beside it
//     (384 KiB-3 MiB, from every host), split over the rails from blocks of 128 KiB, one-sided
//     or as messages; broadcasts down trees of hosts from 4 hosts (every count, every root).
//     Exact reductions only (integer sum/prod/avg, float max/min): the hierarchy adds floats in
//     another association than rank order, which float32 sum checks below instead.
//   - float32 sum allreduce: bit-identical on every rank, and within rounding of the rank-order
//     reference. Float max and min with NaNs and signed zeros: what one host gives, bitwise.
//     fp16 and fp8 averages whose sums would overflow: in range.
//   - allgather and reducescatter on a duplicate with the smallest staging area (64 KiB), whose
//     local step of H runs goes through it in several rounds.
//   - barrier: a rank that arrives 200 ms late (the last of each host in turn) holds every other
//     rank on every host.
//   - broadcasts and reduces back to back keep pace with a late host: test_hosts_pace.cc.
//   - alltoall, alltoallv, gather, scatter (every root) and a send/recv ring, the same way.
//   - splits: one rank per host (the child spans hosts), one host per child, keys that interleave
//     hosts and every rank but the last (flat, each rank its own network node, where a host holds
//     several ranks), the hosts' halves in turn and every rank but the last host's upper half
//     (nodes of 2 at 2x4); each rank's child rank checked against the keys.
//   - mismatched calls across hosts: test_hosts_mismatch.cc, test_hosts_exchange_mismatch.cc;
//     an empty call against counted ones: test_hosts_empty.cc.
// With --small, only the first item's calls up to 1000 elements and the float32 sum of 7.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "calls.h"
#include "core/hash.h"
#include "hosts.h"
#include "reduce/convert.h"
#include "reference.h"
#include "tests.h"

namespace mp {

int ranks_per_host() {
  const char* per = std::getenv("STRATACL_LOCAL_WORLD_SIZE");
  return per ? std::atoi(per) : 1;
}

const char* host_unit() {
  const char* cut = std::getenv("MP_HOSTS_CUT");
  return cut && std::string(cut) == "1" ? "node" : "host";
}

namespace {

const Placement kPlacements[] = {
    {"heap", Mem::kHeap, 0, Mem::kHeap, 0, false},
    {"malloc+1", Mem::kMalloc, 1, Mem::kMalloc, 1, false},
    {"heap", Mem::kHeap, 0, Mem::kHeap, 0, true},
    {"malloc+1", Mem::kMalloc, 0, Mem::kMalloc, 1, true},
};

void float_sum_is_deterministic(const Comm& w, Tally& tally, size_t count, uint64_t seed) {
  std::vector<float> in(count), out(count), want(count);
  ref::fill_input(in.data(), sclFloat32, ref::Kind::kSum, seed, w.rank, 0, count);
  MP_OK(sclAllReduce(in.data(), out.data(), count, sclFloat32, sclSum, w.comm, nullptr));
  ref::fill_reduced(want.data(), sclFloat32, sclSum, seed, w.n, 0, count);
  CallInfo info{"allreduce float32 sum", sclFloat32, sclSum, count, -1, "across hosts"};
  size_t far = 0;
  for (size_t i = 0; i < count; ++i) {
    // Inputs lie in [-16, 16): a sum of n of them rounds by at most n ulps of 16 * n.
    far += std::fabs(out[i] - want[i]) > float(w.n) * 16.0f * float(w.n) * 1.2e-7f;
  }
  tally.expect(far == 0, info, std::to_string(far) + " elements beyond rounding");
  // Every rank must hold the very same bits.
  uint64_t mine = stratacl::fnv1a(stratacl::kFnvBasis, out.data(), count * sizeof(float));
  std::vector<uint64_t> all(size_t(w.n));
  MP_OK(sclAllGather(&mine, all.data(), 1, sclUint64, w.comm, nullptr));
  for (int r = 0; r < w.n; ++r) {
    tally.expect(all[size_t(r)] == all[0], info, "rank " + std::to_string(r) + " differs");
  }
}

// Float max and min skip NaNs and take -0 < +0 (reduce.h), so that the hierarchy's grouping of
// the ranks (each host first, then rings, rounds or a direct round over hosts) gives what one
// host gives. Element i holds a NaN on rank i % n, and on the others -0 (rank 0) or +0, or the
// rank's number: 7 elements (the direct round or rounds) and 40007 (160 KiB: the ring at 2 and 3
// hosts, scatter-gather from 4), every rank checked against the rule, bitwise.
void float_max_min_group_alike(const Comm& w, Tally& tally) {
  const auto value = [&](int r, size_t i) {
    if (size_t(r) == i % size_t(w.n)) return std::nanf("");
    if (i % 3 == 0) return r == 0 ? -0.0f : 0.0f;
    return float((size_t(r) * 7 + i) % 11) - 5.0f;
  };
  for (const sclRedOp_t op : {sclMax, sclMin}) {
    for (const size_t count : {size_t(7), size_t(40007)}) {
      std::vector<float> in(count), out(count), want(count);
      for (size_t i = 0; i < count; ++i) {
        in[i] = value(w.rank, i);
        float m = std::nanf("");
        for (int r = 0; r < w.n; ++r) {
          const float v = value(r, i);
          if (std::isnan(v)) continue;
          if (std::isnan(m) || (op == sclMax ? v > m : v < m)) m = v;
          if (v == m && std::signbit(v) != std::signbit(m)) m = op == sclMax ? 0.0f : -0.0f;
        }
        want[i] = m;
      }
      MP_OK(sclAllReduce(in.data(), out.data(), count, sclFloat32, op, w.comm, nullptr));
      tally.compare(CallInfo{"allreduce", sclFloat32, op, count, -1, "NaN and signed zeros"}, "out",
                    out.data(), want.data(), count);
    }
  }
}

// An average of fp16 or fp8 across hosts divides each input by the world size before any sum, so
// it stays in range wherever the average does: fp16 inputs of 40000 (two of them overflow fp16) and
// fp8 e4m3 ones of 320 (saturating at 448) average to themselves, within the rounding of the
// quotients and of the sums over hosts.
void narrow_average_stays_in_range(const Comm& w, Tally& tally) {
  const size_t count = 1001;
  std::vector<uint16_t> half(count, stratacl::reduce::float_to_half(40000.0f)), half_out(count);
  MP_OK(sclAllReduce(half.data(), half_out.data(), count, sclFloat16, sclAvg, w.comm, nullptr));
  std::vector<uint8_t> fp8(count, 0x7A), fp8_out(count);  // e4m3 320
  MP_OK(sclAllReduce(fp8.data(), fp8_out.data(), count, sclFloat8e4m3, sclAvg, w.comm, nullptr));
  size_t far = 0;
  for (size_t i = 0; i < count; ++i) {
    far += !(std::fabs(stratacl::reduce::half_to_float(half_out[i]) - 40000.0f) <= 400.0f);
    far += !(std::fabs(stratacl::reduce::e4m3_to_float(fp8_out[i]) - 320.0f) <= 48.0f);
  }
  tally.expect(far == 0, CallInfo{"allreduce", sclFloat16, sclAvg, count, -1, "and fp8 e4m3"},
               std::to_string(far) + " elements out of range");
}

// The last rank of each host in turn: in a barrier's rounds of dissemination (net::Rail::barrier)
// every host hears of each other host by another path.
void late_rank_holds_the_barrier(const Comm& w, Tally& tally) {
  const int per_host = ranks_per_host();
  for (int late = per_host - 1; late < w.n; late += per_host) {
    MP_OK(sclBarrier(w.comm, nullptr));
    const double t0 = now();
    if (w.rank == late) std::this_thread::sleep_for(std::chrono::milliseconds(200));
    MP_OK(sclBarrier(w.comm, nullptr));
    const double waited = now() - t0;
    tally.expect(waited > 0.15, CallInfo{"barrier", sclUint8, -1, 0, late, "across hosts"},
                 "left after " + std::to_string(waited) + " s, before the late rank arrived");
  }
}

// Splits of a communicator across hosts: one rank per host (a child that spans the hosts), one
// host per child (children without network); and layouts the hierarchy cannot take as they are,
// which run on smaller network nodes (net::Topology::nodes()): keys that interleave hosts (every
// rank its own node), every rank but the last (the same where a host holds several; the last rank
// alone in a child of its own), the hosts' halves in turn where a host holds an even number (at
// 2x4 runs of 2, nodes of 2) and every rank but the last host's upper half (at 2x4 4 + 2 ranks,
// nodes of 2; at L = 2 every rank its own node).
template <typename RunOn>
void splits(const Comm& w, Tally& tally, RunOn&& run_on) {
  const int per_host = ranks_per_host();
  const int hosts = w.n / per_host, local = w.rank % per_host;
  const bool last = w.rank == w.n - 1;
  const int host = w.rank / per_host, interleaved = local * hosts + host;
  const int half = per_host % 2 ? per_host : per_host / 2;  // odd: the whole host
  const int in_turn = local / half * hosts * half + host * half + local % half;
  const int upper = per_host / 2;  // the last host's ranks from this local rank on split off
  const bool split_off = host == hosts - 1 && local >= upper;
  const struct {
    const char* name;
    int color, key, ranks, rank;  // `rank`: ours in the child, by key
  } shapes[] = {
      {"one rank per host", local, w.rank, hosts, host},
      {"one host", host, w.rank, per_host, local},
      {"hosts interleaved", 0, interleaved, w.n, interleaved},
      {"all but the last rank", last ? 1 : 0, w.rank, last ? 1 : w.n - 1, last ? 0 : w.rank},
      {"the hosts' halves in turn", 0, in_turn, w.n, in_turn},
      {"all but the last host's upper half", split_off ? 1 : 0, w.rank,
       split_off ? per_host - upper : w.n - (per_host - upper),
       split_off ? local - upper : w.rank}};
  for (const auto& sh : shapes) {
    sclComm_t child = nullptr;
    MP_OK(sclCommSplit(w.comm, sh.color, sh.key, &child, nullptr));
    const Comm c = describe(child);
    tally.expect(c.n == sh.ranks && c.rank == sh.rank,
                 CallInfo{"split", sclUint8, -1, 0, -1, sh.name},
                 "rank " + std::to_string(c.rank) + " of " + std::to_string(c.n));
    run_on(c, Coll::kAllReduce, sclInt32, sclSum, 4097, -1);
    run_on(c, Coll::kAllGather, sclUint8, -1, 1001, -1);
    run_on(c, Coll::kBroadcast, sclFloat32, -1, 70000, c.n - 1);
    run_on(c, Coll::kAlltoAll, sclInt64, -1, 3001, -1);
    run_on(c, Coll::kReduceScatter, sclUint8, sclMax, 65537, -1);
    MP_OK(sclCommDestroy(child));
  }
}

}  // namespace

int run_hosts(int argc, char** argv) {
  // --small: only the first loop's calls of up to 1000 elements, every collective, dtype, op, root
  // and placement, and one float sum's bits on every rank. The sanitizer builds run it at 3x2,
  // where small allreduces and reduce-scatters go spread over a host's ranks (hier/spread.h); the
  // whole case at 3 hosts is heavy there.
  const bool small = argc == 1 && std::string(argv[0]) == "--small";
  if (argc != 0 && !small) fatal("hosts: takes no arguments but --small");
  const Comm& w = world();
  Tally& tally = global_tally();
  uint64_t call_index = 0;
  auto run_on = [&](const Comm& on, Coll coll, sclDataType_t dtype, int op, size_t count,
                    int root) {
    for (const Placement& pl : kPlacements) {
      if (pl.in_place && !has_in_place(coll)) continue;
      CallSpec spec;
      spec.coll = coll;
      spec.dtype = dtype;
      spec.op = op;
      spec.count = count;
      spec.root = root;
      spec.placement = pl;
      spec.seed = ref::make_seed(0x4057, ++call_index);
      PreparedCall call(on, spec);
      const sclResult_t r = call.issue(nullptr);
      if (r != sclSuccess) {
        fatal("%s returned %d (%s): %s", call.info().text().c_str(), int(r), sclGetErrorString(r),
              sclGetLastError(on.comm));
      }
      call.verify(tally);
    }
  };
  auto run = [&](Coll coll, sclDataType_t dtype, int op, size_t count, int root) {
    run_on(w, coll, dtype, op, count, root);
  };
  const size_t n = size_t(w.n);
  const struct {
    sclDataType_t dtype;
    sclRedOp_t op;
  } exact[] = {{sclInt32, sclSum}, {sclInt64, sclProd},  {sclFloat32, sclMax},
               {sclUint8, sclAvg}, {sclFloat64, sclMin}, {sclInt32, sclAvg}};
  std::vector<size_t> counts = {0, 1, n - 1, n, n + 1, 1000, 65537};
  if (small) counts = {1, n + 1, 1000};
  for (size_t count : counts) {
    for (const auto& e : exact) {
      run(Coll::kAllReduce, e.dtype, e.op, count, -1);
      run(Coll::kReduceScatter, e.dtype, e.op, count, -1);
      for (int root = 0; root < w.n; ++root) run(Coll::kReduce, e.dtype, e.op, count, root);
    }
    for (int root = 0; root < w.n; ++root) run(Coll::kBroadcast, sclUint8, -1, count, root);
    run(Coll::kAllGather, sclFloat32, -1, count, -1);
    run(Coll::kAllGather, sclUint8, -1, count, -1);
    run(Coll::kAlltoAll, sclInt32, -1, count, -1);
    run(Coll::kAlltoAllv, sclUint8, -1, count, -1);
    run(Coll::kSendRecvRing, sclFloat64, -1, count, -1);
    for (int root = 0; root < w.n; ++root) {
      run(Coll::kGather, sclInt64, -1, count, root);
      run(Coll::kScatter, sclUint8, -1, count, root);
    }
  }
  float_max_min_group_alike(w, tally);
  narrow_average_stays_in_range(w, tally);
  if (small) {
    float_sum_is_deterministic(w, tally, 7, ref::make_seed(0xF10A7, 7));
    return finish("hosts");
  }
  // Small allreduces split over the rails once the copies a host's rails would send alike are
  // large (hier/allreduce.cc): 16384 4-byte elements at 2x2, 3x2 and 2x4 (no tail); 6001 8-byte
  // ones at 3x2 and 2x4, and 4-byte ones at 2x4, with a tail of one element.
  for (size_t count : {size_t(16384), size_t(6001)}) {
    for (const auto& e : exact) run(Coll::kAllReduce, e.dtype, e.op, count, -1);
  }
  // From 4 hosts a rail allreduce above 64 KiB scatters and gathers while H - 1 of its chunks
  // total at most 192 KiB (net/rail.h): at 4x1 the 1- and 4-byte ones of 65537 and 65538
  // elements (one host's chunk one element longer, or two hosts'), while the 8-byte ones take
  // the ring; at 6x1 the 1-byte ones (65537 = 6 x 10922 + 5), the 4-byte ones the ring.
  for (const auto& e : exact) run(Coll::kAllReduce, e.dtype, e.op, 65538, -1);
  run(Coll::kAllReduce, sclInt32, sclProd, 65538, -1);  // a product by scatter-gather too
  const size_t big = (size_t(1) << 20) + 3;
  run(Coll::kAllReduce, sclInt32, sclSum, big, -1);
  run(Coll::kBroadcast, sclFloat32, -1, big, w.n - 1);
  // From 3 hosts a large broadcast goes down a chain of hosts in segments where that costs less
  // than the flat one at 3 hosts or the binomial tree from 4 (Rail::chain_segments; the unit
  // tests check its counts). Segments at 3, 4 and 6 hosts: 384 KiB + 1 flat, tree, tree; 512 KiB
  // flat (a tie), tree, tree; 512 KiB + 5 2, tree, tree; 1 MiB + 3 3, 4, 6; 3 MiB + 1 5, 7, 10
  // (and the 4 MiB + 12 above 6, 8, 11). Below the default one-sided threshold (256 KiB)
  // segments go as messages: 1 MiB + 3 at 6 hosts. Sizes that do not divide, from the first and
  // last rank of each host. With several ranks per host they split over the rails where a
  // rail's block is at least 128 KiB (hier::broadcast_splits): all five at 2x2, 3x2 and 4x2
  // (every transfer one-sided at 2x2 and 3x2), where at 3x2 and 4x2 each rail's chain takes the
  // whole buffer's segment count (3x2: flat, flat, 2, 3, 5, down to 128 KiB + 1 per segment;
  // 4x2: the tree for the first three, then 4 and 7); at 2x4 (one-sided from 256 KiB) the last
  // four: blocks of 128 KiB (messages) with tails of 0 and 1 element, and of 256 KiB and 768 KiB
  // with tails of 3 and 1.
  const int per_host = ranks_per_host();
  for (size_t count : {(size_t(384) << 10) + 1, size_t(512) << 10, (size_t(512) << 10) + 5,
                       (size_t(1) << 20) + 3, (size_t(3) << 20) + 1}) {
    for (int root = 0; root < w.n; ++root) {
      if (root % per_host == 0 || root % per_host == per_host - 1) {
        run(Coll::kBroadcast, sclUint8, -1, count, root);
      }
    }
  }
  run(Coll::kReduce, sclInt32, sclSum, big, 0);
  // Transfers of 160 KiB + 4: one-sided where a rank takes them from three or more ranks at once
  // (the direct rounds and the reduce's root from 4 hosts, the alltoall's and the gather's root
  // from 3 ranks on other hosts: 2x4, 3x3 and every layout from 4 hosts; 3x2 runs with every
  // transfer one-sided), messages elsewhere (net::Rail::one_sided_at).
  const size_t mid = (size_t(40) << 10) + 1;
  run(Coll::kAllGather, sclFloat32, -1, mid, -1);
  run(Coll::kReduceScatter, sclInt32, sclSum, mid, -1);
  run(Coll::kAlltoAll, sclInt32, -1, mid, -1);
  run(Coll::kGather, sclInt32, -1, mid, w.n - 1);
  run(Coll::kReduce, sclInt32, sclSum, mid, w.n - 1);
  run(Coll::kAllGather, sclFloat32, -1, big / n, -1);
  run(Coll::kReduceScatter, sclInt32, sclSum, big / n, -1);
  run(Coll::kAlltoAll, sclFloat32, -1, big / n, -1);
  run(Coll::kAlltoAllv, sclFloat32, -1, big / n, -1);
  run(Coll::kSendRecvRing, sclFloat32, -1, big, -1);
  for (size_t count : {size_t(7), size_t(16384), size_t(50001), size_t(100003), big}) {
    float_sum_is_deterministic(w, tally, count, ref::make_seed(0xF10A7, count));
  }
  late_rank_holds_the_barrier(w, tally);
  one_way_calls_keep_pace(w, tally);
  // The local step of H runs cut into rounds: on a duplicate of the world with the smallest
  // staging area, malloc buffers go through it H blocks (allgather) or L x H (reduce-scatter) at
  // a time, 10007 elements of each in 2 to 5 rounds.
  {
    sclConfig_t config = SCL_CONFIG_INITIALIZER;
    config.stagingBytes = 64 << 10;
    sclComm_t small = nullptr;
    MP_OK(sclCommSplit(w.comm, 0, w.rank, &small, &config));
    const Comm sc = describe(small);
    run_on(sc, Coll::kAllGather, sclInt32, -1, 10007, -1);
    run_on(sc, Coll::kReduceScatter, sclInt32, sclSum, 10007, -1);
    MP_OK(sclCommDestroy(small));
  }

  splits(w, tally, run_on);
  mismatches_across_hosts(w, tally);
  empty_call_against_counted_fails_everywhere(w, tally);
  run(Coll::kAllReduce, sclInt32, sclSum, 1000, -1);  // the parent goes on
  return finish("hosts");
}

}  // namespace mp
