// One-sided transfers: the sender writes straight into the receiver's registered buffer.
//
// The receiver's clear-to-send (address, key, size) names a window registered for exactly its
// buffer, closed when the batch ends (net/registrations.h): the key reaches nothing else, and
// dies with the transfer. The sender's own buffer, on the heap, is read through the chunk
// registration made once. The write carries the sender's tag as remote completion data, so the
// receiver's completion queue says which transfer has landed. A sender never writes more than
// the receiver said it expects.
//
// Both ends also speak first, each with a small injected message on a tag bit of its own: the
// receiver its clear-to-send, the sender a notice. That is what lets a mismatch be named rather
// than wait out the call's timeout: if the other end runs another call that is not one-sided, it
// either receives our first message (a receive that ignores the kind bits matches it) or sends a
// message that our posted receive of the notice matches. Every message is matched like any
// rail receive, on its sender; its call and batch are compared once it has landed.
//
// What it gives over a tagged message: the receiver chooses where the bytes land before they
// move (no provider-side rendezvous or bounce buffer), and over a provider that writes into
// memory itself (verbs, efa) no receiver work for the data. Memory not on the heap is
// registered for the batch (the buffer-centric cost, as for any foreign buffer).
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include "net/endpoint.h"

namespace stratacl::net {

Status Endpoint::prepare_one_sided(Transfer& t) {
  if (t.send) {
    SCL_ASSIGN_OR_RETURN(t.cts_desc, regs_->desc(&t.cts, sizeof t.cts));
    return Status::Ok();
  }
  SCL_ASSIGN_OR_RETURN(Registrations::Remote r, regs_->remote(t.buf, t.bytes));
  t.cts = ClearToSend{r.addr, r.key, t.bytes};
  return Status::Ok();
}

ssize_t Endpoint::post_one_sided(Transfer& t) {
  static char empty;
  const fi_addr_t peer = peers_[size_t(t.peer)];
  const uint64_t ignore = ignored_bits(t) << kPeerBits;
  ssize_t rc = 0;
  if (t.send) {
    if (t.stage == Transfer::kStart) {
      rc = fi_tinject(ep_, &empty, 0, peer, wire_tag(t.tag | kNoticeTag, self_));
      if (rc == 0) t.stage = Transfer::kNoticeSent;
    }
    if (rc == 0 && t.stage == Transfer::kNoticeSent) {
      rc = fi_trecv(ep_, &t.cts, sizeof t.cts, t.cts_desc, peer,
                    wire_tag(t.tag | kClearToSendTag, t.peer), ignore, &t.ctx);
      if (rc == 0) t.stage = Transfer::kAwaitingClearToSend;
    }
    return rc;
  }
  if (t.stage == Transfer::kStart) {
    rc = fi_tinject(ep_, &t.cts, sizeof t.cts, peer, wire_tag(t.tag | kClearToSendTag, self_));
    if (rc == 0) t.stage = Transfer::kClearToSendSent;
  }
  if (rc == 0 && t.stage == Transfer::kClearToSendSent) {
    rc = fi_trecv(ep_, &empty, 0, nullptr, peer, wire_tag(t.tag | kNoticeTag, t.peer), ignore,
                  &t.ctx);
    if (rc == 0) t.stage = Transfer::kAwaitingNotice;
  }
  return rc;
}

Status Endpoint::post_writes(std::span<Transfer> batch, const PeerName& who, size_t* posted) {
  for (Transfer& t : batch) {
    if (t.stage != Transfer::kReadyToWrite) continue;
    const ssize_t rc = fi_writedata(ep_, t.buf, t.bytes, t.desc, wire_tag(t.tag, self_),
                                    peers_[size_t(t.peer)], t.cts.addr, t.cts.key, &t.ctx);
    if (rc == -FI_EAGAIN) break;  // the queue is full, or the connection still forming
    if (rc != 0) {
      return Errorf(sclSystemError, "libfabric: writing to %s: %s", who(t.peer).c_str(),
                    fi_strerror(int(-rc)));
    }
    t.stage = Transfer::kWriting;
    ++*posted;
  }
  return Status::Ok();
}

Status Endpoint::one_sided_step(const fi_cq_tagged_entry& e, std::span<Transfer> batch,
                                const PeerName& who, size_t* finished) {
  // A receiver is done once its notice has come and the write has landed (an empty one has
  // nothing to land).
  auto receiver_done = [finished](Transfer& t) {
    if (t.heard && (t.landed || t.bytes == 0)) t.done = true, ++*finished;
  };
  if (!e.op_context) {
    if (!(e.flags & FI_REMOTE_CQ_DATA)) {
      return Errorf(sclSystemError, "libfabric: a completion of no transfer (flags %#llx)",
                    static_cast<unsigned long long>(e.flags));
    }
    // A peer's write has landed: find its transfer by the sender's tag.
    const int sender = int(e.data & ((uint64_t(1) << kPeerBits) - 1));
    for (Transfer& t : batch) {
      if (t.one_sided && !t.send && !t.landed && t.stage >= Transfer::kClearToSendSent &&
          t.peer == sender && wire_tag(t.tag, sender) == e.data) {
        t.landed = true;
        receiver_done(t);
        return Status::Ok();
      }
    }
    return Errorf(sclRemoteError, "%s wrote into this rank where no write was expected",
                  who(sender).c_str());
  }
  auto* t = static_cast<Transfer*>(e.op_context);
  if (t->send && t->stage == Transfer::kWriting) {  // our write has gone
    t->done = true;
    ++*finished;
    return Status::Ok();
  }
  // A message from the peer: where either end's call failed (the sender's notice or the
  // receiver's clear-to-send said so), nothing is written.
  const bool peer_failed = (e.tag >> kPeerBits) & kFailedTag;
  const bool void_transfer = peer_failed || (t->tag & kFailedTag);
  t->peer_failed = t->peer_failed || peer_failed;
  if (!t->send) {  // the sender's notice
    t->heard = true;
    if (void_transfer) t->landed = true;
    receiver_done(*t);
    return Status::Ok();
  }
  // The clear-to-send this sender waited for.
  if (e.len != sizeof t->cts) {
    return Errorf(sclRemoteError, "%s sent a clear-to-send of %zu bytes", who(t->peer).c_str(),
                  size_t(e.len));
  }
  if (!void_transfer && t->cts.bytes != t->bytes) {
    return Errorf(sclInvalidUsage, "%s expects %llu bytes where this rank sends %zu",
                  who(t->peer).c_str(), static_cast<unsigned long long>(t->cts.bytes), t->bytes);
  }
  if (void_transfer || t->bytes == 0) {  // nothing to write
    t->done = true;
    ++*finished;
    return Status::Ok();
  }
  t->stage = Transfer::kReadyToWrite;
  return Status::Ok();
}

Status Endpoint::write_for_testing(int peer, const void* buf, size_t bytes, const ClearToSend& cts,
                                   const Deadline& deadline) {
  SCL_ASSIGN_OR_RETURN(void* d, regs_->desc(buf, bytes));
  Transfer t;
  ssize_t rc;
  while ((rc = fi_writedata(ep_, buf, bytes, d, 0, peers_[size_t(peer)], cts.addr, cts.key,
                            &t.ctx)) == -FI_EAGAIN) {
    fi_cq_tagged_entry e;
    (void)fi_cq_read(cq_, &e, 1);
  }
  Status s = rc == 0 ? Status::Ok()
                     : Errorf(sclSystemError, "libfabric: writing: %s", fi_strerror(int(-rc)));
  while (s.ok() && !t.done) {
    fi_cq_tagged_entry e;
    const ssize_t n = fi_cq_read(cq_, &e, 1);
    if (n == 1 && e.op_context == &t) t.done = true;
    if (n == -FI_EAVAIL) {
      fi_cq_err_entry err{};
      fi_cq_readerr(cq_, &err, 0);
      s = Errorf(sclRemoteError, "the write failed: %s", fi_strerror(err.err));
    }
    if (s.ok() && deadline.expired()) s = Errorf(sclTimeout, "the write did not complete");
  }
  regs_->end_batch();
  return s;
}

}  // namespace stratacl::net
