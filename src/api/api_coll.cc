// C entry points: collectives and point-to-point. Each validates every argument (naming the one
// at fault, with no side effect), classifies its buffers once (heap, registered or foreign), and
// then submits the call.
#include <algorithm>
#include <optional>
#include <variant>

#include "api/handles.h"
#include "api/premul_ops.h"
#include "api/submit.h"
#include "api/validate.h"
#include "fabric/heap.h"

using namespace stratacl;
using namespace stratacl::api;

namespace {

// What a validated entry point submits: a collective or one point-to-point op.
using Work = std::variant<Call, P2POp>;

// A live communicator, and what validation needs of it.
struct Entry {
  Communicator* comm;
  int n() const { return comm->nranks(); }
  int rank() const { return comm->rank(); }
  MemKind kind(const void* p, size_t bytes) const {
    return classify(p, bytes, existing_heap(), &comm->registrations());
  }
};

// What a call refused for its arguments on a live communicator still takes part as
// (refuse_taking_part()): a collective of its kind, or a send or receive to a peer in range;
// else nothing (it is only reported).
struct Refusal {
  std::optional<Coll> coll;
  bool is_send = false;
  int peer = -1;
};
Refusal as_collective(Coll coll) { return Refusal{coll, false, -1}; }

// Common preamble: not a forked child, a live communicator, a live (or NULL) stream and a valid
// dtype.
template <typename Validate>
sclResult_t enter(sclComm_t c, sclStream_t s, const sclDataType_t& t, const Refusal& as,
                  Validate&& validate) {
  if (auto r = refused_in_child()) return *r;
  Communicator* comm = find_comm(c);
  if (!comm) return refuse(nullptr, not_live(c));
  const auto refused = [&](Status why) {
    if (as.coll) return refuse_taking_part(comm, s, *as.coll, std::move(why));
    if (as.peer >= 0 && as.peer < comm->nranks()) {
      P2POp op;
      op.is_send = as.is_send;
      op.peer = as.peer;
      op.refused = why.code();
      return refuse_taking_part(comm, s, op, std::move(why));
    }
    return refuse(comm, std::move(why));
  };
  if (s && !find_stream(s)) {
    Status why = Errorf(sclInvalidArgument, "stream: %p is not a live sclStream_t", (void*)s);
    s = nullptr;  // the refusal takes its turn on the NULL stream
    return refused(std::move(why));
  }
  if (Status st = check_dtype(t); !st.ok()) return refused(st);
  Result<Work> work = validate(Entry{comm});
  if (!work.ok()) return refused(work.status());
  return std::visit([&](const auto& w) { return submit(comm, s, w); }, *work);
}

// A call whose send buffer spans `send_bytes` and receive buffer `recv_bytes` (either may be
// null on ranks that do not use it).
Call make_call(const Entry& e, Coll coll, sclDataType_t t, sclRedOp_t op, int root, size_t count,
               const void* send, size_t send_bytes, void* recv, size_t recv_bytes) {
  Call c;
  c.coll = coll;
  c.dtype = t;
  c.op = op;
  c.root = root;
  c.count = count;
  c.send = LocalBuffer{static_cast<const char*>(send), e.kind(send, send_bytes)};
  c.recv = static_cast<char*>(recv);
  c.recv_kind = e.kind(recv, recv_bytes);
  return c;
}

// A reducing call with its PreMulSum scalar, if any.
Work with(const PreMul& premul, Call call) {
  call.premul = premul;
  return Work{call};
}

const char* at(const void* base, size_t bytes) { return static_cast<const char*>(base) + bytes; }

// A buffer argument as validation sees it.
struct Arg {
  const char* name;
  const void* ptr;
  size_t bytes;
};

// Rooted calls (broadcast, reduce, gather, scatter): `each` is the buffer every rank passes,
// `at_root` the one only the root passes (ignored elsewhere). At the root they may overlap only
// in the in-place layout, with `each` at `in_place`.
Status check_rooted(const Entry& e, int root, sclDataType_t t, const Arg& each, const Arg& at_root,
                    const void* in_place) {
  SCL_TRY(check_rank("root", root, e.n()));
  SCL_TRY(check_buffer(each.name, each.ptr, each.bytes, t));
  if (e.rank() != root) return Status::Ok();
  SCL_TRY(check_buffer(at_root.name, at_root.ptr, at_root.bytes, t));
  return check_overlap(each.name, each.ptr, each.bytes, at_root.name, at_root.ptr, at_root.bytes,
                       in_place);
}

}  // namespace

