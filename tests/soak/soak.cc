// soak: random collectives for a given time, every result checked.
//
//   stratarun -n N soak --seconds S [--seed X] [--iterations I] [--first-iteration F]
//                       [--progress P] [--trace] [--exact]
//
// Every rank draws the same sequence of iterations. Iteration i draws from its own generator,
// seeded with (seed, i), so the choices of one iteration never depend on what earlier ones drew
// or on which rank draws them. An iteration is one of:
//   - one blocking call (most iterations): a random collective of the 11 kinds (allreduce,
//     broadcast, reduce, allgather, reducescatter, alltoall, alltoallv, gather, scatter, a
//     grouped send/recv ring, barrier) on one of the communicators, with a random dtype, op,
//     root, size (0 to 8 MiB for the largest buffer, skewed to small), buffer kinds (heap,
//     malloc, mixed), element offsets, in place or not, NULL buffers for some empty calls;
//   - a stream batch: calls queued on one or two streams (each on its own communicator), some
//     blocking calls meanwhile on a third communicator, then the streams synchronised;
//   - the destruction and re-creation, by sclCommSplit of the world, of one of the split
//     communicators (with a new variant of its colours and keys, sometimes with a small
//     staging area), or of the two streams.
// The communicators: the world; "halves" (two halves: contiguous, interleaved, or contiguous
// with reversed keys); "dup" (every rank: keys reversed, rotated, or all equal); "partial" (all
// ranks but one, chosen at random). A rank that is not in a communicator skips its calls.
//
// Every call is checked by tests/mp/calls.cc: every element of every buffer (outputs, inputs
// that must stay, guard elements) compared bit for bit with an independent reference. A wrong
// element is counted and reported and the run goes on; a library call that returns an error is
// fatal (the rank prints the call and exits 1; stratarun ends the job). Across hosts (stratarun
// --netns), run with --exact: floating types then reduce by max and min only (draw_call).
//
// Stopping: rank 0 decides when the time is up; every kStopEvery iterations the ranks agree
// through an allreduce (max) of a stop flag on the world. With --iterations the run instead
// stops after that many iterations (no clock: the same run every time).
//
// Reproduction: a failure message names the iteration and the seed. `--seed X
// --first-iteration F --iterations K` replays iterations F .. F+K-1 exactly (the communicator
// variants in force at F are recomputed from the earlier iterations' draws without running
// them).
//
// At the end rank 0 prints the duration, the calls checked (total and per rank), elements
// checked, per-collective counts and `<passed> passed, <failed> failed`; passed counts calls
// whose every check passed. Exit status: non-zero if any rank saw a failure.
#include <algorithm>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "calls.h"
#include "draw.h"
#include "harness.h"
#include "reference.h"
#include "report.h"
#include "shapes.h"

namespace {

using mp::Coll;
using soak::Action, soak::Drawn, soak::Rng, soak::Shape, soak::Stats;
using soak::kMiB, soak::kNumColls, soak::kNumSlots, soak::kWorld;

constexpr uint64_t kDefaultSeed = 0x50A4C0FFEEull;
constexpr int kStopEvery = 4;  // iterations between two stop-flag agreements

class Soak {
 public:
  Soak(uint64_t seed, bool trace, bool exact)
      : seed_(seed), trace_(trace), exact_(exact), world_(mp::world()) {}
  ~Soak() { mp::set_program_name("soak"); }  // fatal_prefix_ dies with this object

  void run(double seconds, long long iterations, long long first, double progress);
  int report(double seconds_requested);

 private:
  struct Slot {
    Shape shape;
    sclComm_t comm = nullptr;  // NULL: this rank is not a member
    mp::Comm desc;
    std::string name;
  };

  void create_slot(int slot, const Shape& shape, long long iter);
  void destroy_slot(int slot, long long iter);
  void expect(bool ok, const std::string& what);
  bool agree_stop(bool mine);
  std::string context(int slot, long long iter, const std::string& extra = "") const;
  void issue(mp::PreparedCall& call, sclStream_t stream);
  void check(mp::PreparedCall& call);
  void blocking_call(int slot, const Drawn& d, const std::string& context);
  void stream_batch(Rng& rng, long long iter);
  void recreate_streams();

