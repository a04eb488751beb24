#include "calls.h"

#include <cstdio>

#include "reference.h"

namespace mp {

const char* coll_name(Coll c) {
  switch (c) {
    case Coll::kAllReduce:
      return "allreduce";
    case Coll::kBroadcast:
      return "broadcast";
    case Coll::kReduce:
      return "reduce";
    case Coll::kAllGather:
      return "allgather";
    case Coll::kReduceScatter:
      return "reducescatter";
    case Coll::kAlltoAll:
      return "alltoall";
    case Coll::kAlltoAllv:
      return "alltoallv";
    case Coll::kGather:
      return "gather";
    case Coll::kScatter:
      return "scatter";
    case Coll::kSendRecvRing:
      return "sendrecv-ring";
    case Coll::kBarrier:
      return "barrier";
  }
  return "?";
}

bool reduces(Coll c) {
  return c == Coll::kAllReduce || c == Coll::kReduce || c == Coll::kReduceScatter;
}
bool rooted(Coll c) {
  return c == Coll::kBroadcast || c == Coll::kReduce || c == Coll::kGather || c == Coll::kScatter;
}
bool has_in_place(Coll c) {
  return c != Coll::kAlltoAll && c != Coll::kAlltoAllv && c != Coll::kSendRecvRing &&
         c != Coll::kBarrier;
}

PreparedCall::PreparedCall(const Comm& comm, const CallSpec& spec) : comm_(comm), spec_(spec) {
  a_.name = "send";
  b_.name = spec.placement.in_place ? "buf" : "recv";
  setup();
}

PreparedCall::~PreparedCall() = default;

CallInfo PreparedCall::info() const {
  CallInfo info;
  info.coll = coll_name(spec_.coll);
  info.dtype = spec_.dtype;
  info.op = spec_.op;
  info.count = spec_.count;
  info.root = spec_.root;
  char buf[256];
  snprintf(buf, sizeof buf, "buffers=%s%s ranks=%d%s%s", spec_.placement.name,
           spec_.placement.in_place ? " (in place)" : "", comm_.n, spec_.context.empty() ? "" : " ",
           spec_.context.c_str());
  info.detail = buf;
  return info;
}

size_t PreparedCall::vcount(int from, int to) const {
  const size_t c = spec_.count;
  if (c == 0) return 0;
  const long long v = (long long)c + (long long)((from * 7 + to * 3 + int(spec_.seed % 5)) % 5) - 2;
  return v < 0 ? 0 : size_t(v);
}

void PreparedCall::alloc(Slot& s, Mem mem, size_t count, size_t offset) {
  s.used = true;
  s.buf = Buffer(mem, spec_.dtype, count, offset, ref::sentinel_byte(spec_.seed), comm_.comm);
}

void PreparedCall::setup() {
  const int me = comm_.rank, n = comm_.n;
  const size_t c = spec_.count;
  const size_t nc = c * size_t(n);
  const Placement& pl = spec_.placement;
  const bool inplace = pl.in_place;
  const int root = spec_.root;
  const bool is_root = me == root;
  auto input = [](size_t at, size_t len, int rank, uint64_t first) {
    return Segment{at, len, false, rank, first};
  };
  auto reduced = [](size_t at, size_t len, uint64_t first) {
    return Segment{at, len, true, 0, first};
  };

  switch (spec_.coll) {
    case Coll::kAllReduce:
      if (inplace) {
        alloc(b_, pl.recv_mem, c, pl.recv_offset);
        b_.initial = {input(0, c, me, 0)};
        b_.expected = {reduced(0, c, 0)};
        send_ = recv_ = b_.buf.data();
      } else {
        alloc(a_, pl.send_mem, c, pl.send_offset);
        alloc(b_, pl.recv_mem, c, pl.recv_offset);
        a_.initial = a_.expected = {input(0, c, me, 0)};
        b_.expected = {reduced(0, c, 0)};
        send_ = a_.buf.data();
        recv_ = b_.buf.data();
      }
      break;
    case Coll::kBroadcast:
      if (inplace) {
        alloc(b_, pl.recv_mem, c, pl.recv_offset);
        if (is_root) b_.initial = {input(0, c, me, 0)};
        b_.expected = {input(0, c, root, 0)};
        send_ = recv_ = b_.buf.data();
      } else {
        // Non-roots get a send buffer too (its content must be ignored and left alone).
        alloc(a_, pl.send_mem, c, pl.send_offset);
        alloc(b_, pl.recv_mem, c, pl.recv_offset);
        a_.initial = a_.expected = {input(0, c, me, 0)};
        b_.expected = {input(0, c, root, 0)};
        send_ = a_.buf.data();
        recv_ = b_.buf.data();
      }
      break;
    case Coll::kReduce:
      if (inplace) {
        alloc(b_, pl.recv_mem, c, pl.recv_offset);
        b_.initial = {input(0, c, me, 0)};
        b_.expected = is_root ? std::vector<Segment>{reduced(0, c, 0)} : b_.initial;
        send_ = recv_ = b_.buf.data();
      } else {
        alloc(a_, pl.send_mem, c, pl.send_offset);
        alloc(b_, pl.recv_mem, c, pl.recv_offset);  // untouched on non-roots
        a_.initial = a_.expected = {input(0, c, me, 0)};
        if (is_root) b_.expected = {reduced(0, c, 0)};
        send_ = a_.buf.data();
        recv_ = b_.buf.data();
      }
      break;
    case Coll::kAllGather: {
      alloc(b_, pl.recv_mem, nc, pl.recv_offset);
      for (int r = 0; r < n; ++r) b_.expected.push_back(input(size_t(r) * c, c, r, 0));
      recv_ = b_.buf.data();
      if (inplace) {
        b_.initial = {input(size_t(me) * c, c, me, 0)};
        send_ = b_.buf.at(size_t(me) * c);
      } else {
        alloc(a_, pl.send_mem, c, pl.send_offset);
        a_.initial = a_.expected = {input(0, c, me, 0)};
        send_ = a_.buf.data();
      }
      break;
    }
    case Coll::kReduceScatter:
      if (inplace) {
        alloc(b_, pl.recv_mem, nc, pl.recv_offset);
        b_.initial = {input(0, nc, me, 0)};
        // Our chunk becomes the reduction; the rest of the (const) send buffer stays as it was.
        const size_t lo = size_t(me) * c;
        b_.expected = {input(0, lo, me, 0), reduced(lo, c, lo),
                       input(lo + c, nc - lo - c, me, lo + c)};
        send_ = b_.buf.data();
        recv_ = b_.buf.at(lo);
      } else {
        alloc(a_, pl.send_mem, nc, pl.send_offset);
        alloc(b_, pl.recv_mem, c, pl.recv_offset);
        a_.initial = a_.expected = {input(0, nc, me, 0)};
        b_.expected = {reduced(0, c, size_t(me) * c)};
        send_ = a_.buf.data();
        recv_ = b_.buf.data();
      }
      break;
    case Coll::kAlltoAll:
      alloc(a_, pl.send_mem, nc, pl.send_offset);
      alloc(b_, pl.recv_mem, nc, pl.recv_offset);
      a_.initial = a_.expected = {input(0, nc, me, 0)};
      for (int r = 0; r < n; ++r) {
        b_.expected.push_back(input(size_t(r) * c, c, r, size_t(me) * c));
      }
      send_ = a_.buf.data();
      recv_ = b_.buf.data();
      break;
    case Coll::kAlltoAllv: {
      // Send blocks in reverse peer order with one-element gaps; receive blocks in peer order
      // after a one-element lead gap, with two-element gaps. Gaps must stay untouched.
      sendcounts_.assign(size_t(n), 0);
      sdispls_.assign(size_t(n), 0);
      recvcounts_.assign(size_t(n), 0);
      rdispls_.assign(size_t(n), 0);
      // sdispl(s, d): where rank s keeps its block for rank d.
      auto sdispl = [&](int s, int d) {
        size_t at = 0;
        for (int p = n - 1; p > d; --p) at += vcount(s, p) + 1;
        return at;
      };
      size_t send_total = 0, recv_total = 1;
      for (int p = 0; p < n; ++p) {
        sendcounts_[size_t(p)] = vcount(me, p);
        sdispls_[size_t(p)] = sdispl(me, p);
        send_total += vcount(me, p) + 1;
        recvcounts_[size_t(p)] = vcount(p, me);
        rdispls_[size_t(p)] = recv_total;
        recv_total += vcount(p, me) + 2;
      }
      alloc(a_, pl.send_mem, send_total, pl.send_offset);
      alloc(b_, pl.recv_mem, recv_total, pl.recv_offset);
      a_.initial = a_.expected = {input(0, send_total, me, 0)};
      for (int p = 0; p < n; ++p) {
        b_.expected.push_back(input(rdispls_[size_t(p)], recvcounts_[size_t(p)], p, sdispl(p, me)));
      }
      send_ = a_.buf.data();
      recv_ = b_.buf.data();
      break;
    }
    case Coll::kGather:
      if (inplace && is_root) {
        alloc(b_, pl.recv_mem, nc, pl.recv_offset);
        b_.initial = {input(size_t(me) * c, c, me, 0)};
        for (int r = 0; r < n; ++r) b_.expected.push_back(input(size_t(r) * c, c, r, 0));
        recv_ = b_.buf.data();
        send_ = b_.buf.at(size_t(me) * c);
      } else if (inplace) {
        // In place only concerns the root; the others send from their own buffer and pass
        // no receive buffer at all.
        alloc(a_, pl.recv_mem, c, pl.recv_offset);
        a_.initial = a_.expected = {input(0, c, me, 0)};
        send_ = a_.buf.data();
        recv_ = nullptr;
      } else {
        alloc(a_, pl.send_mem, c, pl.send_offset);
        alloc(b_, pl.recv_mem, nc, pl.recv_offset);  // untouched on non-roots
        a_.initial = a_.expected = {input(0, c, me, 0)};
        if (is_root) {
          for (int r = 0; r < n; ++r) b_.expected.push_back(input(size_t(r) * c, c, r, 0));
        }
        send_ = a_.buf.data();
        recv_ = b_.buf.data();
      }
      break;
    case Coll::kScatter:
      if (inplace && is_root) {
        alloc(b_, pl.recv_mem, nc, pl.recv_offset);
        b_.initial = b_.expected = {input(0, nc, me, 0)};
        send_ = b_.buf.data();
        recv_ = b_.buf.at(size_t(me) * c);
      } else if (inplace) {
        alloc(b_, pl.recv_mem, c, pl.recv_offset);
        b_.expected = {input(0, c, root, size_t(me) * c)};
        send_ = nullptr;
        recv_ = b_.buf.data();
      } else {
        alloc(a_, pl.send_mem, nc, pl.send_offset);  // ignored and untouched on non-roots
        alloc(b_, pl.recv_mem, c, pl.recv_offset);
        a_.initial = a_.expected = {input(0, nc, me, 0)};
        b_.expected = {input(0, c, root, size_t(me) * c)};
        send_ = a_.buf.data();
        recv_ = b_.buf.data();
      }
      break;
    case Coll::kSendRecvRing: {
      const int prev = (me + n - 1) % n;
      alloc(a_, pl.send_mem, c, pl.send_offset);
      alloc(b_, pl.recv_mem, c, pl.recv_offset);
      a_.initial = a_.expected = {input(0, c, me, 0)};
      b_.expected = {input(0, c, prev, 0)};
      send_ = a_.buf.data();
      recv_ = b_.buf.data();
      break;
    }
    case Coll::kBarrier:
      break;
  }

  // Write the initial contents.
  for (Slot* s : {&a_, &b_}) {
    if (!s->used) continue;
    for (const Segment& seg : s->initial) {
      if (seg.reduced) fatal("initial segment cannot be a reduction");
      ref::fill_input(s->buf.at(seg.at), spec_.dtype, ref::kind_for(spec_.op), spec_.seed, seg.rank,
                      seg.first, seg.len);
    }
  }
  if (spec_.count == 0 && spec_.null_when_empty) {
    send_ = nullptr;
    recv_ = nullptr;
  }
}

sclResult_t PreparedCall::issue(sclStream_t stream) {
  const sclComm_t comm = comm_.comm;
  const sclDataType_t t = spec_.dtype;
  const size_t c = spec_.count;
  const auto op = static_cast<sclRedOp_t>(spec_.op);
  switch (spec_.coll) {
    case Coll::kAllReduce:
      return sclAllReduce(send_, recv_, c, t, op, comm, stream);
    case Coll::kBroadcast:
      return sclBroadcast(send_, recv_, c, t, spec_.root, comm, stream);
    case Coll::kReduce:
      return sclReduce(send_, recv_, c, t, op, spec_.root, comm, stream);
    case Coll::kAllGather:
      return sclAllGather(send_, recv_, c, t, comm, stream);
    case Coll::kReduceScatter:
      return sclReduceScatter(send_, recv_, c, t, op, comm, stream);
    case Coll::kAlltoAll:
      return sclAlltoAll(send_, recv_, c, t, comm, stream);
    case Coll::kAlltoAllv:
      return sclAlltoAllv(send_, sendcounts_.data(), sdispls_.data(), recv_, recvcounts_.data(),
                          rdispls_.data(), t, comm, stream);
    case Coll::kGather:
      return sclGather(send_, recv_, c, t, spec_.root, comm, stream);
    case Coll::kScatter:
      return sclScatter(send_, recv_, c, t, spec_.root, comm, stream);
    case Coll::kSendRecvRing: {
      const int next = (comm_.rank + 1) % comm_.n, prev = (comm_.rank + comm_.n - 1) % comm_.n;
      sclResult_t r = sclGroupStart();
      if (r != sclSuccess) return r;
      const sclResult_t s = sclSend(send_, c, t, next, comm, stream);
      const sclResult_t v = sclRecv(recv_, c, t, prev, comm, stream);
      r = sclGroupEnd();
      return s != sclSuccess ? s : v != sclSuccess ? v : r;
    }
    case Coll::kBarrier:
      return sclBarrier(comm, stream);
  }
  return sclInternalError;
}

void PreparedCall::write(std::vector<unsigned char>& image, const Slot& s,
                         const std::vector<Segment>& segs) const {
  char* data = static_cast<char*>(s.buf.image_data(image));
  const size_t es = s.buf.elem_size();
  for (const Segment& seg : segs) {
    if (seg.reduced) {
      ref::fill_reduced(data + seg.at * es, spec_.dtype, static_cast<sclRedOp_t>(spec_.op),
                        spec_.seed, comm_.n, seg.first, seg.len);
    } else {
      ref::fill_input(data + seg.at * es, spec_.dtype, ref::kind_for(spec_.op), spec_.seed,
                      seg.rank, seg.first, seg.len);
    }
  }
}

uint64_t PreparedCall::verify(Tally& tally) {
  const CallInfo call_info = info();
  uint64_t wrong = 0;
  bool any = false;
  for (const Slot* s : {&a_, &b_}) {
    if (!s->used) continue;
    if (spec_.count == 0 && spec_.null_when_empty) continue;  // never passed to the library
    any = true;
    std::vector<unsigned char> image = s->buf.image();
    write(image, *s, s->expected);
    wrong += s->buf.check(tally, call_info, s->name, image);
  }
  if (!any) tally.record(0);  // barrier, or NULL buffers: the call returning is the check
  return wrong;
}

uint64_t run_and_verify(const Comm& comm, const CallSpec& spec, Tally& tally) {
  PreparedCall call(comm, spec);
  const sclResult_t r = call.issue(nullptr);
  if (r != sclSuccess) {
    fatal("%s returned %d (%s): %s", call.info().text().c_str(), int(r), sclGetErrorString(r),
          sclGetLastError(comm.comm));
  }
  return call.verify(tally);
}

}  // namespace mp