extern "C" {

sclResult_t sclAllReduce(const void* sendbuff, void* recvbuff, size_t count, sclDataType_t datatype,
                         sclRedOp_t op, sclComm_t comm, sclStream_t stream) {
  return enter(
      comm, stream, datatype, as_collective(Coll::kAllReduce), [&](const Entry& e) -> Result<Work> {
        sclRedOp_t run;
        PreMul premul;
        SCL_TRY(resolve_op(e.comm, op, datatype, &run, &premul));
        size_t bytes;
        SCL_TRY(byte_size("count", count, 1, datatype, &bytes));
        SCL_TRY(check_buffer("sendbuff", sendbuff, bytes, datatype));
        SCL_TRY(check_buffer("recvbuff", recvbuff, bytes, datatype));
        SCL_TRY(check_overlap("sendbuff", sendbuff, bytes, "recvbuff", recvbuff, bytes, recvbuff));
        return with(premul, make_call(e, Coll::kAllReduce, datatype, run, 0, count, sendbuff, bytes,
                                      recvbuff, bytes));
      });
}

sclResult_t sclBroadcast(const void* sendbuff, void* recvbuff, size_t count, sclDataType_t datatype,
                         int root, sclComm_t comm, sclStream_t stream) {
  return enter(comm, stream, datatype, as_collective(Coll::kBroadcast),
               [&](const Entry& e) -> Result<Work> {
                 size_t bytes;
                 SCL_TRY(byte_size("count", count, 1, datatype, &bytes));
                 SCL_TRY(check_rooted(e, root, datatype, Arg{"recvbuff", recvbuff, bytes},
                                      Arg{"sendbuff", sendbuff, bytes}, sendbuff));
                 const void* send = e.rank() == root ? sendbuff : nullptr;
                 return Work{make_call(e, Coll::kBroadcast, datatype, sclSum, root, count, send,
                                       bytes, recvbuff, bytes)};
               });
}

sclResult_t sclBcast(void* buff, size_t count, sclDataType_t datatype, int root, sclComm_t comm,
                     sclStream_t stream) {
  return sclBroadcast(buff, buff, count, datatype, root, comm, stream);
}

sclResult_t sclReduce(const void* sendbuff, void* recvbuff, size_t count, sclDataType_t datatype,
                      sclRedOp_t op, int root, sclComm_t comm, sclStream_t stream) {
  return enter(comm, stream, datatype, as_collective(Coll::kReduce),
               [&](const Entry& e) -> Result<Work> {
                 sclRedOp_t run;
                 PreMul premul;
                 SCL_TRY(resolve_op(e.comm, op, datatype, &run, &premul));
                 size_t bytes;
                 SCL_TRY(byte_size("count", count, 1, datatype, &bytes));
                 SCL_TRY(check_rooted(e, root, datatype, Arg{"sendbuff", sendbuff, bytes},
                                      Arg{"recvbuff", recvbuff, bytes}, recvbuff));
                 void* recv = e.rank() == root ? recvbuff : nullptr;
                 return with(premul, make_call(e, Coll::kReduce, datatype, run, root, count,
                                               sendbuff, bytes, recv, bytes));
               });
}

sclResult_t sclGather(const void* sendbuff, void* recvbuff, size_t count, sclDataType_t datatype,
                      int root, sclComm_t comm, sclStream_t stream) {
  return enter(
      comm, stream, datatype, as_collective(Coll::kGather), [&](const Entry& e) -> Result<Work> {
        size_t bytes, total;
        SCL_TRY(byte_size("count", count, 1, datatype, &bytes));
        SCL_TRY(byte_size("count", count, size_t(e.n()), datatype, &total));
        SCL_TRY(check_rooted(e, root, datatype, Arg{"sendbuff", sendbuff, bytes},
                             Arg{"recvbuff", recvbuff, total}, at(recvbuff, size_t(root) * bytes)));
        void* recv = e.rank() == root ? recvbuff : nullptr;
        return Work{make_call(e, Coll::kGather, datatype, sclSum, root, count, sendbuff, bytes,
                              recv, total)};
      });
}

sclResult_t sclScatter(const void* sendbuff, void* recvbuff, size_t count, sclDataType_t datatype,
                       int root, sclComm_t comm, sclStream_t stream) {
  return enter(
      comm, stream, datatype, as_collective(Coll::kScatter), [&](const Entry& e) -> Result<Work> {
        size_t bytes, total;
        SCL_TRY(byte_size("count", count, 1, datatype, &bytes));
        SCL_TRY(byte_size("count", count, size_t(e.n()), datatype, &total));
        SCL_TRY(check_rooted(e, root, datatype, Arg{"recvbuff", recvbuff, bytes},
                             Arg{"sendbuff", sendbuff, total}, at(sendbuff, size_t(root) * bytes)));
        const void* send = e.rank() == root ? sendbuff : nullptr;
        return Work{make_call(e, Coll::kScatter, datatype, sclSum, root, count, send, total,
                              recvbuff, bytes)};
      });
}

sclResult_t sclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                         sclDataType_t datatype, sclComm_t comm, sclStream_t stream) {
  return enter(comm, stream, datatype, as_collective(Coll::kAllGather),
               [&](const Entry& e) -> Result<Work> {
                 size_t bytes, total;
                 SCL_TRY(byte_size("sendcount", sendcount, 1, datatype, &bytes));
                 SCL_TRY(byte_size("sendcount", sendcount, size_t(e.n()), datatype, &total));
                 SCL_TRY(check_buffer("sendbuff", sendbuff, bytes, datatype));
                 SCL_TRY(check_buffer("recvbuff", recvbuff, total, datatype));
                 SCL_TRY(check_overlap("sendbuff", sendbuff, bytes, "recvbuff", recvbuff, total,
                                       at(recvbuff, size_t(e.rank()) * bytes)));
                 return Work{make_call(e, Coll::kAllGather, datatype, sclSum, 0, sendcount,
                                       sendbuff, bytes, recvbuff, total)};
               });
}

