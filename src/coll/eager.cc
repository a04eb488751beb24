#include "coll/eager.h"

#include <sched.h>

#include <cstddef>

#include "coll/round.h"
#include "core/deadline.h"
#include "exec/copy.h"
#include "sync/futex.h"

namespace stratacl {
namespace {

// Polls the peers' slot headers, where the step number and the first payload bytes share a
// line: one line to pull per peer instead of the arrival flag, then the header. Gives up after
// the wait policy's spin (the caller then waits on the arrival flags, with every exit of a wait),
// and at once when ranks outnumber cores or a peer last ran on our core: a pure spin would then
// hold the core that peer needs (the caller's waits yield it).
bool slots_ready(const CollContext& c) {
  if (c.waiter->oversubscribed()) return false;
  const int here = sched_getcpu();
  for (int p = 0; p < c.nranks; ++p) {
    if (p != c.rank && Waiter::shares_core(c.cb(p)->arrive, here)) return false;
  }
  const int64_t until = now_ns() + c.waiter->spin_ns();
  for (int p = 0; p < c.nranks; ++p) {
    const EagerSlot& theirs = c.step_of(p).eager[c.seq & 1];
    for (int i = 1; theirs.seq.load(std::memory_order_acquire) != c.seq; ++i) {
      if ((i & 63) == 0 && now_ns() > until) return false;
      cpu_relax();
    }
  }
  return true;
}

}  // namespace

bool eager_fits(const CollContext& c, size_t bytes) {
  return bytes <= c.eager_max_bytes && c.eager_max_bytes > 0;
}

Status eager_exchange(CollContext& c, const Call& call, const EagerInput& in,
                      std::vector<const void*>* payloads, Status* usage) {
  const CallSig sig = make_desc(c, call).sig;
  c.seq = next_step(c.seq);
  EagerSlot& mine = c.my_step().eager[c.seq & 1];
  mine.set_sig(sig);
  for (int b = 0; b < in.nblocks; ++b)
    copy_bytes(mine.payload + size_t(b) * in.block_bytes, in.src + size_t(b) * in.stride,
               in.block_bytes);
  mine.seq.store(c.seq, std::memory_order_release);
  c.signal(c.me()->arrive, c.seq);  // wakes sleepers; peers in a normal step wait on it
  if (!slots_ready(c)) SCL_TRY(step_wait_arrivals(c));

  payloads->resize(size_t(c.nranks));
  const size_t prefetch_bytes = size_t(in.nblocks) * in.block_bytes;
  for (int p = 0; p < c.nranks; ++p) {
    const EagerSlot& theirs = c.step_of(p).eager[c.seq & 1];
    const bool same_step = theirs.seq.load(std::memory_order_acquire) == c.seq;
    const CallSig their_sig = theirs.sig(sig.round_bytes);
    if (usage->ok() && (!same_step || !(their_sig == sig))) {
      // Not in an eager step of ours: the peer's descriptor says what it called instead.
      *usage = step_mismatch(c, sig, p, same_step ? their_sig : latest_sig(c, p));
    }
    (*payloads)[size_t(p)] = theirs.payload;
    // Ask for every line at once: each comes from the peer's cache, a slow snoop, and the
    // reduction or copy would otherwise wait for them one tile at a time.
    if (p != c.rank)
      for (size_t off = 0; off < prefetch_bytes; off += 64)
        __builtin_prefetch(theirs.payload + off);
  }
  return Status::Ok();
}

}  // namespace stratacl