  uint64_t seed_;
  bool trace_;
  bool exact_;  // floating types reduce by max and min only (draw_call)
  mp::Comm world_;
  Slot slots_[kNumSlots];
  sclStream_t streams_[2] = {nullptr, nullptr};
  uint32_t* stop_buf_ = nullptr;
  Stats st_;
  double elapsed_ = 0;
  char fatal_prefix_[96] = "soak";
};

std::string Soak::context(int slot, long long iter, const std::string& extra) const {
  char buf[64];
  snprintf(buf, sizeof buf, " iter=%lld seed=0x%" PRIx64, iter, seed_);
  return "comm=" + slots_[slot].name + (extra.empty() ? "" : " " + extra) + buf;
}

void Soak::expect(bool ok, const std::string& what) {
  ++st_.other_checks;
  if (ok) return;
  ++st_.other_failed;
  fprintf(stderr, "FAILED rank %d: %s\n", world_.rank, what.c_str());
}

void Soak::create_slot(int slot, const Shape& shape, long long iter) {
  Slot& s = slots_[slot];
  s.shape = shape;
  s.name = shape_name(slot, shape, world_.n);
  if (slot == kWorld) {
    s.comm = world_.comm;
    s.desc = world_;
    return;
  }
  const int n = world_.n, me = world_.rank;
  int color = 0, key = 0;
  color_key(slot, shape, me, n, &color, &key);
  sclConfig_t config = SCL_CONFIG_INITIALIZER;
  if (shape.staging > 0) config.stagingBytes = shape.staging;
  sclComm_t c = nullptr;
  const sclResult_t r =
      sclCommSplit(world_.comm, color, key, &c, shape.staging > 0 ? &config : nullptr);
  if (r != sclSuccess) {
    mp::fatal("sclCommSplit(color=%d, key=%d) for %s at iter=%lld seed=0x%" PRIx64
              " returned %d (%s): %s",
              color, key, s.name.c_str(), iter, seed_, int(r), sclGetErrorString(r),
              sclGetLastError(world_.comm));
  }
  // Expected members in communicator order: same colour, by (key, world rank).
  std::vector<std::pair<int, int>> members;
  if (color >= 0) {
    for (int p = 0; p < n; ++p) {
      int pc = 0, pk = 0;
      color_key(slot, shape, p, n, &pc, &pk);
      if (pc == color) members.push_back({pk, p});
    }
    std::sort(members.begin(), members.end());
  }
  const std::string what = "sclCommSplit for " + s.name + " at iter=" + std::to_string(iter);
  expect((c == nullptr) == (color < 0),
         what + (color < 0 ? ": SCL_SPLIT_NOCOLOR gave a communicator" : ": gave NULL"));
  s.comm = c;
  if (!c) return;
  s.desc = mp::describe(c);
  int expected_rank = -1;
  for (size_t i = 0; i < members.size(); ++i) {
    if (members[i].second == me) expected_rank = int(i);
  }
  expect(s.desc.n == int(members.size()), what + ": sclCommCount gave " + std::to_string(s.desc.n) +
                                              ", expected " + std::to_string(members.size()));
  expect(s.desc.rank == expected_rank, what + ": sclCommUserRank gave " +
                                           std::to_string(s.desc.rank) + ", expected " +
                                           std::to_string(expected_rank));
  if (s.desc.n != int(members.size()) || s.desc.rank != expected_rank) {
    mp::fatal("%s: wrong membership; the checks of later calls would be meaningless", what.c_str());
  }
}

void Soak::destroy_slot(int slot, long long iter) {
  Slot& s = slots_[slot];
  if (s.comm) {
    const sclResult_t r = sclCommDestroy(s.comm);
    if (r != sclSuccess) {
      mp::fatal("sclCommDestroy(%s) at iter=%lld seed=0x%" PRIx64 " returned %d (%s): %s",
                s.name.c_str(), iter, seed_, int(r), sclGetErrorString(r),
                sclGetLastError(nullptr));
    }
  }
  s.comm = nullptr;
  s.desc = mp::Comm{};
}

bool Soak::agree_stop(bool mine) {
  stop_buf_[0] = mine ? 1u : 0u;
  const sclResult_t r =
      sclAllReduce(stop_buf_, stop_buf_, 1, sclUint32, sclMax, world_.comm, nullptr);
  if (r != sclSuccess) {
    mp::fatal("stop-flag allreduce returned %d (%s): %s", int(r), sclGetErrorString(r),
              sclGetLastError(world_.comm));
  }
  if (stop_buf_[0] > 1) mp::fatal("stop-flag allreduce (max of 0/1) gave %u", stop_buf_[0]);
  return stop_buf_[0] == 1;
}

void Soak::issue(mp::PreparedCall& call, sclStream_t stream) {
  if (trace_) {
    printf("soak: rank %d: %s%s\n", world_.rank, stream ? "queue " : "call ",
           call.info().text().c_str());
  }
  const sclResult_t r = call.issue(stream);
  if (r != sclSuccess) {
    mp::fatal("%s%s returned %d (%s): %s", stream ? "queueing " : "", call.info().text().c_str(),
              int(r), sclGetErrorString(r), sclGetLastError(nullptr));
  }
}

void Soak::check(mp::PreparedCall& call) {
  mp::Tally& tally = mp::global_tally();
  const size_t ci = soak::coll_index(call.spec().coll);
  const uint64_t before = tally.elements();
  const uint64_t wrong = call.verify(tally);
  ++st_.calls[ci];
  if (wrong) ++st_.failed[ci];
  st_.elements[ci] += tally.elements() - before;
  st_.bytes += call.spec().count * mp::dtype_size(call.spec().dtype);
}

void Soak::blocking_call(int slot, const Drawn& d, const std::string& context) {
  const Slot& s = slots_[slot];
  if (!s.comm) return;  // not a member
  mp::PreparedCall call(s.desc, make_spec(d, s.desc, context));
  issue(call, nullptr);
  check(call);
}

void Soak::recreate_streams() {
  for (sclStream_t& s : streams_) {
    if (s) MP_OK(sclStreamDestroy(s));
    s = nullptr;
    MP_OK(sclStreamCreate(&s));
  }
}

// One or two streams, each on its own communicator, get 1-12 calls each (at most 1 MiB per
// buffer), queued in interleaved order; meanwhile (half the batches) 1-4 blocking calls run on
// a communicator neither stream uses. Then the streams are synchronised and everything checked.
void Soak::stream_batch(Rng& rng, long long iter) {
  const int nstreams = 1 + int(rng.below(2));
  int on[2] = {-1, -1};
  on[0] = int(rng.below(kNumSlots));
  on[1] = int((uint64_t(on[0]) + 1 + rng.below(kNumSlots - 1)) % kNumSlots);
  size_t ncalls[2] = {0, 0};
  for (int s = 0; s < nstreams; ++s) ncalls[s] = 1 + rng.below(12);
  int overlap_slot = -1;
  size_t noverlap = 0;
  if (rng.chance(0.5)) {
    overlap_slot = int(rng.below(kNumSlots));
    while (overlap_slot == on[0] || (nstreams == 2 && overlap_slot == on[1])) {
      overlap_slot = (overlap_slot + 1) % kNumSlots;
    }
    noverlap = 1 + rng.below(4);
  }
  const bool query_early = rng.chance(0.5);

  // Draw everything first (same order on every rank), then act.
  std::vector<Drawn> drawn[2];
  for (int s = 0; s < nstreams; ++s) {
    for (size_t i = 0; i < ncalls[s]; ++i) drawn[s].push_back(draw_call(rng, seed_, kMiB, exact_));
  }
  std::vector<Drawn> over;
  for (size_t i = 0; i < noverlap; ++i) over.push_back(draw_call(rng, seed_, 8 * kMiB, exact_));

  ++st_.stream_batches;
  std::vector<std::unique_ptr<mp::PreparedCall>> queued;
  const size_t most = std::max(ncalls[0], ncalls[1]);
  for (size_t i = 0; i < most; ++i) {
    for (int s = 0; s < nstreams; ++s) {
      if (i >= ncalls[s]) continue;
      const Slot& sl = slots_[on[s]];
      if (!sl.comm) continue;
      const std::string ctx =
          context(on[s], iter, "stream=" + std::to_string(s) + " call=" + std::to_string(i));
      queued.push_back(
          std::make_unique<mp::PreparedCall>(sl.desc, make_spec(drawn[s][i], sl.desc, ctx)));
      issue(*queued.back(), streams_[s]);
    }
  }
  for (size_t i = 0; i < over.size(); ++i) {
    if (!slots_[overlap_slot].comm) continue;
    blocking_call(overlap_slot, over[i],
                  context(overlap_slot, iter, "overlapping-streams call=" + std::to_string(i)));
    ++st_.overlap_calls;
  }
  const std::string where = " (iter=" + std::to_string(iter) + ")";
  if (query_early) {
    for (int s = 0; s < nstreams; ++s) {
      const sclResult_t q = sclStreamQuery(streams_[s]);
      expect(
          q == sclSuccess || q == sclInProgress,
          std::string("sclStreamQuery with work queued returned ") + sclGetErrorString(q) + where);
    }
  }
  for (int s = 0; s < nstreams; ++s) {
    const sclResult_t r = sclStreamSynchronize(streams_[s]);
    if (r != sclSuccess) {
      mp::fatal("sclStreamSynchronize(stream %d, comm %s) at iter=%lld seed=0x%" PRIx64
                " returned %d (%s): %s",
                s, slots_[on[s]].name.c_str(), iter, seed_, int(r), sclGetErrorString(r),
                sclGetLastError(nullptr));
    }
    const sclResult_t q = sclStreamQuery(streams_[s]);
    expect(q == sclSuccess, std::string("sclStreamQuery after sclStreamSynchronize returned ") +
                                sclGetErrorString(q) + where);
  }
  for (auto& c : queued) {
    check(*c);
    ++st_.stream_calls;
  }
  for (int s = 0; s < nstreams; ++s) {
    if (!slots_[on[s]].comm) continue;
    sclResult_t async = sclInternalError;
    MP_OK(sclCommGetAsyncError(slots_[on[s]].comm, &async));
    expect(async == sclSuccess, "sclCommGetAsyncError(" + slots_[on[s]].name + ") returned " +
                                    sclGetErrorString(async) + where);
  }
}

void Soak::run(double seconds, long long iterations, long long first, double progress) {
  snprintf(fatal_prefix_, sizeof fatal_prefix_, "soak (setup seed=0x%" PRIx64 ")", seed_);
  mp::set_program_name(fatal_prefix_);
  MP_OK(sclMemAlloc(reinterpret_cast<void**>(&stop_buf_), 64));
  // The shapes in force at `first`: replay the re-creation draws of the earlier iterations.
  Shape shapes[kNumSlots];
  int generation[kNumSlots] = {};
  auto redraw = [&](Rng& rng) {
    const int slot = 1 + int(rng.below(kNumSlots - 1));
    shapes[slot] = draw_shape(rng, slot, ++generation[slot]);
    return slot;
  };
  for (int slot = 1; slot < kNumSlots; ++slot) {
    Rng rng(mp::ref::make_seed(seed_, 0x5EED, uint64_t(slot)));
    shapes[slot] = draw_shape(rng, slot, 0);
  }
  for (long long it = 0; it < first; ++it) {
    Rng rng(mp::ref::make_seed(seed_, uint64_t(it)));
    if (draw_action(rng) == Action::kRecreateComm) redraw(rng);
  }
  for (int slot = 0; slot < kNumSlots; ++slot) create_slot(slot, shapes[slot], first);
  recreate_streams();

  const double start = mp::now();
  double next_progress = start + progress;
  long long iter = first;
  for (;; ++iter) {
    // Fatal messages (library errors, also from the shared buffers and checks) name the
    // iteration and the seed: the program name is their prefix.
    snprintf(fatal_prefix_, sizeof fatal_prefix_, "soak (iter=%lld seed=0x%" PRIx64 ")", iter,
             seed_);
    // --iterations: the same decision on every rank. --seconds: rank 0's clock decides, and
    // the ranks agree every kStopEvery iterations.
    if (iterations >= 0 && iter - first >= iterations) break;
    if ((iter - first) % kStopEvery == 0) {
      const bool time_up = iterations < 0 && world_.rank == 0 && mp::now() - start >= seconds;
      if (agree_stop(time_up)) break;
    }
    if (world_.rank == 0 && progress > 0 && mp::now() >= next_progress) {
      uint64_t calls = 0, failed = 0;
      for (size_t i = 0; i < kNumColls; ++i) calls += st_.calls[i], failed += st_.failed[i];
      printf("soak: %.0f s: iteration %lld, rank 0: %" PRIu64 " calls checked, %" PRIu64
             " failed, %" PRIu64 " communicators re-created\n",
             mp::now() - start, iter, calls, failed + st_.other_failed, st_.comm_recreations);
      next_progress += progress;
    }
    ++st_.iterations;
    Rng rng(mp::ref::make_seed(seed_, uint64_t(iter)));
    switch (draw_action(rng)) {
      case Action::kRecreateComm: {
        const int slot = redraw(rng);
        destroy_slot(slot, iter);
        create_slot(slot, shapes[slot], iter);
        ++st_.comm_recreations;
        break;
      }
      case Action::kRecreateStreams:
        recreate_streams();
        ++st_.stream_recreations;
        break;
      case Action::kStreams:
        stream_batch(rng, iter);
        break;
      case Action::kCall: {
        const int slot = int(rng.below(kNumSlots));
        const Drawn d = draw_call(rng, seed_, 8 * kMiB, exact_);
        blocking_call(slot, d, context(slot, iter));
        break;
      }
    }
  }
  elapsed_ = mp::now() - start;
  snprintf(fatal_prefix_, sizeof fatal_prefix_, "soak (teardown seed=0x%" PRIx64 ")", seed_);

  for (sclStream_t& s : streams_) {
    MP_OK(sclStreamDestroy(s));
    s = nullptr;
  }
  for (int slot = kNumSlots - 1; slot >= 1; --slot) destroy_slot(slot, iter);
}

int Soak::report(double seconds_requested) {
  const int status = soak::report(st_, world_, seed_, elapsed_, seconds_requested);
  MP_OK(sclMemFree(stop_buf_));
  return status;
}

[[noreturn]] void usage(const char* msg) {
  fprintf(stderr,
          "soak: %s\nusage: stratarun -n N soak --seconds S [--seed X] [--iterations I]\n"
          "                 [--first-iteration F] [--progress P] [--trace] [--exact]\n"
          "  --seconds S          run for S seconds (rank 0's clock)\n"
          "  --seed X             shared seed (default 0x%" PRIx64
          "; decimal or 0x hex)\n"
          "  --iterations I       run exactly I iterations instead of --seconds\n"
          "  --first-iteration F  start at iteration F (replays a failure's iteration)\n"
          "  --progress P         rank 0 prints progress every P seconds (default 10; 0: none)\n"
          "  --trace              every rank prints every call before issuing it\n"
          "  --exact              floating types reduce by max and min only (across hosts,\n"
          "                       where float sums come in another association)\n",
          msg, kDefaultSeed);
  exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  setvbuf(stdout, nullptr, _IOLBF, 0);
  mp::set_program_name("soak");
  double seconds = -1, progress = 10;
  bool trace = false, exact = false;
  long long iterations = -1, first = 0;
  uint64_t seed = kDefaultSeed;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--trace" || a == "--exact") {
      (a == "--trace" ? trace : exact) = true;
      continue;
    }
    if (i + 1 >= argc) usage(("missing value after " + a).c_str());
    const char* v = argv[++i];
    char* end = nullptr;
    errno = 0;
    if (a == "--seconds") {
      seconds = std::strtod(v, &end);
      if (!(seconds >= 0)) usage("bad --seconds");
    } else if (a == "--seed") {
      seed = std::strtoull(v, &end, 0);
    } else if (a == "--iterations") {
      iterations = std::strtoll(v, &end, 0);
      if (iterations < 0) usage("bad --iterations");
    } else if (a == "--first-iteration") {
      first = std::strtoll(v, &end, 0);
      if (first < 0) usage("bad --first-iteration");
    } else if (a == "--progress") {
      progress = std::strtod(v, &end);
      if (!(progress >= 0)) usage("bad --progress");
    } else {
      usage(("unknown argument " + a).c_str());
    }
    if (errno != 0 || end == v || *end != '\0') usage(("bad value for " + a).c_str());
  }
  if ((seconds < 0) == (iterations < 0)) usage("give exactly one of --seconds and --iterations");

  sclComm_t comm = nullptr;
  MP_OK(sclCommInitFromEnv(&comm));
  mp::set_world(mp::describe(comm));
  if (mp::world().rank == 0) {
    printf("soak: %d ranks, seed 0x%" PRIx64 ", %s\n", mp::world().n, seed,
           iterations >= 0 ? ("iterations " + std::to_string(first) + " to " +
                              std::to_string(first + iterations - 1))
                                 .c_str()
                           : (std::to_string(seconds) + " s").c_str());
  }
  int status;
  {
    Soak soak(seed, trace, exact);
    soak.run(seconds, iterations, first, progress);
    status = soak.report(seconds);
  }
  MP_OK(sclCommDestroy(comm));
  return status;
}
