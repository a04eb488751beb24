#include "coll/p2p.h"

#include <string>

#include "coll/round.h"
#include "coll/step.h"
#include "core/dtype.h"
#include "exec/copy.h"

namespace stratacl {
namespace {

constexpr int64_t kPollSliceMs = 2;

// What a blocked op waits for: a line of a peer's block reaching a value.
struct Blocker {
  int rank = -1;
  const Flag* flag = nullptr;
  uint32_t target = 0;
};

// One op of the batch and how far it got. A send is posted (its descriptor published), then
// acknowledged (the receiver copied it); a receive is done once it copied and acknowledged.
struct Pending {
  const P2POp* op = nullptr;
  int peer = 0;    // op->peer, or for a receive from any source the rank it matched (else -1)
  uint32_t k = 0;  // the op's 1-based number on its channel (sends to, or receives from, a peer)
  bool posted = false;
  bool done = false;
  StagedBlock staged;  // a foreign send buffer's copy, kept until the receiver acknowledged
};

class Batch {
 public:
  Batch(CollContext& c, P2PState& st, std::span<const P2POp> ops)
      : c_(c), st_(st), finished_sends_(st.posted), next_recv_(st.received) {
    for (const P2POp& op : ops) {
      Pending p;
      p.op = &op;
      p.peer = op.peer;
      if (op.peer != kAnySource)
        p.k = op.is_send ? ++st.posted[size_t(op.peer)] : ++st.received[size_t(op.peer)];
      pending_.push_back(std::move(p));
    }
    for (uint32_t& r : next_recv_) ++r;
  }

  Status run();

 private:
  // Each returns true when the op advanced; otherwise it may name what blocks it in blocker_.
  Result<bool> try_post(Pending& s);
  bool try_finish_send(Pending& s);
  Result<bool> try_receive(Pending& r);
  // A receive from any source: the first rank, in turn from the lowest, with a send to us not
  // yet received. False (and a blocker) when there is none yet.
  bool match_any_source(Pending& r);

  const P2PAck& ack_of(int peer) const { return c_.regions.p2p_ack.in(c_.cb(peer))[c_.rank]; }
  const P2PChannel& channel_from(int peer) const {
    return c_.regions.p2p_send.in(c_.cb(peer))[c_.rank];
  }
  void block_on(int rank, const Flag& flag, uint32_t target) {
    if (!blocker_.flag) blocker_ = Blocker{rank, &flag, target};
  }
  void note(Status s) {
    if (first_error_.ok()) first_error_ = std::move(s);
  }
  void quarantine_staged() {
    for (Pending& p : pending_) c_.quarantine->keep(std::move(p.staged));
  }

