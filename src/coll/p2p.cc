#include "coll/p2p.h"

#include <string>

#include "coll/round.h"
#include "exec/copy.h"
#include "fabric/heap.h"

namespace stratacl {
namespace {

constexpr int64_t kPollSliceMs = 2;

struct Item {
  const P2POp* op;
  uint32_t k = 0;        // this op's 1-based sequence on its channel
  int stage = 0;         // send: 0 unposted, 1 posted, 2 acked; recv: 0 waiting, 2 done
  void* temp = nullptr;  // staged copy of a foreign send buffer
};

}  // namespace

Status run_p2p(CollContext& c, P2PState& st, std::span<const P2POp> ops) {
  std::vector<Item> items;
  for (const P2POp& op : ops) {
    Item it{&op};
    it.k = op.is_send ? ++st.posted[size_t(op.peer)] : ++st.received[size_t(op.peer)];
    items.push_back(it);
  }
  Heap* heap = existing_heap();
  Status first_error;
  auto note = [&](Status s) {
    if (first_error.ok()) first_error = std::move(s);
  };
  const Deadline deadline = c.deadline();
  P2PChannel* mine = channels(c.me(), c.nranks);
  Flag* my_acks = recv_acks(c.me(), c.nranks);

  for (;;) {
    bool progressed = false, all_done = true;
    const Flag* blocker = nullptr;
    uint32_t blocker_target = 0;
    int blocker_rank = 0;
    std::vector<char> send_blocked(size_t(c.nranks)), recv_blocked(size_t(c.nranks));
    for (Item& it : items) {
      const P2POp& op = *it.op;
      const size_t peer = size_t(op.peer);
      const size_t bytes = op.count * elem_size(op.dtype);
      if (it.stage == 2) continue;
      all_done = false;
      Flag& ack = recv_acks(c.peers[peer].cb, c.nranks)[c.rank];
      if (op.is_send && it.stage == 0) {
        // Slot k is free once the receiver acknowledged send k - kP2PSlots. Posts stay in order.
        if (send_blocked[peer] ||
            !seq_reached(ack.value.load(std::memory_order_acquire), it.k - kP2PSlots)) {
          if (!send_blocked[peer] && !blocker)
            blocker = &ack, blocker_target = it.k - kP2PSlots, blocker_rank = op.peer;
          send_blocked[peer] = 1;
          continue;
        }
        const char* src = op.send;
        if (bytes && !in_heap(c, src, bytes)) {
          Result<void*> t = heap->allocate(bytes);
          if (!t.ok()) return t.status();
          it.temp = *t;
          copy_bytes(it.temp, src, bytes);
          src = static_cast<const char*>(it.temp);
        }
        P2PSlot& slot = mine[peer].slots[(it.k - 1) % kP2PSlots];
        slot = P2PSlot{op.count, op.dtype, 0, bytes ? c.ref_of(src) : kNoRef};
        signal_flag(mine[peer].posted, it.k);
        it.stage = 1;
        progressed = true;
      }
      if (op.is_send && it.stage == 1) {
        if (!seq_reached(ack.value.load(std::memory_order_acquire), it.k)) {
          if (!blocker) blocker = &ack, blocker_target = it.k, blocker_rank = op.peer;
          continue;
        }
        int32_t code = ack.status.load(std::memory_order_acquire);
        if (code != sclSuccess) {
          note(Errorf(sclResult_t(code), "send #%u to rank %d: the receiver reported a mismatch",
                      it.k, op.peer));
        }
        if (it.temp) (void)heap->release(it.temp);
        it.temp = nullptr;
        it.stage = 2;
        progressed = true;
        continue;
      }
      if (!op.is_send) {
        const P2PChannel& ch = channels(c.peers[peer].cb, c.nranks)[c.rank];
        if (recv_blocked[peer] ||
            !seq_reached(ch.posted.value.load(std::memory_order_acquire), it.k)) {
          if (!recv_blocked[peer] && !blocker)
            blocker = &ch.posted, blocker_target = it.k, blocker_rank = op.peer;
          recv_blocked[peer] = 1;
          continue;
        }
        const P2PSlot slot = ch.slots[(it.k - 1) % kP2PSlots];  // snapshot
        Status s;
        if (slot.count != op.count || slot.dtype != op.dtype) {
          s = Errorf(sclInvalidUsage,
                     "recv #%u from rank %d: rank %d sends %llu elements of dtype %d, rank %d "
                     "expects %zu of dtype %d",
                     it.k, op.peer, op.peer, (unsigned long long)slot.count, slot.dtype, c.rank,
                     op.count, int(op.dtype));
        } else if (bytes) {
          Result<const char*> src = c.peer_ptr(op.peer, slot.ref, bytes);
          if (!src.ok()) return src.status();
          copy_bytes(op.recv, *src, bytes);
        }
        my_acks[peer].status.store(s.code(), std::memory_order_relaxed);
        signal_flag(my_acks[peer], it.k);
        if (!s.ok()) note(s);
        it.stage = 2;
        progressed = true;
      }
    }
    if (all_done) break;
    if (progressed) continue;
    // Nothing was ready: sleep on the first blocking flag for a short slice, then look again.
    Deadline slice = Deadline::after_ms(kPollSliceMs);
    if (slice.at_ns() > deadline.at_ns()) slice = deadline;
    Status s = c.waiter->wait(*blocker, blocker_target, blocker_rank, slice, [&] {
      return std::string("send/recv with rank ") + std::to_string(blocker_rank);
    });
    if (s.code() == sclTimeout && !deadline.expired()) continue;
    if (!s.ok()) {
      for (Item& it : items) {
        if (it.temp) (void)heap->release(it.temp);  // the call is fatal: peers are revoked
      }
      return s;
    }
  }
  return first_error;
}

}  // namespace stratacl
