// Part of case `hosts` (test_hosts.cc): mismatches inside a host in the collectives whose network
// step is a batch with ranks beyond the rail (net::Rail::exchange, exchange_even): alltoall by rail
// and direct, gather and scatter. Local rank 1 of host 0 (the root's host) calls with twice the
// others' count; its host's local step fails, and its ranks still run the call's network batch
// void (net::Rail::fail_call), which tells every rank it sends to or hears from. The call must
// fail on every rank, with sclInvalidUsage, and the matched call after it be right everywhere: the
// hosts stay in step, where skipping the batch would leave the other hosts' messages for the
// next call to meet (and end the communicator there). Where twice the count takes rank 1's
// blocks past the one-sided size (STRATACL_NET_ONE_SIDED_MIN_BYTES, or less where a rank hears
// from three ranks or more: net::Rail::one_sided_at) and the others' not, its void batch is
// one-sided and theirs two-sided: messages meet clear-to-sends and notices, which the provider
// cannot take back, so the communicator may end there: the next call must be right everywhere or
// fail everywhere, within seconds, as after a mismatch between hosts. Where both sizes are on
// one side, it must be right everywhere.
#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

#include "calls.h"
#include "hosts.h"
#include "net/rail.h"

namespace mp {
namespace {

enum class Exchange {
  kAlltoAllByRail,
  kAlltoAllDirectSmallest,
  kAlltoAllDirect96,
  kAlltoAllDirect128,
  kGather,
  kScatter
};

const char* name_of(Exchange e) {
  switch (e) {
    case Exchange::kAlltoAllByRail:
      return "alltoall by rail";
    case Exchange::kAlltoAllDirectSmallest:
      return "alltoall direct, the smallest blocks";
    case Exchange::kAlltoAllDirect96:
      return "alltoall direct, 96 KiB + 4 blocks";
    case Exchange::kAlltoAllDirect128:
      return "alltoall direct, 128 KiB + 4 blocks";
    case Exchange::kGather:
      return "gather";
    case Exchange::kScatter:
      return "scatter";
  }
  return "?";
}

// One call of `e` with `count` elements per block, root 0. Block r of `in` holds r + 1 on the
// root (scatter) and everyone's block holds rank + 1 elsewhere; `out` takes n blocks.
sclResult_t issue(Exchange e, const std::vector<int32_t>& in, std::vector<int32_t>& out,
                  size_t count, sclComm_t comm) {
  switch (e) {
    case Exchange::kGather:
      return sclGather(in.data(), out.data(), count, sclInt32, 0, comm, nullptr);
    case Exchange::kScatter:
      return sclScatter(in.data(), out.data(), count, sclInt32, 0, comm, nullptr);
    default:
      return sclAlltoAll(in.data(), out.data(), count, sclInt32, comm, nullptr);
  }
}

// Whether the matched call's output is right on this rank.
bool right_here(Exchange e, const std::vector<int32_t>& out, size_t count, const Comm& w) {
  const size_t n = size_t(w.n);
  switch (e) {
    case Exchange::kGather:
      if (w.rank != 0) return true;
      for (size_t i = 0; i < count * n; ++i) {
        if (out[i] != int32_t(i / count) + 1) return false;
      }
      return true;
    case Exchange::kScatter:
      for (size_t i = 0; i < count; ++i) {
        if (out[i] != w.rank + 1) return false;
      }
      return true;
    default:
      // Block s of our output is rank s's block for us: (s, us) encoded as s * n + us + 1.
      for (size_t i = 0; i < count * n; ++i) {
        if (out[i] != int32_t((i / count) * n + size_t(w.rank)) + 1) return false;
      }
      return true;
  }
}

void fill_input(Exchange e, std::vector<int32_t>& in, size_t count, const Comm& w) {
  const size_t n = size_t(w.n);
  for (size_t i = 0; i < in.size(); ++i) {
    const size_t block = i / count;
    if (e == Exchange::kScatter) {
      in[i] = int32_t(block) + 1;
    } else if (e == Exchange::kGather) {
      in[i] = w.rank + 1;
    } else {
      in[i] = int32_t(size_t(w.rank) * n + block % n) + 1;
    }
  }
}

// Whether blocks of `count` and of twice it (4-byte elements), each taken from `senders` ranks at
// once, fall on either side of the one-sided size the test runs with (default 256 KiB), so that
// rank 1's batch and its peers' are of two kinds.
bool straddles(size_t count, int senders) {
  const char* env = std::getenv("STRATACL_NET_ONE_SIDED_MIN_BYTES");
  const int64_t min = env ? std::atoll(env) : 256 << 10;
  using stratacl::net::Rail;
  return Rail::one_sided_at(min, 4 * count, senders) != Rail::one_sided_at(min, 8 * count, senders);
}

void exchange_mismatch_keeps_hosts_in_step(const Comm& w, Tally& tally, Exchange e) {
  const int per = ranks_per_host();
  if (per < 2) return;  // a lone rank has no local step to fail in
  // By rail: a host's L blocks in one message up to 128 KiB (hier/alltoall.cc); direct: beyond,
  // with the smallest blocks that go direct and no smaller than 48 KiB + 4 (twice: 96 KiB + 8),
  // blocks of 96 KiB + 4 (twice: 192 KiB + 8) and 128 KiB + 4 (twice: 256 KiB + 8). At the
  // default one-sided size, where a rank takes blocks from one or two ranks on other hosts only
  // the last pair straddles it (256 KiB); from three (256 KiB over their count, not below 64
  // KiB), only the first, where L > 2.
  const size_t direct_min = std::max<size_t>(size_t(12) << 10, (size_t(32) << 10) / size_t(per));
  const size_t count = e == Exchange::kAlltoAllByRail           ? 16
                       : e == Exchange::kAlltoAllDirectSmallest ? direct_min + 1
                       : e == Exchange::kAlltoAllDirect96       ? (size_t(24) << 10) + 1
                                                                : (size_t(32) << 10) + 1;
  const size_t n = size_t(w.n), odd = w.rank == 1 ? 2 : 1;
  std::vector<int32_t> in(2 * count * n), out(2 * count * n, -1);
  fill_input(e, in, odd * count, w);
  sclComm_t child = nullptr;
  MP_OK(sclCommSplit(w.comm, 0, w.rank, &child, nullptr));
  const double t0 = now();
  const sclResult_t first = issue(e, in, out, odd * count, child);
  const std::string first_msg = sclGetLastError(child);
  fill_input(e, in, count, w);
  std::fill(out.begin(), out.end(), -1);  // the first call's leftovers must not pass as output
  const sclResult_t second = issue(e, in, out, count, child);
  const std::string second_msg = sclGetLastError(child);
  const double took = now() - t0;
  const bool right = second == sclSuccess && right_here(e, out, count, w);
  const CallInfo info{std::string(name_of(e)) + " local mismatch",
                      sclInt32,
                      -1,
                      count,
                      e == Exchange::kGather || e == Exchange::kScatter ? 0 : -1,
                      "local rank 1 of the root's host calls twice the count"};
  const bool direct =
      e != Exchange::kAlltoAllByRail && e != Exchange::kGather && e != Exchange::kScatter;
  if (direct && straddles(count, w.n - per)) {
    hosts_in_step(w, tally, info, first, first_msg, second, right, took);
  } else {
    failed_then_right(tally, info, first, first_msg, false, second, second_msg, right, took);
  }
  MP_OK(sclCommDestroy(child));
}

}  // namespace

void exchange_mismatches_keep_hosts_in_step(const Comm& w, Tally& tally) {
  for (Exchange e :
       {Exchange::kAlltoAllByRail, Exchange::kAlltoAllDirectSmallest, Exchange::kAlltoAllDirect96,
        Exchange::kAlltoAllDirect128, Exchange::kGather, Exchange::kScatter}) {
    exchange_mismatch_keeps_hosts_in_step(w, tally, e);
  }
}

}  // namespace mp
