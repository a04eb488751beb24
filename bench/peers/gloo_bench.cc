// Gloo peer of scl-bench: the same sizes, warm-up, iterations, busbw and check as every peer
// (peer_common.h), float32 sum, over Gloo's TCP transport on loopback (the only transport of
// Debian's libgloo-dev besides ibverbs; it has no shared-memory one).
//
//   g++ -std=c++17 -O2 -o gloo_bench gloo_bench.cc -lgloo -pthread
//   build/tools/stratarun -n 2 ./gloo_bench --store /tmp/dir -b 8 -e 256M
//
// Ranks come from STRATACL_RANK and STRATACL_WORLD_SIZE (set by stratarun) or RANK and
// WORLD_SIZE; rendezvous is gloo::rendezvous::FileStore in --store DIR (fresh per run; every rank
// must see the same directory). Collectives:
//   allreduce       gloo::allreduce, out of place, Gloo's default algorithm (ring), sum<float>
//   allgather       gloo::allgather, out of place
//   reduce_scatter  skipped unless GLOO_BENCH_REDUCE_SCATTER=1. Gloo's only reduce-scatter,
//                   gloo::ReduceScatterHalvingDoubling, is in place and leaves each rank's
//                   reduced chunk at the start of its buffer; but its distribution phase copies
//                   that chunk over the region the rank is still sending to its peer (it never
//                   waits for its sends), so large messages arrive partly overwritten: the check
//                   found about 4 million wrong elements at 256 MiB on 2 ranks in one run and
//                   none in another (it depends on timing). With the variable set, it runs, in
//                   place, without refilling the input between timed calls.
//   alltoall        gloo::alltoall, out of place
//   broadcast       gloo::broadcast from root 0, out of place on the root
#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/alltoall.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/config.h>
#include <gloo/math.h>
#include <gloo/reduce_scatter.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/transport/tcp/device.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "peer_common.h"

namespace {

constexpr std::chrono::minutes kTimeout(10);

int env_int(const char* first, const char* second, int fallback) {
  for (const char* name : {first, second}) {
    if (const char* value = std::getenv(name); value != nullptr && *value != '\0') {
      return std::atoi(value);
    }
  }
  return fallback;
}

class GlooBench {
 public:
  GlooBench(std::shared_ptr<gloo::Context> context, size_t cap_elems)
      : context_(std::move(context)),
        rank_(context_->rank),
        nranks_(context_->size),
        send_(cap_elems, 0.0f),
        recv_(cap_elems, 0.0f) {}

  // Where this rank's output of collective c lies: ReduceScatterHalvingDoubling leaves the
  // rank's reduced chunk at the start of its (in-place) buffer.
  const float* output(int c) const {
    return c == PEER_REDUCE_SCATTER ? send_.data() : recv_.data();
  }

  // Everything a timed call needs, set up once per size (Gloo registers buffers when options
  // or algorithms are built, so that stays out of the timing, as MPI's would).
  void prepare(int c, size_t count) {
    const size_t chunk = count / static_cast<size_t>(nranks_);
    float* send = send_.data();
    float* recv = recv_.data();
    reduce_scatter_.reset();
    switch (c) {
      case PEER_ALLREDUCE:
        call_ = [this, send, recv, count] {
          gloo::AllreduceOptions opts(context_);
          opts.setInput(send, count);
          opts.setOutput(recv, count);
          opts.setReduceFunction(
              static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::sum<float>));
          opts.setTimeout(kTimeout);
          gloo::allreduce(opts);
        };
        break;
      case PEER_ALLGATHER:
        call_ = [this, send, recv, chunk, count] {
          gloo::AllgatherOptions opts(context_);
          opts.setInput(send, chunk);
          opts.setOutput(recv, count);
          opts.setTimeout(kTimeout);
          gloo::allgather(opts);
        };
        break;
      case PEER_REDUCE_SCATTER:
        reduce_scatter_ = std::make_unique<gloo::ReduceScatterHalvingDoubling<float>>(
            context_, std::vector<float*>{send}, static_cast<int>(count),
            std::vector<int>(nranks_, static_cast<int>(chunk)));
        call_ = [this] { reduce_scatter_->run(); };
        break;
      case PEER_ALLTOALL:
        call_ = [this, send, recv, count] {
          gloo::AlltoallOptions opts(context_);
          opts.setInput(send, count);
          opts.setOutput(recv, count);
          opts.setTimeout(kTimeout);
          gloo::alltoall(opts);
        };
        break;
      case PEER_BROADCAST:
        call_ = [this, send, recv, count] {
          gloo::BroadcastOptions opts(context_);
          if (rank_ == 0) opts.setInput(send, count);
          opts.setOutput(recv, count);
          opts.setRoot(0);
          opts.setTimeout(kTimeout);
          gloo::broadcast(opts);
        };
        break;
    }
  }

  void call() { call_(); }

  // The check run: verifiable input, NaN output, one call, wrong elements over all ranks.
  uint64_t check_once(int c, size_t count) {
    size_t in = 0, out = 0;
    peer_geometry(c, count, nranks_, rank_, &in, &out);
    if (c == PEER_REDUCE_SCATTER) {
      peer_fill(send_.data(), in, rank_);  // in place: the output is part of the input
    } else {
      peer_fill_nan(recv_.data(), out);
      peer_fill(send_.data(), in, c == PEER_BROADCAST ? 0 : rank_);
    }
    call();
    const uint64_t wrong = peer_count_wrong(c, output(c), count, nranks_, rank_);
    return static_cast<uint64_t>(reduce(static_cast<double>(wrong), &gloo::sum<double>));
  }

