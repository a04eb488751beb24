#include "coll/step.h"

#include <optional>
#include <string>

#include "coll/call.h"

namespace stratacl {
namespace {

std::string sig_text(const CallSig& s) {
  return std::string(s.coll < uint32_t(Coll::kCount) ? coll_name(Coll(s.coll)) : "?") +
         "(count=" + std::to_string(s.count) + ", dtype=" + std::to_string(s.dtype) +
         ", op=" + std::to_string(s.op) + ", root=" + std::to_string(s.root) +
         (s.runs == 1 ? std::string() : ", runs=" + std::to_string(s.runs)) + ")";
}

// On a timeout, say which ranks are late and how far each got.
Status explain_timeout(const CollContext& c, const Status& s, Flag ControlBlock::*line) {
  std::string late;
  for (int p = 0; p < c.nranks; ++p) {
    const ControlBlock* cb = c.cb(p);
    const uint32_t at = (cb->*line).value.load(std::memory_order_acquire);
    if (!seq_reached(at, c.seq)) {
      late += (late.empty() ? "" : "; ") + std::string("rank ") + std::to_string(p) + " at step " +
              std::to_string(cb->arrive.value.load()) + " (" + sig_text(latest_sig(c, p)) + ")";
    }
  }
  return Status(s.code(), s.message() + ". Late: " + late).with_culprit(s.culprit());
}

Status wait_all(CollContext& c, Flag ControlBlock::*line, const char* phase) {
  for (int p = 0; p < c.nranks; ++p) {
    if (p == c.rank) continue;
    Status s = c.wait(p, c.cb(p)->*line, c.seq, [&] { return c.where() + " " + phase; });
    if (s.code() == sclTimeout) return explain_timeout(c, s, line);
    SCL_TRY(s);
  }
  return Status::Ok();
}

}  // namespace

sclResult_t peer_result(int32_t code) {
  return code >= sclSuccess && code < sclNumResults ? sclResult_t(code) : sclRemoteError;
}

void step_publish(CollContext& c, const CallDesc& mine) {
  c.seq = next_step(c.seq);
  StepLines& lines = c.my_step();
  lines.desc = mine;
  lines.desc.seq = c.seq;
  c.signal(c.me()->arrive, c.seq);  // seq_cst store: orders the descriptor before it
}

Status step_wait_arrivals(CollContext& c) {
  return wait_all(c, &ControlBlock::arrive, "waiting for arrival");
}

CallSig latest_sig(const CollContext& c, int p) {
  const StepLines& lines = c.step_of(p);
  const EagerSlot* newest = nullptr;
  for (const EagerSlot& s : lines.eager) {
    const uint32_t at = s.seq.load(std::memory_order_acquire);
    if (at != kNoStep && seq_reached(at, lines.desc.seq) && at != lines.desc.seq &&
        (!newest || seq_reached(at, newest->seq.load(std::memory_order_relaxed))))
      newest = &s;
  }
  return newest ? newest->sig(c.round_bytes) : lines.desc.sig;
}

Status step_mismatch(const CollContext& c, const CallSig& mine, int peer, const CallSig& theirs) {
  if (theirs.runs == kRefusedRuns) {
    return Errorf(sclInvalidUsage,
                  "%s: rank %d could not take part: its %s was refused for its arguments (%s; see "
                  "its error)",
                  c.where().c_str(), peer,
                  theirs.coll < uint32_t(Coll::kCount) ? coll_name(Coll(theirs.coll)) : "call",
                  sclGetErrorString(peer_result(theirs.op)));
  }
  return Errorf(sclInvalidUsage, "%s: mismatched call: rank %d called %s, rank %d called %s",
                c.where().c_str(), c.rank, sig_text(mine).c_str(), peer, sig_text(theirs).c_str());
}

Status step_gather(CollContext& c, std::vector<CallDesc>* descs, Status* usage) {
  SCL_TRY(step_wait_arrivals(c));
  descs->resize(size_t(c.nranks));
  const CallSig& mine = c.my_step().desc.sig;
  for (int p = 0; p < c.nranks; ++p) {
    (*descs)[size_t(p)] = c.step_of(p).desc;
    const CallDesc& theirs = (*descs)[size_t(p)];
    // A descriptor of an older step: the peer runs an eager step (coll/eager.h) now.
    if (usage->ok() && (theirs.seq != c.seq || !(theirs.sig == mine))) {
      *usage = step_mismatch(c, mine, p, theirs.seq == c.seq ? theirs.sig : latest_sig(c, p));
    }
  }
  return Status::Ok();
}

void step_tile_done(CollContext& c) {
  Flag& f = c.me()->progress;
  c.signal(f, f.value.load(std::memory_order_relaxed) + 1);
}

bool step_tile_ready(const CollContext& c, int peer, uint32_t tile) {
  const uint32_t target = c.tiles_done[size_t(peer)] + tile + 1;
  return seq_reached(c.cb(peer)->progress.value.load(std::memory_order_acquire), target);
}

Status step_wait_tile(CollContext& c, int peer, uint32_t tile) {
  const uint32_t target = c.tiles_done[size_t(peer)] + tile + 1;
  return c.wait(peer, c.cb(peer)->progress, target, [&] {
    return c.where() + " waiting for tile " + std::to_string(tile) + " of rank " +
           std::to_string(peer);
  });
}

void step_tiles_finished(CollContext& c, const std::vector<uint32_t>& tiles_per_rank) {
  for (size_t p = 0; p < tiles_per_rank.size(); ++p) c.tiles_done[p] += tiles_per_rank[p];
}

Status step_finish(CollContext& c, const Status& local) {
  ControlBlock* me = c.me();
  me->done.status.store(local.code(), std::memory_order_relaxed);
  c.signal(me->done, c.seq);
  SCL_TRY(wait_all(c, &ControlBlock::done, "waiting for peers to finish"));
  if (!local.ok()) return local;
  for (int p = 0; p < c.nranks; ++p) {
    const int32_t code = c.cb(p)->done.status.load(std::memory_order_acquire);
    if (code != sclSuccess) {
      const sclResult_t r = peer_result(code);
      return Errorf(r, "%s: rank %d reported %s", c.where().c_str(), p,
                    r == sclRemoteError && code != sclRemoteError ? "an invalid result code"
                                                                  : sclGetErrorString(r));
    }
  }
  return Status::Ok();
}

}  // namespace stratacl
