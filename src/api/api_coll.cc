// C entry points: collectives and point-to-point. Each validates every argument (naming the one
// at fault, with no side effect) and then submits the call.
#include <algorithm>
#include <variant>

#include "api/handles.h"
#include "api/submit.h"
#include "api/validate.h"

using namespace stratacl;
using namespace stratacl::api;

namespace {

// What a validated entry point submits: a collective or one point-to-point op.
using Work = std::variant<Call, P2POp>;

// Common preamble: a live communicator, a live (or NULL) stream and a valid dtype.
struct Entry {
  Communicator* comm;
  int n() const { return comm->nranks(); }
  int rank() const { return comm->rank(); }
};

template <typename Validate>
sclResult_t enter(sclComm_t c, sclStream_t s, const sclDataType_t& t, Validate&& validate) {
  Communicator* comm = find_comm(c);
  if (!comm)
    return report(nullptr, Errorf(sclInvalidArgument, "comm: %p is NULL or not a live communicator",
                                  (void*)c));
  if (s && !find_stream(s))
    return report(comm,
                  Errorf(sclInvalidArgument, "stream: %p is not a live sclStream_t", (void*)s));
  if (Status st = check_dtype(t); !st.ok()) return report(comm, st);
  Result<Work> work = validate(Entry{comm});
  if (!work.ok()) return report(comm, work.status());
  return std::visit([&](const auto& w) { return submit(comm, s, w); }, *work);
}

Call make_call(Coll coll, sclDataType_t t, sclRedOp_t op, int root, size_t count, const void* send,
               void* recv) {
  Call c;
  c.coll = coll;
  c.dtype = t;
  c.op = op;
  c.root = root;
  c.count = count;
  c.send = static_cast<const char*>(send);
  c.recv = static_cast<char*>(recv);
  return c;
}

const char* at(const void* base, size_t bytes) { return static_cast<const char*>(base) + bytes; }

}  // namespace

extern "C" {

sclResult_t sclAllReduce(const void* sendbuff, void* recvbuff, size_t count, sclDataType_t datatype,
                         sclRedOp_t op, sclComm_t comm, sclStream_t stream) {
  return enter(comm, stream, datatype, [&](const Entry&) -> Result<Work> {
    SCL_TRY(check_op(op));
    size_t bytes;
    SCL_TRY(byte_size("count", count, 1, datatype, &bytes));
    SCL_TRY(check_buffer("sendbuff", sendbuff, bytes, datatype));
    SCL_TRY(check_buffer("recvbuff", recvbuff, bytes, datatype));
    SCL_TRY(check_overlap("sendbuff", sendbuff, bytes, "recvbuff", recvbuff, bytes, recvbuff));
    return Work{make_call(Coll::kAllReduce, datatype, op, 0, count, sendbuff, recvbuff)};
  });
}

sclResult_t sclBroadcast(const void* sendbuff, void* recvbuff, size_t count, sclDataType_t datatype,
                         int root, sclComm_t comm, sclStream_t stream) {
  return enter(comm, stream, datatype, [&](const Entry& e) -> Result<Work> {
    SCL_TRY(check_rank("root", root, e.n()));
    size_t bytes;
    SCL_TRY(byte_size("count", count, 1, datatype, &bytes));
    const bool is_root = e.rank() == root;
    if (is_root) SCL_TRY(check_buffer("sendbuff", sendbuff, bytes, datatype));
    SCL_TRY(check_buffer("recvbuff", recvbuff, bytes, datatype));
    if (is_root)
      SCL_TRY(check_overlap("sendbuff", sendbuff, bytes, "recvbuff", recvbuff, bytes, recvbuff));
    return Work{make_call(Coll::kBroadcast, datatype, sclSum, root, count,
                          is_root ? sendbuff : nullptr, recvbuff)};
  });
}

sclResult_t sclReduce(const void* sendbuff, void* recvbuff, size_t count, sclDataType_t datatype,
                      sclRedOp_t op, int root, sclComm_t comm, sclStream_t stream) {
  return enter(comm, stream, datatype, [&](const Entry& e) -> Result<Work> {
    SCL_TRY(check_op(op));
    SCL_TRY(check_rank("root", root, e.n()));
    size_t bytes;
    SCL_TRY(byte_size("count", count, 1, datatype, &bytes));
    const bool is_root = e.rank() == root;
    SCL_TRY(check_buffer("sendbuff", sendbuff, bytes, datatype));
    if (is_root) {
      SCL_TRY(check_buffer("recvbuff", recvbuff, bytes, datatype));
      SCL_TRY(check_overlap("sendbuff", sendbuff, bytes, "recvbuff", recvbuff, bytes, recvbuff));
    }
    return Work{make_call(Coll::kReduce, datatype, op, root, count, sendbuff,
                          is_root ? recvbuff : nullptr)};
  });
}

sclResult_t sclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                         sclDataType_t datatype, sclComm_t comm, sclStream_t stream) {
  return enter(comm, stream, datatype, [&](const Entry& e) -> Result<Work> {
    size_t bytes;
    SCL_TRY(byte_size("sendcount", sendcount, 1, datatype, &bytes));
    size_t total;
    SCL_TRY(byte_size("sendcount", sendcount, size_t(e.n()), datatype, &total));
    SCL_TRY(check_buffer("sendbuff", sendbuff, bytes, datatype));
    SCL_TRY(check_buffer("recvbuff", recvbuff, total, datatype));
    SCL_TRY(check_overlap("sendbuff", sendbuff, bytes, "recvbuff", recvbuff, total,
                          at(recvbuff, size_t(e.rank()) * bytes)));
    return Work{make_call(Coll::kAllGather, datatype, sclSum, 0, sendcount, sendbuff, recvbuff)};
  });
}

