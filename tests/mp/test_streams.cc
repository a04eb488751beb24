// Case `streams`: calls queued on streams without waiting, then synchronised and checked.
// Two communicators (the world and a duplicate split off it), each with its own stream (calls on
// one communicator are issued in the same order on every rank; the two streams run
// independently). 200 small allreduces alternate between them, with an allgather after every
// tenth and a few reducescatters and broadcasts, each call with its own buffers (heap, malloc,
// in place, rotating). After queueing: sclStreamQuery may say sclInProgress or sclSuccess
// (timing; only reported), sclStreamSynchronize must return sclSuccess, then sclStreamQuery
// must return sclSuccess and every output must be right. A second batch queues grouped
// send/recv rings and barriers on the streams. sclCommGetAsyncError must stay sclSuccess.
// After each batch a host callback (sclStreamAddCallback) on each stream verifies every output
// of that stream's calls from the stream's own thread: it must run exactly once, after all of
// them, with sclSuccess.
#include <cstdio>
#include <memory>
#include <vector>

#include "calls.h"
#include "reference.h"
#include "tests.h"

namespace mp {
namespace {

const Placement kPlacements[] = {
    {"heap", Mem::kHeap, 0, Mem::kHeap, 0, false},
    {"malloc+1", Mem::kMalloc, 1, Mem::kMalloc, 1, false},
    {"heap+1", Mem::kHeap, 0, Mem::kHeap, 1, true},
    {"send-malloc/recv-heap+1", Mem::kMalloc, 0, Mem::kHeap, 1, false},
};

const char* result_name(sclResult_t r) { return sclGetErrorString(r); }

// What one stream's callback saw: its status, and how many outputs were wrong when it ran.
struct CallbackRecord {
  std::vector<PreparedCall*> calls;  // that stream's calls, verified by the callback
  Tally tally;
  int runs = 0;
  sclResult_t status = sclInternalError;
  uint64_t wrong = 0;
};

void record_callback(sclStream_t, sclResult_t status, void* arg) {
  auto* rec = static_cast<CallbackRecord*>(arg);
  rec->status = status;
  for (PreparedCall* c : rec->calls) rec->wrong += c->verify(rec->tally);
  ++rec->runs;
}

}  // namespace

int run_streams(int argc, char**) {
  if (argc != 0) fatal("streams: takes no arguments");
  const Comm& w = world();
  Tally& tally = global_tally();
  const double start = now();

  sclComm_t dup_comm = nullptr;
  MP_OK(sclCommSplit(w.comm, 0, w.rank, &dup_comm, nullptr));
  const Comm dup = describe(dup_comm);
  sclStream_t streams[2] = {nullptr, nullptr};
  MP_OK(sclStreamCreate(&streams[0]));
  MP_OK(sclStreamCreate(&streams[1]));
  const Comm comms[2] = {w, dup};
  const char* const names[2] = {"world", "dup"};

  CallInfo info;
  info.coll = "stream";
  info.dtype = sclUint8;

  for (int batch = 0; batch < 2; ++batch) {
    std::vector<std::unique_ptr<PreparedCall>> calls;
    CallbackRecord records[2];
    const double t0 = now();
    auto queue = [&](int which, CallSpec spec) {
      spec.context = std::string("comm=") + names[which] + " stream=" + std::to_string(which) +
                     " batch=" + std::to_string(batch) + " call=" + std::to_string(calls.size());
      calls.push_back(std::make_unique<PreparedCall>(comms[which], spec));
      records[which].calls.push_back(calls.back().get());
      const sclResult_t r = calls.back()->issue(streams[which]);
      if (r != sclSuccess) {
        fatal("queueing %s returned %d (%s): %s", calls.back()->info().text().c_str(), int(r),
              result_name(r), sclGetLastError(comms[which].comm));
      }
    };
    if (batch == 0) {
      for (int i = 0; i < 200; ++i) {
        const int which = i % 2;
        CallSpec spec;
        spec.coll = Coll::kAllReduce;
        spec.dtype = kAllDtypes[size_t(i) % std::size(kAllDtypes)];
        spec.op = int(kAllOps[size_t(i / 3) % std::size(kAllOps)]);
        spec.count = size_t(1 + (i * 37) % 300);
        spec.placement = kPlacements[size_t(i / 2) % std::size(kPlacements)];
        spec.seed = ref::make_seed(0x57EA, uint64_t(batch), uint64_t(i));
        queue(which, spec);
        if (i % 10 == 9) {
          spec.coll = Coll::kAllGather;
          spec.op = -1;
          spec.seed = ref::make_seed(0x57EA, uint64_t(batch), uint64_t(i), 1);
          queue(which, spec);
        }
        if (i % 50 == 25) {
          spec.coll = Coll::kReduceScatter;
          spec.op = sclSum;
          spec.seed = ref::make_seed(0x57EA, uint64_t(batch), uint64_t(i), 2);
          queue(which, spec);
          spec.coll = Coll::kBroadcast;
          spec.op = -1;
          spec.root = i % comms[which].n;
          spec.seed = ref::make_seed(0x57EA, uint64_t(batch), uint64_t(i), 3);
          queue(which, spec);
          spec.root = -1;
        }
      }
    } else {
      for (int i = 0; i < 40; ++i) {
        const int which = i % 2;
        CallSpec spec;
        spec.coll = i % 4 == 3 ? Coll::kBarrier : Coll::kSendRecvRing;
        spec.dtype = kAllDtypes[size_t(i * 7) % std::size(kAllDtypes)];
        spec.count = size_t((i * 53) % 1000);
        spec.placement = kPlacements[size_t(i) % 2];
        spec.seed = ref::make_seed(0x57EA, uint64_t(batch), uint64_t(i));
        queue(which, spec);
      }
    }
    for (int s = 0; s < 2; ++s)
      MP_OK(sclStreamAddCallback(streams[s], record_callback, &records[s]));
    const double t1 = now();
    sclResult_t q[2];
    for (int s = 0; s < 2; ++s) q[s] = sclStreamQuery(streams[s]);
    for (int s = 0; s < 2; ++s) {
      tally.expect(q[s] == sclInProgress || q[s] == sclSuccess, info,
                   std::string("sclStreamQuery while queued work may be pending returned ") +
                       result_name(q[s]));
    }
    for (int s = 0; s < 2; ++s) {
      const sclResult_t r = sclStreamSynchronize(streams[s]);
      tally.expect(r == sclSuccess, info,
                   std::string("sclStreamSynchronize returned ") + result_name(r) + ": " +
                       sclGetLastError(nullptr));
      const sclResult_t after = sclStreamQuery(streams[s]);
      tally.expect(
          after == sclSuccess, info,
          std::string("sclStreamQuery after sclStreamSynchronize returned ") + result_name(after));
    }
    const double t2 = now();
    for (int s = 0; s < 2; ++s) {
      tally.expect(records[s].runs == 1 && records[s].status == sclSuccess && records[s].wrong == 0,
                   info,
                   "stream callback: ran " + std::to_string(records[s].runs) + " times, status " +
                       result_name(records[s].status) + ", " + std::to_string(records[s].wrong) +
                       " wrong outputs when it ran");
    }
    uint64_t wrong = 0;
    for (auto& c : calls) wrong += c->verify(tally);
    for (int s = 0; s < 2; ++s) {
      sclResult_t async = sclInternalError;
      MP_OK(sclCommGetAsyncError(comms[s].comm, &async));
      tally.expect(async == sclSuccess, info,
                   std::string("sclCommGetAsyncError returned ") + result_name(async));
    }
    if (w.rank == 0) {
      printf(
          "streams: batch %d: %zu calls queued in %.1f ms, query right after: %s / %s, "
          "synchronized after %.1f ms more; %s\n",
          batch, calls.size(), 1e3 * (t1 - t0),
          q[0] == sclInProgress ? "in progress" : result_name(q[0]),
          q[1] == sclInProgress ? "in progress" : result_name(q[1]), 1e3 * (t2 - t1),
          wrong ? "WRONG results" : "all results right");
    }
  }

  // A blocking call on each communicator after the streams drained.
  for (int s = 0; s < 2; ++s) {
    CallSpec spec;
    spec.coll = Coll::kAllReduce;
    spec.dtype = sclInt32;
    spec.op = sclSum;
    spec.count = 1000;
    spec.placement = kPlacements[0];
    spec.seed = ref::make_seed(0x57EA, 99, uint64_t(s));
    spec.context = std::string("comm=") + names[s] + " blocking after streams";
    run_and_verify(comms[s], spec, tally);
  }
  MP_OK(sclStreamDestroy(streams[0]));
  MP_OK(sclStreamDestroy(streams[1]));
  MP_OK(sclCommDestroy(dup_comm));
  if (w.rank == 0) printf("streams: total %.2f s\n", now() - start);
  return finish("streams");
}

}  // namespace mp