  CollContext& c_;
  P2PState& st_;
  std::vector<Pending> pending_;
  int any_wait_ = 0;  // the rank whose channel an unmatched any-source receive sleeps on next
  // Per peer: sends whose acknowledgement we have read (in order), and the number of the next
  // receive we may complete (receives from one peer complete in order: the ack is a count).
  std::vector<uint32_t> finished_sends_, next_recv_;
  Blocker blocker_;
  Status first_error_;
};

// Send k uses slot (k-1) % kP2PSlots, free once the result of send k - kP2PSlots was read.
Result<bool> Batch::try_post(Pending& s) {
  const P2POp& op = *s.op;
  const size_t peer = size_t(op.peer);
  if (s.k > kP2PSlots && !seq_reached(finished_sends_[peer], s.k - kP2PSlots)) {
    block_on(op.peer, ack_of(op.peer).acked, s.k - kP2PSlots);
    return false;
  }
  RemoteRef ref;
  if (op.refused == sclSuccess) {
    const size_t bytes = op.count * dtype_size(op.dtype);
    SCL_ASSIGN_OR_RETURN(ref, c_.stager.publish_own(Outgoing{op.send, 0, 1, bytes}, &s.staged));
  }
  P2PChannel& ch = c_.regions.p2p_send.in(c_.me())[peer];
  ch.slots[(s.k - 1) % kP2PSlots] =
      op.refused == sclSuccess ? P2PSlot{op.count, op.dtype, 0, ref}
                               : P2PSlot{0, kRefusedSend, int32_t(op.refused), RemoteRef{}};
  c_.signal(ch.posted, s.k);
  s.posted = true;
  return true;
}

bool Batch::try_finish_send(Pending& s) {
  const P2POp& op = *s.op;
  const P2PAck& ack = ack_of(op.peer);
  // Acknowledgements of one channel are read in order, so slot statuses are never overwritten
  // before they are read (try_post).
  if (finished_sends_[size_t(op.peer)] + 1 != s.k ||
      !seq_reached(ack.acked.value.load(std::memory_order_acquire), s.k)) {
    block_on(op.peer, ack.acked, s.k);
    return false;
  }
  const sclResult_t code =
      peer_result(ack.status[(s.k - 1) % kP2PSlots].load(std::memory_order_acquire));
  if (code == sclInvalidArgument) {  // only a refused receive acknowledges so
    note(Errorf(sclInvalidUsage,
                "send #%u to rank %d: its receive was refused for its arguments (see its error)",
                s.k, op.peer));
  } else if (code != sclSuccess) {
    note(Errorf(code, "send #%u to rank %d: the receiver reported %s", s.k, op.peer,
                sclGetErrorString(code)));
  }
  ++finished_sends_[size_t(op.peer)];
  s.staged.reset();
  s.done = true;
  return true;
}

bool Batch::match_any_source(Pending& r) {
  for (int p = 0; p < c_.nranks; ++p) {
    if (seq_reached(channel_from(p).posted.value.load(std::memory_order_acquire),
                    next_recv_[size_t(p)])) {
      r.peer = p;
      r.k = ++st_.received[size_t(p)];
      return true;
    }
  }
  // Sleep on one channel for a poll slice, a different one each time round.
  const int p = any_wait_++ % c_.nranks;
  block_on(p, channel_from(p).posted, next_recv_[size_t(p)]);
  return false;
}

Result<bool> Batch::try_receive(Pending& r) {
  if (r.peer == kAnySource && !match_any_source(r)) return false;
  const P2POp& op = *r.op;
  const size_t peer = size_t(r.peer);
  const P2PChannel& ch = channel_from(r.peer);
  if (next_recv_[peer] != r.k ||
      !seq_reached(ch.posted.value.load(std::memory_order_acquire), r.k)) {
    block_on(r.peer, ch.posted, r.k);
    return false;
  }
  const P2PSlot slot = ch.slots[(r.k - 1) % kP2PSlots];  // a snapshot: the sender may not change it
  const size_t bytes = op.count * dtype_size(op.dtype);
  Status s;
  if (op.refused != sclSuccess) {
    s = Status(sclInvalidArgument, "refused");  // what the sender reads as our refusal
  } else if (slot.dtype == kRefusedSend) {
    s = Errorf(sclInvalidUsage,
               "recv #%u from rank %d: its send was refused for its arguments (%s; see its "
               "error)",
               r.k, r.peer, sclGetErrorString(peer_result(slot.reserved)));
  } else if (slot.count != op.count || slot.dtype != op.dtype) {
    s = Errorf(sclInvalidUsage,
               "recv #%u from rank %d: rank %d sends %llu elements of dtype %d, rank %d expects "
               "%zu of dtype %d",
               r.k, r.peer, r.peer, (unsigned long long)slot.count, slot.dtype, c_.rank, op.count,
               int(op.dtype));
  } else {
    SCL_TRY(c_.read_block(r.peer, slot.ref, 0, 0, bytes, op.recv));
  }
  if (op.source) *op.source = r.peer;
  P2PAck& mine = c_.regions.p2p_ack.in(c_.me())[peer];
  mine.status[(r.k - 1) % kP2PSlots].store(s.code(), std::memory_order_relaxed);
  c_.signal(mine.acked, r.k);  // seq_cst: orders the status before the count
  ++next_recv_[peer];
  if (!s.ok()) note(s);
  r.done = true;
  return true;
}

Status Batch::run() {
  for (;;) {
    bool progressed = false, all_done = true;
    blocker_ = Blocker{};
    for (Pending& p : pending_) {
      if (p.done) continue;
      all_done = false;
      Result<bool> advanced = false;
      if (!p.op->is_send) {
        advanced = try_receive(p);
      } else if (!p.posted) {
        advanced = try_post(p);
      } else {
        advanced = try_finish_send(p);
      }
      if (!advanced.ok()) {
        quarantine_staged();  // the call is fatal: a receiver may still copy what we posted
        return advanced.status();
      }
      progressed |= *advanced;
    }
    if (all_done) return first_error_;
    if (progressed) continue;
    // Nothing was ready: sleep on what the first blocked op waits for, for a short slice (a
    // later op may become ready first), then look again; the call's deadline bounds it all.
    const Deadline slice =
        std::min(Deadline::after_ms(kPollSliceMs), c_.deadline(),
                 [](const Deadline& a, const Deadline& b) { return a.at_ns() < b.at_ns(); });
    Status s = c_.waiter->wait(blocker_.rank, *blocker_.flag, blocker_.target, slice, [&] {
      return std::string("send/recv with rank ") + std::to_string(blocker_.rank);
    });
    if (s.code() == sclTimeout && !c_.deadline().expired()) continue;
    if (!s.ok()) {
      quarantine_staged();
      return s;
    }
  }
}

}  // namespace

Status run_p2p(CollContext& c, P2PState& st, std::span<const P2POp> ops) {
  const Status s = Batch(c, st, ops).run();
  // A batch of refused ops only: each was reported when it was made.
  for (const P2POp& op : ops)
    if (op.refused == sclSuccess) return s;
  return is_fatal(s) ? s : Status::Ok();
}

}  // namespace stratacl