sclResult_t sclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                             sclDataType_t datatype, sclRedOp_t op, sclComm_t comm,
                             sclStream_t stream) {
  return enter(comm, stream, datatype, [&](const Entry& e) -> Result<Work> {
    SCL_TRY(check_op(op));
    size_t bytes;
    SCL_TRY(byte_size("recvcount", recvcount, 1, datatype, &bytes));
    size_t total;
    SCL_TRY(byte_size("recvcount", recvcount, size_t(e.n()), datatype, &total));
    SCL_TRY(check_buffer("sendbuff", sendbuff, total, datatype));
    SCL_TRY(check_buffer("recvbuff", recvbuff, bytes, datatype));
    SCL_TRY(check_overlap("recvbuff", recvbuff, bytes, "sendbuff", sendbuff, total,
                          at(sendbuff, size_t(e.rank()) * bytes)));
    return Work{make_call(Coll::kReduceScatter, datatype, op, 0, recvcount, sendbuff, recvbuff)};
  });
}

sclResult_t sclAlltoAll(const void* sendbuff, void* recvbuff, size_t count, sclDataType_t datatype,
                        sclComm_t comm, sclStream_t stream) {
  return enter(comm, stream, datatype, [&](const Entry& e) -> Result<Work> {
    size_t total;
    SCL_TRY(byte_size("count", count, size_t(e.n()), datatype, &total));
    SCL_TRY(check_buffer("sendbuff", sendbuff, total, datatype));
    SCL_TRY(check_buffer("recvbuff", recvbuff, total, datatype));
    SCL_TRY(check_overlap("sendbuff", sendbuff, total, "recvbuff", recvbuff, total, nullptr));
    return Work{make_call(Coll::kAlltoAll, datatype, sclSum, 0, count, sendbuff, recvbuff)};
  });
}

sclResult_t sclAlltoAllv(const void* sendbuff, const size_t sendcounts[], const size_t sdispls[],
                         void* recvbuff, const size_t recvcounts[], const size_t rdispls[],
                         sclDataType_t datatype, sclComm_t comm, sclStream_t stream) {
  return enter(comm, stream, datatype, [&](const Entry& e) -> Result<Work> {
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
          return (Errorf(sclInvalidArgument, "%s[%d] + %s[%d] overflows", names[2 * side + 1], p,
                         names[2 * side], p));
        }
        if (arrays[2 * side][p] == 0) continue;
        size_t b;
        SCL_TRY(byte_size(names[2 * side], end, 1, datatype, &b));
        extent[side] = std::max(extent[side], b);
      }
    }
    SCL_TRY(check_buffer("sendbuff", sendbuff, extent[0], datatype));
    SCL_TRY(check_buffer("recvbuff", recvbuff, extent[1], datatype));
    SCL_TRY(
        check_overlap("sendbuff", sendbuff, extent[0], "recvbuff", recvbuff, extent[1], nullptr));
    Call c = make_call(Coll::kAlltoAllv, datatype, sclSum, 0, 0, sendbuff, recvbuff);
    c.sendcounts = sendcounts, c.sdispls = sdispls, c.recvcounts = recvcounts, c.rdispls = rdispls;
    return Work{c};
  });
}

