// Case `comms`: communicators split off the world, used alternately with it.
//   even/odd:  split(color = rank % 2, key = rank)       -> rank/2 of ceil or floor(n/2)
//   reversed:  split(color = 0, key = n - rank)          -> n-1-rank of n
//   partial:   split(color = 7, key = rank), except the last rank passes SCL_SPLIT_NOCOLOR
//              and must get NULL                          -> rank of n-1
//   nested:    split of even/odd (color = 0, key = -subrank): reversed inside each half
// For each: sclCommCount and sclCommUserRank, and an allgather of world ranks that must list the
// members in the expected order. Then a loop of mixed collectives over the communicators in
// turn, each verified element by element with the communicator's own rank numbering. In the
// even/odd turns the two halves first run a call on their half and then one on the world, but in
// opposite orders (odd ranks start with the world call), which only works if communicators are
// independent. Then everything is destroyed, 50 rounds of split/use/destroy churn check that
// destroyed communicators leave no trace (see run_churn), and the world is checked to still work.
// `comms --churn-only` runs 200 churn rounds and nothing else.
#include <cstdio>
#include <string>
#include <vector>

#include "calls.h"
#include "reference.h"
#include "tests.h"

namespace mp {
namespace {

const Placement kPlacements[] = {
    {"heap", Mem::kHeap, 0, Mem::kHeap, 0, false},
    {"malloc+1", Mem::kMalloc, 1, Mem::kMalloc, 1, false},
    {"send-heap+1/recv-malloc", Mem::kHeap, 1, Mem::kMalloc, 0, false},
    {"heap+1", Mem::kHeap, 0, Mem::kHeap, 1, true},
    {"malloc", Mem::kMalloc, 0, Mem::kMalloc, 0, true},
};
constexpr size_t kCounts[] = {1, 7, 130, 4097};

struct Member {
  const char* name;
  sclComm_t comm;
  std::vector<int> world_ranks;  // expected members, in comm rank order
};

// Checks size, rank and membership order of `m` (from this rank's point of view).
void check_membership(const Member& m, Tally& tally) {
  const Comm& w = world();
  CallInfo info;
  info.coll = "split";
  info.dtype = sclInt32;
  info.detail = std::string("comm=") + m.name;
  const Comm c = describe(m.comm);
  int expected_rank = -1;
  for (size_t i = 0; i < m.world_ranks.size(); ++i) {
    if (m.world_ranks[i] == w.rank) expected_rank = int(i);
  }
  tally.expect(c.n == int(m.world_ranks.size()), info,
               "sclCommCount gave " + std::to_string(c.n) + ", expected " +
                   std::to_string(m.world_ranks.size()));
  tally.expect(c.rank == expected_rank, info,
               "sclCommUserRank gave " + std::to_string(c.rank) + ", expected " +
                   std::to_string(expected_rank));
  if (c.n != int(m.world_ranks.size())) return;  // the allgather below would not fit

  Buffer mine(Mem::kHeap, sclInt32, 1, 0, 0xAA), all(Mem::kHeap, sclInt32, size_t(c.n), 0, 0xAA);
  *static_cast<int32_t*>(mine.data()) = w.rank;
  MP_OK(sclAllGather(mine.data(), all.data(), 1, sclInt32, m.comm, nullptr));
  info.coll = "allgather of world ranks";
  info.count = 1;
  tally.compare(info, "members", all.data(), m.world_ranks.data(), m.world_ranks.size());
}

// sclCommDestroy, with a note on stderr when it takes more than a second (a destroy waits for
// the peers' departure; a long wait points at a peer that is stuck, or at a departure barrier
// that missed a peer). Informational only: timing is never asserted.
void destroy(sclComm_t comm, const char* name) {
  const double t0 = now();
  MP_OK(sclCommDestroy(comm));
  const double took = now() - t0;
  if (took > 1.0) {
    fprintf(stderr, "comms: rank %d: NOTE: sclCommDestroy(%s) took %.2f s\n", world().rank, name,
            took);
  }
}

// Split/destroy churn. Each round splits a communicator off the world, uses it and destroys
// it, twice in a row (the second split's blocks may reuse the first one's freed memory), then
// allocates heap buffers (which may reuse the freed control block and staging area), fills
// them, waits for everybody on the world, and checks that nobody wrote into them: once
// sclCommDestroy has returned on a rank, no peer may touch that rank's blocks of the destroyed
// communicator, and a peer that is slower to leave must not mistake reused memory for a
// communicator that has not departed.
void run_churn(Tally& tally, int rounds) {
  const Comm& w = world();
  constexpr size_t kBufs = 4, kElems = 4096;  // 4 x 16 KiB
  uint64_t corrupted_rounds = 0;
  for (int i = 0; i < rounds; ++i) {
    for (int k = 0; k < 2; ++k) {
      sclComm_t c = nullptr;
      MP_OK(sclCommSplit(w.comm, 0, w.rank, &c, nullptr));
      CallSpec spec;
      spec.coll = Coll::kAllReduce;
      spec.dtype = sclInt32;
      spec.op = sclSum;
      spec.count = 7;
      spec.placement = kPlacements[0];
      spec.seed = ref::make_seed(0xC4, uint64_t(i), uint64_t(k));
      spec.context = "comm=churn round=" + std::to_string(i) + "." + std::to_string(k);
      run_and_verify(describe(c), spec, tally);
      destroy(c, "churn");
    }

    std::vector<Buffer> bufs;
    for (size_t b = 0; b < kBufs; ++b) bufs.emplace_back(Mem::kHeap, sclUint32, kElems, 0, 0x5A);
    MP_OK(sclBarrier(w.comm, nullptr));  // every peer has returned from sclCommDestroy
    MP_OK(sclBarrier(w.comm, nullptr));
    CallInfo info;
    info.coll = "heap buffers allocated right after sclCommDestroy";
    info.dtype = sclUint32;
    info.count = kElems;
    uint64_t wrong = 0;
    for (size_t b = 0; b < kBufs; ++b) {
      std::vector<unsigned char> image = bufs[b].image();
      info.detail = "round=" + std::to_string(i) + " buffer=" + std::to_string(b) +
                    " ranks=" + std::to_string(w.n);
      wrong += bufs[b].check(tally, info, "buf", image);
    }
    corrupted_rounds += wrong ? 1 : 0;
  }
  if (w.rank == 0 || corrupted_rounds) {
    printf(
        "comms: rank %d: split/destroy churn: %d rounds, %llu with foreign writes into "
        "reused memory\n",
        w.rank, rounds, (unsigned long long)corrupted_rounds);
  }
}

}  // namespace

int run_comms(int argc, char** argv) {
  bool churn_only = false;
  for (int i = 0; i < argc; ++i) {
    if (std::string(argv[i]) == "--churn-only") {
      churn_only = true;
    } else {
      fatal("comms: unknown argument '%s' (expected --churn-only)", argv[i]);
    }
  }
  const Comm& w = world();
  Tally& tally = global_tally();
  const int n = w.n;
  const double start = now();
  if (churn_only) {
    run_churn(tally, 200);
    return finish("comms");
  }

  std::vector<Member> members;
  members.push_back({"world", w.comm, {}});
  for (int r = 0; r < n; ++r) members.back().world_ranks.push_back(r);

  sclComm_t evenodd = nullptr, reversed = nullptr, partial = nullptr, nested = nullptr;
  MP_OK(sclCommSplit(w.comm, w.rank % 2, w.rank, &evenodd, nullptr));
  MP_OK(sclCommSplit(w.comm, 0, n - w.rank, &reversed, nullptr));
  const bool left_out = w.rank == n - 1;
  MP_OK(sclCommSplit(w.comm, left_out ? SCL_SPLIT_NOCOLOR : 7, w.rank, &partial, nullptr));
  if (!evenodd || !reversed) fatal("sclCommSplit with a colour returned a NULL communicator");
  {
    CallInfo info;
    info.coll = "split NOCOLOR";
    info.dtype = sclInt32;
    tally.expect(
        (partial == nullptr) == left_out, info,
        left_out ? "SCL_SPLIT_NOCOLOR gave a communicator, expected NULL" : "colour 7 gave NULL");
  }
  const Comm eo = describe(evenodd);
  MP_OK(sclCommSplit(evenodd, 0, -eo.rank, &nested, nullptr));

  Member m_eo{"even/odd", evenodd, {}}, m_rev{"reversed", reversed, {}},
      m_part{"partial", partial, {}}, m_nest{"nested", nested, {}};
  for (int r = w.rank % 2; r < n; r += 2) m_eo.world_ranks.push_back(r);
  for (int r = n - 1; r >= 0; --r) m_rev.world_ranks.push_back(r);
  for (int r = 0; r < n - 1; ++r) m_part.world_ranks.push_back(r);
  m_nest.world_ranks.assign(m_eo.world_ranks.rbegin(), m_eo.world_ranks.rend());
  members.push_back(m_eo);
  members.push_back(m_rev);
  if (!left_out) members.push_back(m_part);
  members.push_back(m_nest);
  for (const Member& m : members) check_membership(m, tally);

  // The loop: turn t uses communicator kOrder[t % 5]; the partial communicator's turns are
  // skipped by the rank that is not in it.
  const char* const kOrder[] = {"world", "even/odd", "reversed", "partial", "nested"};
  auto find = [&](const char* name) -> const Member* {
    for (const Member& m : members) {
      if (std::string(m.name) == name) return &m;
    }
    return nullptr;
  };
  constexpr int kTurns = 150;
  uint64_t calls = 0;
  for (int t = 0; t < kTurns; ++t) {
    const Member* m = find(kOrder[t % 5]);
    if (!m) continue;  // partial, on the rank left out
    // The call of this turn. u counts the turns of this communicator: every communicator goes
    // through all collectives (barrier aside, see below) every 10 of its turns, while dtype, op,
    // count, root and placement rotate at other rates.
    const size_t u = size_t(t / 5);
    CallSpec spec;
    spec.coll = kAllColls[u % (std::size(kAllColls) - 1)];
    spec.dtype = kAllDtypes[size_t(t * 5 + t / 7) % std::size(kAllDtypes)];
    spec.op = reduces(spec.coll) ? int(kAllOps[size_t(t / 3) % std::size(kAllOps)]) : -1;
    spec.count = kCounts[size_t(t / 2) % std::size(kCounts)];
    const Comm c = describe(m->comm);
    spec.root = rooted(spec.coll) ? int(u / 3) % c.n : -1;
    size_t pi = size_t(t / 4) % std::size(kPlacements);
    if (kPlacements[pi].in_place && !has_in_place(spec.coll)) pi = size_t(t) % 3;
    spec.placement = kPlacements[pi];
    spec.seed = ref::make_seed(0xC0FF, uint64_t(t));
    spec.context = std::string("comm=") + m->name + " turn=" + std::to_string(t);

    if (std::string(m->name) == "even/odd") {
      // The two halves interleave their half's call and a world call in opposite orders.
      CallSpec world_spec = spec;
      world_spec.coll = Coll::kAllReduce;
      world_spec.op = sclSum;
      world_spec.root = -1;
      world_spec.seed = ref::make_seed(0xC0FF, uint64_t(t), 1);
      world_spec.context = "comm=world (interleaved with even/odd) turn=" + std::to_string(t);
      if (w.rank % 2 == 0) {
        run_and_verify(c, spec, tally);
        run_and_verify(w, world_spec, tally);
      } else {
        run_and_verify(w, world_spec, tally);
        run_and_verify(c, spec, tally);
      }
      calls += 2;
    } else {
      run_and_verify(c, spec, tally);
      ++calls;
    }
    if (t % 7 == 0) {
      MP_OK(sclBarrier(m->comm, nullptr));
      ++calls;
    }
  }

  destroy(nested, "nested");
  if (partial) destroy(partial, "partial");
  destroy(reversed, "reversed");
  destroy(evenodd, "even/odd");

  run_churn(tally, 50);

  // The world still works after its children are gone.
  CallSpec after;
  after.coll = Coll::kAllReduce;
  after.dtype = sclFloat32;
  after.op = sclSum;
  after.count = 4097;
  after.placement = kPlacements[0];
  after.seed = ref::make_seed(0xC0FF, 0xAF7E);
  after.context = "comm=world (after destroying the splits)";
  run_and_verify(w, after, tally);
  ++calls;

  if (w.rank == 0) {
    printf("comms: %d ranks: 4 splits, %llu calls on rank 0 in %.2f s\n", n,
           (unsigned long long)calls, now() - start);
  }
  return finish("comms");
}

}  // namespace mp