  void barrier() {
    gloo::BarrierOptions opts(context_);
    opts.setTimeout(kTimeout);
    gloo::barrier(opts);
  }

  // The reduction of one double over the ranks.
  double reduce(double local, void (*fn)(void*, const void*, const void*, size_t)) {
    double in = local, out = 0;
    gloo::AllreduceOptions opts(context_);
    opts.setInput(&in, 1);
    opts.setOutput(&out, 1);
    opts.setReduceFunction(fn);
    opts.setTimeout(kTimeout);
    gloo::allreduce(opts);
    return out;
  }

  int rank() const { return rank_; }
  int nranks() const { return nranks_; }

 private:
  std::shared_ptr<gloo::Context> context_;
  int rank_;
  int nranks_;
  std::vector<float> send_;  // value-initialised: every page touched before timing
  std::vector<float> recv_;
  std::unique_ptr<gloo::ReduceScatterHalvingDoubling<float>> reduce_scatter_;
  std::function<void()> call_;
};

int run(int argc, char** argv) {
  peer_options o;
  if (!peer_parse_options(argc, argv, &o)) return 2;
  if (o.blocking != 0) {
    fprintf(stderr, "gloo_bench: -z 3 is not implemented here\n");
    return 2;
  }
  const int rank = env_int("STRATACL_RANK", "RANK", -1);
  const int nranks = env_int("STRATACL_WORLD_SIZE", "WORLD_SIZE", -1);
  if (rank < 0 || nranks < 1 || rank >= nranks) {
    std::fprintf(stderr, "gloo_bench: run under stratarun (STRATACL_RANK/STRATACL_WORLD_SIZE)\n");
    return 2;
  }
  if (o.store == nullptr) {
    std::fprintf(stderr, "gloo_bench: --store DIR is required (an empty directory per run)\n");
    return 2;
  }
  const char* library = o.label != nullptr ? o.label : "gloo";
  const char* rs_env = std::getenv("GLOO_BENCH_REDUCE_SCATTER");
  const bool reduce_scatter = rs_env != nullptr && std::string(rs_env) == "1";

  gloo::transport::tcp::attr attr;
  // Across hosts (bench/compare --hosts), the interface the ranks reach each other on, named as
  // torch's gloo backend names it; on one host, loopback.
  if (const char* iface = std::getenv("GLOO_SOCKET_IFNAME")) {
    attr.iface = iface;
  } else {
    attr.hostname = "127.0.0.1";
  }
  auto device = gloo::transport::tcp::CreateDevice(attr);
  gloo::rendezvous::FileStore store(o.store);
  auto context = std::make_shared<gloo::rendezvous::Context>(rank, nranks);
  context->setTimeout(kTimeout);
  context->connectFullMesh(store, device);

  if (rank == 0) {
    const char* iface = std::getenv("GLOO_SOCKET_IFNAME");
    std::printf("# %s: Gloo %d.%d.%d, transport tcp on %s, rendezvous FileStore\n", library,
                GLOO_VERSION_MAJOR, GLOO_VERSION_MINOR, GLOO_VERSION_PATCH,
                iface ? iface : "127.0.0.1");
  }
  GlooBench bench(context, o.max_bytes / sizeof(float) + 16);
  uint64_t total_wrong = 0;
  for (int k = 0; k < PEER_NCOLLECTIVES && o.run[k] >= 0; ++k) {
    const int c = o.run[k];
    if (c == PEER_REDUCE_SCATTER && !reduce_scatter) {
      if (rank == 0) {
        std::printf(
            "# %s reduce_scatter: skipped: gloo::ReduceScatterHalvingDoubling overwrites data it "
            "is still sending (wrong results at large sizes); GLOO_BENCH_REDUCE_SCATTER=1 runs "
            "it\n",
            library);
      }
      continue;
    }
    for (size_t bytes = o.min_bytes; bytes != 0; bytes = peer_next_size(&o, bytes)) {
      const size_t count = peer_count(c, bytes, nranks);
      if (count == 0) continue;
      bench.prepare(c, count);
      if (o.check) {
        const uint64_t wrong = bench.check_once(c, count);
        if (wrong != 0 && rank == 0) {
          std::fprintf(stderr, "gloo_bench: %s %s %zu B: %llu wrong elements\n", library,
                       peer_collective_names[c], bytes, static_cast<unsigned long long>(wrong));
        }
        total_wrong += wrong;
      }
      for (int i = 0; i < o.warmup; ++i) bench.call();
      bench.barrier();
      const auto start = std::chrono::steady_clock::now();
      for (int i = 0; i < o.iters; ++i) bench.call();
      const std::chrono::duration<double, std::micro> elapsed =
          std::chrono::steady_clock::now() - start;
      const double slowest_us = bench.reduce(elapsed.count() / o.iters, &gloo::max<double>);
      if (rank == 0) {
        peer_print_row(library, c, nranks, count * sizeof(float), slowest_us, o.repeat);
      }
    }
  }
  return total_wrong == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& error) {
    std::fprintf(stderr, "gloo_bench: %s\n", error.what());
    return 3;
  }
}