sclResult_t sclGather(const void* sendbuff, void* recvbuff, size_t count, sclDataType_t datatype,
                      int root, sclComm_t comm, sclStream_t stream) {
  return enter(comm, stream, datatype, [&](const Entry& e) -> Result<Work> {
    SCL_TRY(check_rank("root", root, e.n()));
    size_t bytes;
    SCL_TRY(byte_size("count", count, 1, datatype, &bytes));
    size_t total;
    SCL_TRY(byte_size("count", count, size_t(e.n()), datatype, &total));
    const bool is_root = e.rank() == root;
    SCL_TRY(check_buffer("sendbuff", sendbuff, bytes, datatype));
    if (is_root) {
      SCL_TRY(check_buffer("recvbuff", recvbuff, total, datatype));
      SCL_TRY(check_overlap("sendbuff", sendbuff, bytes, "recvbuff", recvbuff, total,
                            at(recvbuff, size_t(root) * bytes)));
    }
    return Work{make_call(Coll::kGather, datatype, sclSum, root, count, sendbuff,
                          is_root ? recvbuff : nullptr)};
  });
}

sclResult_t sclScatter(const void* sendbuff, void* recvbuff, size_t count, sclDataType_t datatype,
                       int root, sclComm_t comm, sclStream_t stream) {
  return enter(comm, stream, datatype, [&](const Entry& e) -> Result<Work> {
    SCL_TRY(check_rank("root", root, e.n()));
    size_t bytes;
    SCL_TRY(byte_size("count", count, 1, datatype, &bytes));
    size_t total;
    SCL_TRY(byte_size("count", count, size_t(e.n()), datatype, &total));
    const bool is_root = e.rank() == root;
    SCL_TRY(check_buffer("recvbuff", recvbuff, bytes, datatype));
    if (is_root) {
      SCL_TRY(check_buffer("sendbuff", sendbuff, total, datatype));
      SCL_TRY(check_overlap("recvbuff", recvbuff, bytes, "sendbuff", sendbuff, total,
                            at(sendbuff, size_t(root) * bytes)));
    }
    return Work{make_call(Coll::kScatter, datatype, sclSum, root, count,
                          is_root ? sendbuff : nullptr, recvbuff)};
  });
}

sclResult_t sclSend(const void* sendbuff, size_t count, sclDataType_t datatype, int peer,
                    sclComm_t comm, sclStream_t stream) {
  return enter(comm, stream, datatype, [&](const Entry& e) -> Result<Work> {
    SCL_TRY(check_rank("peer", peer, e.n()));
    size_t bytes;
    SCL_TRY(byte_size("count", count, 1, datatype, &bytes));
    SCL_TRY(check_buffer("sendbuff", sendbuff, bytes, datatype));
    P2POp op{true, peer, static_cast<const char*>(sendbuff), nullptr, count, datatype};
    return Work{op};
  });
}

sclResult_t sclRecv(void* recvbuff, size_t count, sclDataType_t datatype, int peer, sclComm_t comm,
                    sclStream_t stream) {
  return enter(comm, stream, datatype, [&](const Entry& e) -> Result<Work> {
    SCL_TRY(check_rank("peer", peer, e.n()));
    size_t bytes;
    SCL_TRY(byte_size("count", count, 1, datatype, &bytes));
    SCL_TRY(check_buffer("recvbuff", recvbuff, bytes, datatype));
    P2POp op{false, peer, nullptr, static_cast<char*>(recvbuff), count, datatype};
    return Work{op};
  });
}

sclResult_t sclBarrier(sclComm_t comm, sclStream_t stream) {
  return enter(comm, stream, sclUint8, [&](const Entry&) -> Result<Work> {
    return Work{make_call(Coll::kBarrier, sclUint8, sclSum, 0, 0, nullptr, nullptr)};
  });
}

}  // extern "C"