sclResult_t sclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                             sclDataType_t datatype, sclRedOp_t op, sclComm_t comm,
                             sclStream_t stream) {
  return enter(comm, stream, datatype, as_collective(Coll::kReduceScatter),
               [&](const Entry& e) -> Result<Work> {
                 sclRedOp_t run;
                 PreMul premul;
                 SCL_TRY(resolve_op(e.comm, op, datatype, &run, &premul));
                 size_t bytes, total;
                 SCL_TRY(byte_size("recvcount", recvcount, 1, datatype, &bytes));
                 SCL_TRY(byte_size("recvcount", recvcount, size_t(e.n()), datatype, &total));
                 SCL_TRY(check_buffer("sendbuff", sendbuff, total, datatype));
                 SCL_TRY(check_buffer("recvbuff", recvbuff, bytes, datatype));
                 SCL_TRY(check_overlap("recvbuff", recvbuff, bytes, "sendbuff", sendbuff, total,
                                       at(sendbuff, size_t(e.rank()) * bytes)));
                 return with(premul, make_call(e, Coll::kReduceScatter, datatype, run, 0, recvcount,
                                               sendbuff, total, recvbuff, bytes));
               });
}

sclResult_t sclAlltoAll(const void* sendbuff, void* recvbuff, size_t count, sclDataType_t datatype,
                        sclComm_t comm, sclStream_t stream) {
  return enter(
      comm, stream, datatype, as_collective(Coll::kAlltoAll), [&](const Entry& e) -> Result<Work> {
        size_t total;
        SCL_TRY(byte_size("count", count, size_t(e.n()), datatype, &total));
        SCL_TRY(check_buffer("sendbuff", sendbuff, total, datatype));
        SCL_TRY(check_buffer("recvbuff", recvbuff, total, datatype));
        SCL_TRY(check_overlap("sendbuff", sendbuff, total, "recvbuff", recvbuff, total, nullptr));
        return Work{make_call(e, Coll::kAlltoAll, datatype, sclSum, 0, count, sendbuff, total,
                              recvbuff, total)};
      });
}

sclResult_t sclAlltoAllv(const void* sendbuff, const size_t sendcounts[], const size_t sdispls[],
                         void* recvbuff, const size_t recvcounts[], const size_t rdispls[],
                         sclDataType_t datatype, sclComm_t comm, sclStream_t stream) {
  return enter(
      comm, stream, datatype, as_collective(Coll::kAlltoAllv), [&](const Entry& e) -> Result<Work> {
        const char* names[4] = {"sendcounts", "sdispls", "recvcounts", "rdispls"};
        const size_t* arrays[4] = {sendcounts, sdispls, recvcounts, rdispls};
        for (int i = 0; i < 4; ++i) {
          if (!arrays[i]) return (Errorf(sclInvalidArgument, "%s: NULL array", names[i]));
        }
        size_t extent[2] = {0, 0};  // send, recv: bytes up to the end of the furthest block
        for (int side = 0; side < 2; ++side) {
          for (int p = 0; p < e.n(); ++p) {
            size_t end;
            if (__builtin_add_overflow(arrays[2 * side + 1][p], arrays[2 * side][p], &end)) {
              return (Errorf(sclInvalidArgument, "%s[%d] + %s[%d] overflows", names[2 * side + 1],
                             p, names[2 * side], p));
            }
            if (arrays[2 * side][p] == 0) continue;
            size_t b;
            SCL_TRY(byte_size(names[2 * side], end, 1, datatype, &b));
            extent[side] = std::max(extent[side], b);
          }
        }
        SCL_TRY(check_buffer("sendbuff", sendbuff, extent[0], datatype));
        SCL_TRY(check_buffer("recvbuff", recvbuff, extent[1], datatype));
        SCL_TRY(check_overlap("sendbuff", sendbuff, extent[0], "recvbuff", recvbuff, extent[1],
                              nullptr));
        Call c = make_call(e, Coll::kAlltoAllv, datatype, sclSum, 0, 0, sendbuff, extent[0],
                           recvbuff, extent[1]);
        c.sendcounts = sendcounts, c.sdispls = sdispls, c.recvcounts = recvcounts,
        c.rdispls = rdispls;
        return Work{c};
      });
}

