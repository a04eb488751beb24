// One-sided transfers: the sender writes straight into the receiver's registered buffer.
//
// Registration-on-allocation makes this cheap: the receiver's heap buffer lies in a chunk range
// registered once, with remote writes allowed, so its clear-to-send (address, key, size) comes
// from a registration already made, never one made for the call. The clear-to-send is a small
// injected message on a tag bit of its own, matched like any receive: one from a peer in another
// call is the same named error as a mismatched message, and a sender never writes more than the
// receiver said it expects. The write carries the sender's tag as remote completion data, so
// the receiver's completion queue says which transfer has landed; nothing else has to be sent.
//
// What it gives over a tagged message: the receiver chooses where the bytes land before they
// move (no provider-side rendezvous or bounce buffer), and over a provider that writes into
// memory itself (verbs, efa) no receiver work at all. Memory not on the heap is registered for
// the batch (the buffer-centric cost, as for any foreign buffer).
#include <rdma/fi_errno.h>
#include <rdma/fi_rma.h>
#include <rdma/fi_tagged.h>

#include "net/endpoint.h"

namespace stratacl::net {

Status Endpoint::prepare_one_sided(Transfer& t) {
  if (t.send) {
    Result<void*> d = regs_->desc(&t.cts, sizeof t.cts);
    if (!d.ok()) return d.status();
    t.cts_desc = *d;
    return Status::Ok();
  }
  Result<Registrations::Remote> r = regs_->remote(t.buf, t.bytes);
  if (!r.ok()) return r.status();
  t.cts = ClearToSend{r->addr, r->key, t.bytes};
  return Status::Ok();
}

ssize_t Endpoint::post_one_sided(Transfer& t) {
  const fi_addr_t peer = peers_[size_t(t.peer)];
  ssize_t rc = 0;
  if (t.send) {
    rc = fi_trecv(ep_, &t.cts, sizeof t.cts, t.cts_desc, peer,
                  wire_tag(t.tag | kClearToSendTag, t.peer), t.ignore << kPeerBits, &t.ctx);
    if (rc == 0) t.stage = Transfer::kAwaitingClearToSend;
  } else {
    rc = fi_tinject(ep_, &t.cts, sizeof t.cts, peer, wire_tag(t.tag | kClearToSendTag, self_));
    if (rc == 0) t.stage = Transfer::kAwaitingWrite;
    if (rc == 0 && t.bytes == 0) t.done = true;  // nothing to write: the clear-to-send says all
  }
  return rc;
}

Status Endpoint::post_writes(std::span<Transfer> batch, size_t* posted) {
  for (Transfer& t : batch) {
    if (t.stage != Transfer::kReadyToWrite) continue;
    const ssize_t rc = fi_writedata(ep_, t.buf, t.bytes, t.desc, wire_tag(t.tag, self_),
                                    peers_[size_t(t.peer)], t.cts.addr, t.cts.key, &t.ctx);
    if (rc == -FI_EAGAIN) break;  // the queue is full, or the connection still forming
    if (rc != 0) {
      return Errorf(sclSystemError, "libfabric: writing to peer %d: %s", t.peer,
                    fi_strerror(int(-rc)));
    }
    t.stage = Transfer::kWriting;
    ++*posted;
  }
  return Status::Ok();
}

Status Endpoint::one_sided_step(const fi_cq_tagged_entry& e, std::span<Transfer> batch,
                                const PeerName& who, size_t* finished) {
  if (!e.op_context) {  // a peer's write has landed: find its transfer by the sender's tag
    const int sender = int(e.data & ((uint64_t(1) << kPeerBits) - 1));
    for (Transfer& t : batch) {
      if (t.one_sided && !t.send && !t.done && t.stage == Transfer::kAwaitingWrite &&
          t.peer == sender && wire_tag(t.tag, sender) == e.data) {
        t.done = true;
        ++*finished;
        return Status::Ok();
      }
    }
    return Errorf(sclRemoteError, "%s wrote into this rank where no write was expected",
                  who(sender).c_str());
  }
  // The clear-to-send a sender waited for.
  auto* t = static_cast<Transfer*>(e.op_context);
  if (e.len != sizeof t->cts || t->cts.bytes != t->bytes) {
    return Errorf(sclInvalidUsage, "%s expects %zu bytes where this rank sends %zu",
                  who(t->peer).c_str(), size_t(e.len == sizeof t->cts ? t->cts.bytes : 0),
                  t->bytes);
  }
  if (t->bytes == 0) {  // nothing to write into an empty buffer
    t->done = true;
    ++*finished;
    return Status::Ok();
  }
  t->stage = Transfer::kReadyToWrite;
  return Status::Ok();
}

}  // namespace stratacl::net
