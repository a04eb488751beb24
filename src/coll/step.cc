#include "coll/step.h"

#include <optional>
#include <string>

#include "coll/call.h"

namespace stratacl {
namespace {

std::string sig_text(const CallSig& s) {
  return std::string(s.coll < uint32_t(Coll::kCount) ? coll_name(Coll(s.coll)) : "?") +
         "(count=" + std::to_string(s.count) + ", dtype=" + std::to_string(s.dtype) +
         ", op=" + std::to_string(s.op) + ", root=" + std::to_string(s.root) + ")";
}

// On a timeout, say which ranks are late and how far each got.
Status explain_timeout(const CollContext& c, const Status& s, Flag ControlBlock::*line) {
  std::string late;
  for (int p = 0; p < c.nranks; ++p) {
    const ControlBlock* cb = c.peers[size_t(p)].cb;
    uint32_t at = (cb->*line).value.load(std::memory_order_acquire);
    if (!seq_reached(at, c.seq)) {
      late += (late.empty() ? "" : "; ") + std::string("rank ") + std::to_string(p) + " at step " +
              std::to_string(cb->arrive.value.load()) + " (" +
              sig_text(latest_sig(*cb, c.round_bytes)) + ")";
    }
  }
  return Status(s.code(), s.message() + ". Late: " + late).with_culprit(s.culprit());
}

Status wait_all(CollContext& c, Flag ControlBlock::*line, const char* phase) {
  // One deadline for the whole phase, read from the clock only once someone is late.
  std::optional<Deadline> deadline;
  for (int p = 0; p < c.nranks; ++p) {
    if (p == c.rank) continue;
    const Flag& flag = c.peers[size_t(p)].cb->*line;
    if (seq_reached(flag.value.load(std::memory_order_acquire), c.seq)) continue;
    if (!deadline) deadline = c.deadline();
    Status s = c.waiter->wait(flag, c.seq, p, *deadline, [&] { return c.where() + " " + phase; });
    if (s.code() == sclTimeout) return explain_timeout(c, s, line);
    SCL_TRY(s);
  }
  return Status::Ok();
}

}  // namespace

void step_publish(CollContext& c, const CallDesc& mine) {
  ++c.seq;
  c.me()->desc = mine;
  c.me()->desc.seq = c.seq;
  signal_flag(c.me()->arrive, c.seq);  // seq_cst store: orders the descriptor before it
}

Status step_wait_arrivals(CollContext& c) {
  return wait_all(c, &ControlBlock::arrive, "waiting for arrival");
}

CallSig latest_sig(const ControlBlock& cb, uint64_t round_bytes) {
  const EagerSlot* newest = nullptr;
  for (const EagerSlot& s : cb.eager) {
    const uint32_t at = s.seq.load(std::memory_order_acquire);
    if (seq_reached(at, cb.desc.seq) && at != cb.desc.seq &&
        (!newest || seq_reached(at, newest->seq.load(std::memory_order_relaxed))))
      newest = &s;
  }
  return newest ? newest->sig(round_bytes) : cb.desc.sig;
}

Status step_mismatch(const CollContext& c, const CallSig& mine, int peer, const CallSig& theirs) {
  return Errorf(sclInvalidUsage, "%s: mismatched call: rank %d called %s, rank %d called %s",
                c.where().c_str(), c.rank, sig_text(mine).c_str(), peer, sig_text(theirs).c_str());
}

Status step_gather(CollContext& c, std::vector<CallDesc>* descs, Status* usage) {
  SCL_TRY(step_wait_arrivals(c));
  descs->resize(size_t(c.nranks));
  const CallSig& mine = c.me()->desc.sig;
  for (int p = 0; p < c.nranks; ++p) {
    (*descs)[size_t(p)] = c.peers[size_t(p)].cb->desc;
    const CallDesc& theirs = (*descs)[size_t(p)];
    // A descriptor of an older step: the peer runs an eager step (coll/eager.h) now.
    if (usage->ok() && (theirs.seq != c.seq || !(theirs.sig == mine))) {
      const ControlBlock& cb = *c.peers[size_t(p)].cb;
      *usage = step_mismatch(c, mine, p,
                             theirs.seq == c.seq ? theirs.sig : latest_sig(cb, c.round_bytes));
    }
  }
  return Status::Ok();
}

void step_tile_done(CollContext& c) {
  Flag& f = c.me()->progress;
  signal_flag(f, f.value.load(std::memory_order_relaxed) + 1);
}

bool step_tile_ready(const CollContext& c, int peer, uint32_t tile) {
  const uint32_t target = c.tiles_done[size_t(peer)] + tile + 1;
  return seq_reached(c.peers[size_t(peer)].cb->progress.value.load(std::memory_order_acquire),
                     target);
}

Status step_wait_tile(CollContext& c, int peer, uint32_t tile) {
  const uint32_t target = c.tiles_done[size_t(peer)] + tile + 1;
  Status s = c.waiter->wait_ms(c.peers[size_t(peer)].cb->progress, target, peer, c.timeout_ms, [&] {
    return c.where() + " waiting for tile " + std::to_string(tile) + " of rank " +
           std::to_string(peer);
  });
  return s;
}

void step_tiles_finished(CollContext& c, const std::vector<uint32_t>& tiles_per_rank) {
  for (size_t p = 0; p < tiles_per_rank.size(); ++p) c.tiles_done[p] += tiles_per_rank[p];
}

Status step_finish(CollContext& c, const Status& local) {
  ControlBlock* me = c.me();
  me->done.status.store(local.code(), std::memory_order_relaxed);
  signal_flag(me->done, c.seq);
  SCL_TRY(wait_all(c, &ControlBlock::done, "waiting for peers to finish"));
  if (!local.ok()) return local;
  for (int p = 0; p < c.nranks; ++p) {
    int32_t code = c.peers[size_t(p)].cb->done.status.load(std::memory_order_acquire);
    if (code != sclSuccess) {
      return Errorf(sclResult_t(code), "%s: rank %d reported %s", c.where().c_str(), p,
                    sclGetErrorString(sclResult_t(code)));
    }
  }
  return Status::Ok();
}

}  // namespace stratacl