sclResult_t sclSend(const void* sendbuff, size_t count, sclDataType_t datatype, int peer,
                    sclComm_t comm, sclStream_t stream) {
  return enter(
      comm, stream, datatype, Refusal{std::nullopt, true, peer},
      [&](const Entry& e) -> Result<Work> {
        SCL_TRY(check_rank("peer", peer, e.n()));
        size_t bytes;
        SCL_TRY(byte_size("count", count, 1, datatype, &bytes));
        SCL_TRY(check_buffer("sendbuff", sendbuff, bytes, datatype));
        const LocalBuffer send{static_cast<const char*>(sendbuff), e.kind(sendbuff, bytes)};
        return Work{P2POp{true, peer, nullptr, send, nullptr, count, datatype}};
      });
}

sclResult_t sclRecv(void* recvbuff, size_t count, sclDataType_t datatype, int peer, sclComm_t comm,
                    sclStream_t stream) {
  return enter(comm, stream, datatype, Refusal{std::nullopt, false, peer},
               [&](const Entry& e) -> Result<Work> {
                 SCL_TRY(check_rank("peer", peer, e.n()));
                 size_t bytes;
                 SCL_TRY(byte_size("count", count, 1, datatype, &bytes));
                 SCL_TRY(check_buffer("recvbuff", recvbuff, bytes, datatype));
                 return Work{P2POp{false, peer, nullptr, LocalBuffer{},
                                   static_cast<char*>(recvbuff), count, datatype}};
               });
}

sclResult_t sclRecvAny(void* recvbuff, size_t count, sclDataType_t datatype, int* source,
                       sclComm_t comm, sclStream_t stream) {
  return enter(comm, stream, datatype, Refusal{}, [&](const Entry& e) -> Result<Work> {
    if (!source) return Errorf(sclInvalidArgument, "source: NULL pointer");
    if (e.comm->spans_hosts()) {
      return Errorf(sclInvalidUsage,
                    "sclRecvAny: a receive from any source works among the ranks of one host; "
                    "this communicator spans hosts");
    }
    size_t bytes;
    SCL_TRY(byte_size("count", count, 1, datatype, &bytes));
    SCL_TRY(check_buffer("recvbuff", recvbuff, bytes, datatype));
    P2POp op{false, kAnySource, source, LocalBuffer{}, static_cast<char*>(recvbuff),
             count, datatype};
    return Work{op};
  });
}

sclResult_t sclRedOpCreatePreMulSum(sclRedOp_t* op, void* scalar, sclDataType_t datatype,
                                    sclScalarResidence_t residence, sclComm_t comm) {
  if (auto r = refused_in_child()) return *r;
  Communicator* c = find_comm(comm);
  if (!c) return report(nullptr, not_live(comm));
  return report(c, create_premul(c, scalar, datatype, residence, op));
}

sclResult_t sclRedOpDestroy(sclRedOp_t op, sclComm_t comm) {
  if (auto r = refused_in_child()) return *r;
  Communicator* c = find_comm(comm);
  if (!c) return report(nullptr, not_live(comm));
  return report(c, destroy_premul(c, op));
}

sclResult_t sclBarrier(sclComm_t comm, sclStream_t stream) {
  return enter(
      comm, stream, sclUint8, as_collective(Coll::kBarrier), [&](const Entry& e) -> Result<Work> {
        return Work{make_call(e, Coll::kBarrier, sclUint8, sclSum, 0, 0, nullptr, 0, nullptr, 0)};
      });
}

}  // extern "C"
