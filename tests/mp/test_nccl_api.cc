// Case `nccl_api`: the parts of NCCL's host API that go beyond the collectives themselves.
//   - version macros; sclBcast (in place);
//   - PreMulSum operators: host-immediate and "device" (read when each call runs) scalars, in
//     allreduce, reduce and reduce-scatter, on the NULL stream and on a stream, for integer and
//     floating types, every element checked; a dtype mismatch, a destroyed operator;
//   - symmetric-memory windows on heap and malloc memory;
//   - sclRecvAny: rank 0 receives one message from every other rank, in whatever order they come,
//     and each message must name its sender; refused inside a group;
//   - non-blocking mode: init by unique id and split return sclInProgress, are polled with
//     sclCommGetAsyncError, then carry collectives on the NULL stream (sclInProgress, polled)
//     and a finalize; blocking finalize, then destroy; calls after finalize fail;
//   - sclCommInitAll (one rank per process) and NCCL's ignored configuration fields.
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "harness.h"
#include "tests.h"

namespace mp {
namespace {

CallInfo info(const char* what, sclDataType_t t = sclInt32, size_t count = 0) {
  CallInfo i;
  i.coll = what;
  i.dtype = t;
  i.count = count;
  return i;
}

// Polls a non-blocking communicator until its work is done; its final state.
sclResult_t wait_done(sclComm_t comm) {
  sclResult_t state = sclInProgress;
  const double deadline = now() + 60;
  while (state == sclInProgress && now() < deadline) MP_OK(sclCommGetAsyncError(comm, &state));
  return state;
}

void version(Tally& tally) {
  int v = 0;
  MP_OK(sclGetVersion(&v));
  tally.expect(v == SCL_VERSION_CODE && v == SCL_VERSION(SCL_MAJOR, SCL_MINOR, SCL_PATCH) &&
                   SCL_VERSION(2, 19, 3) > SCL_VERSION(2, 18, 9),
               info("version"), "SCL_VERSION_CODE is sclGetVersion's value, and ordered");
}

void bcast(const Comm& w, Tally& tally) {
  const size_t count = 1000;
  std::vector<int32_t> buf(count), want(count);
  for (int root = 0; root < w.n; ++root) {
    for (size_t i = 0; i < count; ++i) {
      want[i] = int32_t(root * 100000 + int(i));
      buf[i] = w.rank == root ? want[i] : -1;
    }
    MP_OK(sclBcast(buf.data(), count, sclInt32, root, w.comm, nullptr));
    tally.compare(info("bcast", sclInt32, count), "buff", buf.data(), want.data(), count);
  }
}

// Every rank contributes small integers, so that the scaled sum is exact in every type: the
// result must equal scalar * sum bit for bit, whichever way the multiplication is placed.
template <typename T>
void premul_one(const Comm& w, Tally& tally, sclDataType_t t, T scalar, T later,
                sclStream_t stream) {
  const size_t count = 777;
  std::vector<T> send(count * size_t(w.n)), recv(count * size_t(w.n)), want(count * size_t(w.n));
  for (size_t i = 0; i < send.size(); ++i) send[i] = T((w.rank + 1) * int(i % 5));
  T device_scalar = scalar;
  for (sclScalarResidence_t where : {sclScalarHostImmediate, sclScalarDevice}) {
    sclRedOp_t op;
    T immediate = scalar;
    MP_OK(sclRedOpCreatePreMulSum(&op, where == sclScalarDevice ? &device_scalar : &immediate, t,
                                  where, w.comm));
    immediate = later;      // host-immediate: read at creation, so this must not matter
    device_scalar = later;  // device: read when each call runs, so this must
    const T s = where == sclScalarDevice ? later : scalar;
    for (size_t i = 0; i < want.size(); ++i) {
      int sum = 0;
      for (int r = 0; r < w.n; ++r) sum += (r + 1) * int(i % 5);
      want[i] = T(T(sum) * s);
    }
    const std::string name = std::string("premulsum ") +
                             (where == sclScalarDevice ? "device" : "immediate") +
                             (stream ? " stream" : "");
    MP_OK(sclAllReduce(send.data(), recv.data(), count, t, op, w.comm, stream));
    MP_OK(sclStreamSynchronize(stream));
    tally.compare(info((name + " allreduce").c_str(), t, count), "recv", recv.data(), want.data(),
                  count);
    const int root = w.n - 1;
    std::fill(recv.begin(), recv.end(), T(0));
    MP_OK(sclReduce(send.data(), recv.data(), count, t, op, root, w.comm, stream));
    MP_OK(sclStreamSynchronize(stream));
    if (w.rank == root) {
      tally.compare(info((name + " reduce").c_str(), t, count), "recv", recv.data(), want.data(),
                    count);
    }
    MP_OK(sclReduceScatter(send.data(), recv.data(), count, t, op, w.comm, stream));
    MP_OK(sclStreamSynchronize(stream));
    tally.compare(info((name + " reducescatter").c_str(), t, count), "recv", recv.data(),
                  want.data() + size_t(w.rank) * count, count);
    MP_OK(sclRedOpDestroy(op, w.comm));
    tally.expect(
        sclAllReduce(send.data(), recv.data(), count, t, op, w.comm, nullptr) == sclInvalidArgument,
        info("premulsum destroyed", t), "a destroyed operator is refused");
  }
}

void premul(const Comm& w, Tally& tally) {
  sclStream_t stream;
  MP_OK(sclStreamCreate(&stream));
  for (sclStream_t s : {sclStream_t(nullptr), stream}) {
    premul_one<int32_t>(w, tally, sclInt32, 3, -2, s);
    premul_one<uint8_t>(w, tally, sclUint8, 7, 250, s);  // wraps, as the sum does
    premul_one<int64_t>(w, tally, sclInt64, 1 << 20, 5, s);
    premul_one<float>(w, tally, sclFloat32, 0.5f, 0.25f, s);
    premul_one<double>(w, tally, sclFloat64, 0.125, 4.0, s);
  }
  MP_OK(sclStreamDestroy(stream));
  // Each rank's own scalar multiplies its own input (NCCL's definition): here rank r's is r + 1,
  // so the result is the sum of (r + 1) * x_r, the same on every rank.
  {
    const size_t count = 513;
    std::vector<int32_t> x(count), got(count), want(count, 0);
    for (size_t i = 0; i < count; ++i) x[i] = int32_t(w.rank * 7 + int(i % 11));
    for (int r = 0; r < w.n; ++r)
      for (size_t i = 0; i < count; ++i) want[i] += (r + 1) * int32_t(r * 7 + int(i % 11));
    int32_t mine = w.rank + 1;
    sclRedOp_t own;
    MP_OK(sclRedOpCreatePreMulSum(&own, &mine, sclInt32, sclScalarHostImmediate, w.comm));
    MP_OK(sclAllReduce(x.data(), got.data(), count, sclInt32, own, w.comm, nullptr));
    tally.compare(info("premulsum per-rank scalars", sclInt32, count), "recv", got.data(),
                  want.data(), count);
    MP_OK(sclRedOpDestroy(own, w.comm));
  }
  // An operator is for its dtype only, and built-in operators are not destroyed.
  sclRedOp_t op;
  float f = 2.0f;
  MP_OK(sclRedOpCreatePreMulSum(&op, &f, sclFloat32, sclScalarHostImmediate, w.comm));
  double d[4] = {1, 2, 3, 4};
  tally.expect(sclAllReduce(d, d, 4, sclFloat64, op, w.comm, nullptr) == sclInvalidArgument,
               info("premulsum dtype", sclFloat64), "an operator of another dtype is refused");
  const std::string err = sclGetLastError(w.comm);
  tally.expect(err.find("op:") != std::string::npos, info("premulsum dtype", sclFloat64),
               "the error names op: " + err);
  MP_OK(sclRedOpDestroy(op, w.comm));
  tally.expect(sclRedOpDestroy(op, w.comm) == sclInvalidArgument &&
                   sclRedOpDestroy(sclSum, w.comm) == sclInvalidArgument &&
                   sclRedOpCreatePreMulSum(&op, nullptr, sclFloat32, sclScalarHostImmediate,
                                           w.comm) == sclInvalidArgument &&
                   sclRedOpCreatePreMulSum(&op, &f, sclFloat32, sclScalarResidence_t(7), w.comm) ==
                       sclInvalidArgument,
               info("premulsum args"), "double destroy, built-in destroy, NULL scalar, residence");
}

void windows(const Comm& w, Tally& tally) {
  void* heap = nullptr;
  MP_OK(sclMemAlloc(&heap, 1 << 16));
  std::vector<char> other(1 << 16);
  sclWindow_t a = nullptr, b = nullptr;
  MP_OK(sclCommWindowRegister(w.comm, heap, 1 << 16, &a, SCL_WIN_COLL_SYMMETRIC));
  const sclResult_t rb = sclCommWindowRegister(w.comm, other.data(), other.size(), &b, 0);
  // malloc memory is registered for single-copy reads, which some kernels refuse.
  tally.expect(rb == sclSuccess || rb == sclSystemError, info("window"),
               "a malloc window registers (or the kernel refuses CMA)");
  // A window is usable memory: an allreduce in place on the heap window.
  auto* v = static_cast<int32_t*>(heap);
  for (int i = 0; i < 64; ++i) v[i] = w.rank + i;
  MP_OK(sclAllReduce(v, v, 64, sclInt32, sclSum, w.comm, nullptr));
  std::vector<int32_t> want(64);
  for (int i = 0; i < 64; ++i) want[size_t(i)] = w.n * (w.n - 1) / 2 + w.n * i;
  tally.compare(info("window allreduce", sclInt32, 64), "win", v, want.data(), 64);
  MP_OK(sclCommWindowDeregister(w.comm, a));
  if (rb == sclSuccess) MP_OK(sclCommWindowDeregister(w.comm, b));
  tally.expect(sclCommWindowDeregister(w.comm, a) == sclInvalidArgument &&
                   sclCommWindowRegister(w.comm, heap, 64, &a, 0x10) == sclInvalidArgument &&
                   sclCommWindowRegister(w.comm, nullptr, 64, &a, 0) == sclInvalidArgument,
               info("window args"), "double deregister, bad flags, NULL buffer are refused");
  MP_OK(sclMemFree(heap));
}

void recv_any(const Comm& w, Tally& tally, sclStream_t stream) {
  const size_t count = 4099;
  const char* name = stream ? "recvany stream" : "recvany";
  if (w.rank != 0) {
    std::vector<int32_t> msg(count);
    for (size_t i = 0; i < count; ++i) msg[i] = int32_t(w.rank * 1000003 + int(i));
    MP_OK(sclSend(msg.data(), count, sclInt32, 0, w.comm, stream));
    MP_OK(sclStreamSynchronize(stream));
    MP_OK(sclBarrier(w.comm, nullptr));  // else our next round's send could match this round
    return;
  }
  std::vector<int> seen(size_t(w.n), 0);
  std::vector<int32_t> got(count), want(count);
  for (int k = 1; k < w.n; ++k) {
    int source = -1;
    MP_OK(sclRecvAny(got.data(), count, sclInt32, &source, w.comm, stream));
    MP_OK(sclStreamSynchronize(stream));
    if (source < 1 || source >= w.n) {
      tally.expect(false, info(name), "source " + std::to_string(source) + " out of range");
      continue;
    }
    ++seen[size_t(source)];
    for (size_t i = 0; i < count; ++i) want[i] = int32_t(source * 1000003 + int(i));
    tally.compare(info(name, sclInt32, count), "recv", got.data(), want.data(), count);
  }
  for (int r = 1; r < w.n; ++r)
    tally.expect(seen[size_t(r)] == 1, info(name), "rank " + std::to_string(r) + " seen once");
  MP_OK(sclBarrier(w.comm, nullptr));
}

void recv_any_refusals(const Comm& w, Tally& tally) {
  int32_t x = 0;
  int source;
  MP_OK(sclGroupStart());
  const sclResult_t grouped = sclRecvAny(&x, 1, sclInt32, &source, w.comm, nullptr);
  const sclResult_t end = sclGroupEnd();  // the refused call fails the group (below)
  tally.expect(grouped == sclInvalidUsage && end == sclInvalidUsage &&
                   sclRecvAny(&x, 1, sclInt32, nullptr, w.comm, nullptr) == sclInvalidArgument,
               info("recvany args"), "grouped, or with a NULL source, is refused");
}

// As in NCCL, a call of a group refused for its arguments fails the group: sclGroupEnd returns
// its error and runs none of the group's calls, here an allreduce every rank issued before it,
// so that the next allreduce still pairs across ranks. A send to this rank outside a group,
// whose receive could only come later, is refused at once; so are a group's sends and receives
// on one communicator but two streams, each of which would wait behind the other.
void group_refusals(const Comm& w, Tally& tally) {
  std::vector<int32_t> a(64, w.rank + 1), b(64, 0);
  MP_OK(sclGroupStart());
  MP_OK(sclAllReduce(a.data(), b.data(), 64, sclInt32, sclSum, w.comm, nullptr));
  const sclResult_t bad = sclAllReduce(a.data(), nullptr, 64, sclInt32, sclSum, w.comm, nullptr);
  const sclResult_t end = sclGroupEnd();
  const std::string why = sclGetLastError(nullptr);
  tally.expect(bad == sclInvalidArgument && end == sclInvalidArgument &&
                   why.find("none of the group's calls ran") != std::string::npos &&
                   why.find("recvbuff") != std::string::npos,
               info("group with a bad call"),
               "sclGroupEnd returned " + std::to_string(end) + ": " + why);
  tally.expect(b == std::vector<int32_t>(64, 0), info("group with a bad call"),
               "the group's good allreduce ran");
  MP_OK(sclAllReduce(a.data(), b.data(), 64, sclInt32, sclSum, w.comm, nullptr));
  tally.expect(b == std::vector<int32_t>(64, w.n * (w.n + 1) / 2), info("allreduce after"),
               "sum of every rank's");
  tally.expect(sclSend(a.data(), 1, sclInt32, w.rank, w.comm, nullptr) == sclInvalidUsage,
               info("send to self"), "outside a group, refused");
  sclStream_t s1 = nullptr, s2 = nullptr;
  MP_OK(sclStreamCreate(&s1));
  MP_OK(sclStreamCreate(&s2));
  const int next = (w.rank + 1) % w.n, prev = (w.rank + w.n - 1) % w.n;
  MP_OK(sclGroupStart());
  MP_OK(sclSend(a.data(), 64, sclInt32, next, w.comm, s1));
  const sclResult_t split = sclRecv(b.data(), 64, sclInt32, prev, w.comm, s2);
  const sclResult_t split_end = sclGroupEnd();
  tally.expect(split == sclInvalidUsage && split_end == sclInvalidUsage,
               info("send and receive on two streams"), "refused");
  MP_OK(sclStreamDestroy(s1));
  MP_OK(sclStreamDestroy(s2));
  MP_OK(sclAllReduce(a.data(), b.data(), 64, sclInt32, sclSum, w.comm, nullptr));
  tally.expect(b == std::vector<int32_t>(64, w.n * (w.n + 1) / 2), info("allreduce after"),
               "sum of every rank's, after the refused streams");
}

void allreduce_checked(const Comm& c, Tally& tally, const char* name, bool non_blocking) {
  const size_t count = 3001;
  std::vector<int64_t> v(count), want(count);
  for (size_t i = 0; i < count; ++i) v[i] = int64_t(c.rank) * 7 + int64_t(i);
  for (size_t i = 0; i < count; ++i) want[i] = int64_t(c.n) * (c.n - 1) / 2 * 7 + c.n * int64_t(i);
  const sclResult_t r = sclAllReduce(v.data(), v.data(), count, sclInt64, sclSum, c.comm, nullptr);
  tally.expect(non_blocking ? r == sclInProgress : r == sclSuccess, info(name),
               std::string("the call returns ") + sclGetErrorString(r));
  if (non_blocking) {
    tally.expect(wait_done(c.comm) == sclSuccess, info(name), "polled to sclSuccess");
  }
  tally.compare(info(name, sclInt64, count), "recv", v.data(), want.data(), count);
}

void non_blocking(const Comm& w, Tally& tally) {
  sclConfig_t config = SCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  config.minCTAs = 4;  // NCCL's fields: accepted
  config.cgaClusterSize = 2;
  config.netName = "IB";
  config.commName = "nonblocking";

  // Init by unique id, the id broadcast over the world.
  sclUniqueId id;
  if (w.rank == 0) MP_OK(sclGetUniqueId(&id));
  MP_OK(sclBroadcast(&id, &id, sizeof(id), sclUint8, 0, w.comm, nullptr));
  sclComm_t nb = nullptr;
  const sclResult_t ri = sclCommInitRankConfig(&nb, w.n, id, w.rank, &config);
  tally.expect(ri == sclInProgress && nb != nullptr, info("nonblocking init"),
               std::string("init returns sclInProgress and a handle: ") + sclGetErrorString(ri));
  tally.expect(wait_done(nb) == sclSuccess, info("nonblocking init"), "polled to sclSuccess");
  Comm c = describe(nb);
  allreduce_checked(c, tally, "nonblocking allreduce", true);

  // A MoE plan on it: queued like any call (sclInProgress), the plan's handle given at once.
  sclMoeConfig_t mc = SCL_MOE_CONFIG_INITIALIZER;
  mc.hidden = 64, mc.topk = 1, mc.numExperts = w.n, mc.maxTokensPerRank = 4;
  sclMoe_t moe = nullptr;
  const sclResult_t rm = sclMoeCreate(nb, &mc, &moe);
  tally.expect((rm == sclInProgress || rm == sclSuccess) && moe != nullptr,
               info("nonblocking MoE create"),
               std::string("returns a plan: ") + sclGetErrorString(rm));
  tally.expect(wait_done(nb) == sclSuccess, info("nonblocking MoE create"), "polled to sclSuccess");
  if (moe) MP_OK(sclMoeDestroy(moe));

  // Split of the non-blocking communicator (config NULL: the parent's mode), in reverse order.
  sclComm_t child = nullptr;
  const sclResult_t rs = sclCommSplit(nb, 0, w.n - w.rank, &child, nullptr);
  tally.expect(rs == sclInProgress && child != nullptr, info("nonblocking split"),
               std::string("split returns sclInProgress: ") + sclGetErrorString(rs));
  tally.expect(wait_done(child) == sclSuccess, info("nonblocking split"), "polled to sclSuccess");
  Comm cc = describe(child);
  tally.expect(cc.rank == w.n - 1 - w.rank, info("nonblocking split"), "ranked by key");
  allreduce_checked(cc, tally, "nonblocking split allreduce", true);

  // Finalize: sclInProgress, then done; later calls fail; destroy frees locally.
  for (sclComm_t h : {child, nb}) {
    const sclResult_t rf = sclCommFinalize(h);
    tally.expect(rf == sclInProgress && wait_done(h) == sclSuccess, info("nonblocking finalize"),
                 std::string("finalize returns sclInProgress, then polls to sclSuccess: ") +
                     sclGetErrorString(rf));
    int64_t x = 1;
    const sclResult_t after = sclAllReduce(&x, &x, 1, sclInt64, sclSum, h, nullptr);
    tally.expect(after == sclInvalidUsage || (after == sclInProgress && wait_done(h) != sclSuccess),
                 info("after finalize"), "a call after finalize fails");
    MP_OK(sclCommDestroy(h));
  }

  // A blocking split, finalized, then destroyed.
  sclComm_t blocking = nullptr;
  MP_OK(sclCommSplit(w.comm, 0, w.rank, &blocking, nullptr));
  Comm bc = describe(blocking);
  allreduce_checked(bc, tally, "blocking allreduce", false);
  MP_OK(sclCommFinalize(blocking));
  tally.expect(sclCommFinalize(blocking) == sclInvalidUsage, info("finalize twice"),
               "a second finalize is refused");
  int64_t x = 1;
  tally.expect(sclAllReduce(&x, &x, 1, sclInt64, sclSum, blocking, nullptr) == sclInvalidUsage,
               info("after finalize"), "a call after a blocking finalize fails");
  MP_OK(sclCommDestroy(blocking));

  // Configuration fields NCCL accepts are checked as NCCL would.
  sclConfig_t bad = SCL_CONFIG_INITIALIZER;
  bad.maxCTAs = -3;
  sclComm_t none = nullptr;
  // Each rank refuses its own (or, seeing a lower rank's refusal first, names that rank).
  const sclResult_t rc = sclCommSplit(w.comm, 0, 0, &none, &bad);
  const std::string why = sclGetLastError(w.comm);
  tally.expect(rc == sclInvalidArgument ||
                   (rc == sclInvalidUsage && why.find("could not prepare") != std::string::npos),
               info("config"),
               std::string("maxCTAs < 0 is refused: ") + sclGetErrorString(rc) + ": " + why);
  // Every rank passes it, so every rank fails alike: the world still works.
  allreduce_checked(w, tally, "world after refused split", false);
}

void init_all(Tally& tally) {
  sclComm_t comms[2] = {nullptr, nullptr};
  tally.expect(sclCommInitAll(comms, 2, nullptr) == sclInvalidUsage, info("initall"),
               "two ranks in one process are refused");
  const int dev0 = 0;
  MP_OK(sclCommInitAll(comms, 1, &dev0));
  Comm one = describe(comms[0]);
  tally.expect(one.n == 1 && one.rank == 0, info("initall"), "one rank");
  allreduce_checked(one, tally, "initall allreduce", false);
  MP_OK(sclCommDestroy(comms[0]));
}

}  // namespace

int run_nccl_api(int argc, char**) {
  if (argc != 0) fatal("nccl_api: takes no arguments");
  const Comm& w = world();
  Tally& tally = global_tally();
  version(tally);
  bcast(w, tally);
  premul(w, tally);
  windows(w, tally);
  sclStream_t stream;
  MP_OK(sclStreamCreate(&stream));
  for (int round = 0; round < 3; ++round) {
    recv_any(w, tally, nullptr);
    recv_any(w, tally, stream);
  }
  MP_OK(sclStreamDestroy(stream));
  recv_any_refusals(w, tally);
  group_refusals(w, tally);
  non_blocking(w, tally);
  init_all(tally);
  return finish("nccl_api");
}

}  // namespace mp
