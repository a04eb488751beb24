// sclCommShrink: the survivors of a communicator build a smaller one from it, without a new
// rendezvous. Each prepares its part of the child (blocks, and across hosts a new endpoint) and
// publishes it with its vote; the agreement (sync/agreement.h) gives every survivor the same set
// of gone ranks, even when more die meanwhile; the members are the others, in the parent's
// order. Peers' heaps stay mapped throughout, so heap buffers keep working in the child.
//
// Votes of ranks on this host are read from their heaps (ShrinkSlot, a sequence lock); votes of
// ranks on other hosts travel with the heartbeat (comm/shrink_across_hosts.cc).
#include <algorithm>

#include "coll/step.h"
#include "comm/communicator.h"
#include "comm/shrink_record.h"
#include "fabric/heap.h"

namespace stratacl {
namespace {

// Acquire: no later read (the sequence's second reading) moves before it. The sequence lock
// needs no fences then (ThreadSanitizer refuses them).
uint64_t load_word(const uint64_t* p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }

}  // namespace

// The board of the agreement: votes and liveness, on this host and across hosts.
class Communicator::ShrinkBoard : public VoteBoard {
 public:
  explicit ShrinkBoard(Communicator& c) : c_(c) {}

  std::optional<Vote> read(int r) override {
    std::optional<ShrinkRecord> rec = c_.shrink_record_of(r);
    if (!rec) return std::nullopt;
    return rec->vote;
  }
  bool gone(int r) override { return c_.shrink_peer_gone(r); }
  Status publish(const Vote& v) override {
    mine_.vote = v;
    return c_.publish_shrink_record(mine_);
  }
  ShrinkRecord mine_;

 private:
  Communicator& c_;
};

Status Communicator::publish_shrink_record(const ShrinkRecord& rec) {
  const std::vector<uint64_t> words = rec.encode();
  ShrinkSlot* slot = layout_.shrink.in(ctx_.mine.cb);
  // Odd while being written; acquire: no store of the record moves before it.
  const uint64_t seq = slot->seq.fetch_add(1, std::memory_order_acq_rel);
  for (size_t i = 0; i < words.size(); ++i)
    __atomic_store_n(&shrink_words_[i], words[i], __ATOMIC_RELAXED);
  slot->seq.store(seq + 2, std::memory_order_release);
  if (heartbeat_) heartbeat_->set_record(words);
  return Status::Ok();
}

std::optional<ShrinkRecord> Communicator::shrink_record_of(int world) const {
  std::optional<ShrinkRecord> rec = shrink_record_read(world);
  if (rec && rec->attempt != shrink_attempt_) return std::nullopt;  // an earlier, failed shrink's
  return rec;
}

std::optional<ShrinkRecord> Communicator::shrink_record_read(int world) const {
  const int n = nranks();
  if (rail_ && rail_->topology().host_of(world) != rail_->topology().host) {
    std::optional<std::vector<uint64_t>> words = heartbeat_->record(world);
    if (!words || words->size() != ShrinkRecord::words_for(n)) return std::nullopt;
    return ShrinkRecord::decode(words->data(), n);
  }
  const int p = rail_ ? rail_->topology().local_of(world) : world;
  if (waiter_->freed(p)) return std::nullopt;  // it left: its heap block may hold anything now
  const ShrinkSlot* slot = layout_.shrink.in(ctx_.cb(p));
  const size_t want = ShrinkRecord::words_for(n);
  for (int attempt = 0; attempt < 100; ++attempt) {
    const uint64_t seq = slot->seq.load(std::memory_order_acquire);
    if (seq == 0) return std::nullopt;
    if (seq & 1) continue;  // being written
    const uint64_t offset = load_word(&slot->offset), count = load_word(&slot->words);
    const uint64_t heap_bytes = maps_[size_t(p)].data_bytes();
    if (count != want || offset % 8 != 0 || offset > heap_bytes ||
        count * 8 > heap_bytes - offset) {
      return std::nullopt;  // not a record this communicator's ranks write
    }
    const auto* src = reinterpret_cast<const uint64_t*>(maps_[size_t(p)].data() + offset);
    std::vector<uint64_t> words(count);
    for (size_t i = 0; i < count; ++i) words[i] = load_word(&src[i]);
    if (slot->seq.load(std::memory_order_relaxed) != seq) continue;  // rewritten meanwhile
    return ShrinkRecord::decode(words.data(), n);
  }
  return std::nullopt;
}

bool Communicator::shrink_peer_gone(int world) const {
  if (rail_ && rail_->topology().host_of(world) != rail_->topology().host)
    return heartbeat_->gone(world);
  const int p = rail_ ? rail_->topology().local_of(world) : world;
  // Dead, or it destroyed the communicator instead of shrinking it: it will not vote.
  return live_.is_dead(p) || waiter_->departed(p);
}

Result<std::shared_ptr<Communicator>> Communicator::shrink(uint32_t ticket,
                                                           std::span<const int> exclude,
                                                           const sclConfig_t* config,
                                                           bool abort_first) {
  if (abort_first) {
    // Calls still pending here or on peers fail at once, instead of at their deadlines.
    revoke(Errorf(sclRemoteError, "rank %d revoked the communicator to shrink it", rank()));
  }
  // Earlier calls go first; on a revoked communicator they fail at once.
  Status turn_came = order_.enter(ticket, cfg_.timeout_ms.value, [] { return Status::Ok(); });
  if (!turn_came.ok()) {
    errors_.set_last(turn_came);
    return turn_came;
  }
  Turn turn(order_);
  Result<std::shared_ptr<Communicator>> child = shrink_in_turn(exclude, config);
  if (!child.ok()) errors_.set_last(child.status());
  return child;
}

Result<std::shared_ptr<Communicator>> Communicator::shrink_in_turn(std::span<const int> exclude,
                                                                   const sclConfig_t* config) {
  if (destroyed_.load(std::memory_order_acquire))
    return Errorf(sclInvalidUsage, "the communicator was destroyed");
  if (shrunk_) {
    return Errorf(sclInvalidUsage,
                  "shrink: this communicator was shrunk already; shrink the smaller one");
  }
  const int n = nranks(), me = rank();
  RankSet gone(n);
  for (int r : exclude) gone.add(r);
  if (!shrink_words_) {
    SCL_ASSIGN_OR_RETURN(auto* heap, Heap::instance());
    SCL_ASSIGN_OR_RETURN(void* words,
                         heap->allocate(ShrinkRecord::words_for(n) * sizeof(uint64_t)));
    shrink_words_ = static_cast<uint64_t*>(words);
    ShrinkSlot* slot = layout_.shrink.in(ctx_.mine.cb);
    slot->offset = heap->offset_of(shrink_words_);
    slot->words = ShrinkRecord::words_for(n);
  }
  ++shrink_attempt_;  // a failed shrink may be tried again: votes of earlier attempts are ignored

  // Our part of the child. A rank that cannot prepare it still votes, so that every rank fails
  // together instead of waiting for it.
  std::shared_ptr<Communicator> child(new Communicator());
  child->host_ranks_ = std::max(host_ranks_, ctx_.nranks);
  Status prepared = configure_child(*child, config);
  if (prepared.ok()) prepared = child->allocate_blocks(ctx_.nranks);
  ShrinkBoard board(*this);
  board.mine_.attempt = shrink_attempt_;
  ShrinkPart& part = board.mine_.part;
  if (prepared.ok()) {
    const bootstrap::RankInfo mine = child->describe(InitRequest{});
    part.cb_offset = mine.cb_offset, part.doorbell_offset = mine.doorbell_offset;
    part.staging_offset = mine.staging_offset, part.staging_bytes = mine.staging_bytes;
    child->published_ = true;  // our vote tells the survivors where the blocks are
  }
  if (prepared.ok() && rail_) prepared = prepare_child_endpoint(*child, &part);
  part.prepared = int32_t(prepared.code());

  // Ranks already gone are not added here: the agreement reads their votes first (one may have
  // decided, and left, before we came), and adds those that have none.
  const Deadline deadline = Deadline::after_ms(cfg_.timeout_ms.value);
  Result<RankSet> agreed = agree_on_gone(board, me, std::move(gone), deadline);
  Status built = agreed.status();
  if (built.ok() && agreed->has(me)) {
    built = Errorf(sclInvalidUsage,
                   "shrink: another rank holds this rank (%d) gone: it is in that rank's "
                   "excludeRanksList, or that rank lost touch with it",
                   me);
  }
  std::vector<int> members;
  std::vector<ShrinkRecord> parts;
  if (built.ok()) {
    built = gather_members(*agreed, deadline, &members, &parts);
    // A rank that failed its own part says why, before what it learnt of its peers' parts.
    if (!prepared.ok()) built = prepared;
  }
  if (built.ok()) built = child->join_shrunk(*this, members, parts);
  if (built.ok()) {
    shrunk_ = true;
    shrunk_away_ = *agreed;
  }
  if (!built.ok()) {
    child->abandon_init();
    return built;
  }
  return child;
}

Status Communicator::gather_members(const RankSet& gone, const Deadline& deadline,
                                    std::vector<int>* members,
                                    std::vector<ShrinkRecord>* parts) const {
  for (int r = 0; r < gone.size(); ++r) {
    if (gone.has(r)) continue;
    // Every member voted (the agreement waited for it); across hosts its vote may still be on
    // its way here.
    std::optional<ShrinkRecord> rec;
    while (!(rec = shrink_record_of(r))) {
      if (shrink_peer_gone(r) && !(rec = shrink_record_of(r))) {
        return Errorf(sclRemoteError,
                      "shrink: rank %d, one of the survivors, is gone before its part reached "
                      "this rank; shrink again",
                      r)
            .with_culprit(r);
      }
      if (rec) break;
      if (deadline.expired())
        return Errorf(sclTimeout, "shrink: the part of rank %d never came", r);
      usleep(200);
    }
    if (rec->part.prepared != sclSuccess && r != rank()) {
      return Errorf(sclInvalidUsage, "shrink: rank %d could not prepare its part: %s", r,
                    sclGetErrorString(peer_result(rec->part.prepared)));
    }
    members->push_back(r);
    parts->push_back(*rec);
  }
  return Status::Ok();
}

// The child, from the members' parts: the ranks of our host share memory as in the parent,
// and the others are reached over the network (comm/shrink_across_hosts.cc).
Status Communicator::join_shrunk(Communicator& parent, const std::vector<int>& members,
                                 const std::vector<ShrinkRecord>& parts) {
  std::vector<bootstrap::RankInfo> table;
  std::vector<PeerHeapRef> maps;
  const std::vector<int> local = parent.shrunk_host_members(members);
  for (int w : local) {
    const size_t i = size_t(std::find(members.begin(), members.end(), w) - members.begin());
    const int p = parent.rail_ ? parent.rail_->topology().local_of(w) : w;
    bootstrap::RankInfo info;
    info.rank = int(table.size());
    info.nranks = int(local.size());
    info.pid = parent.pids_[size_t(p)];
    info.heap_nonce = parent.heap_nonces_[size_t(p)];
    info.cb_offset = parts[i].part.cb_offset;
    info.doorbell_offset = parts[i].part.doorbell_offset;
    info.staging_offset = parts[i].part.staging_offset;
    info.staging_bytes = parts[i].part.staging_bytes;
    table.push_back(info);
    SCL_ASSIGN_OR_RETURN(PeerHeapRef m, w == parent.rank() ? PeerHeapRef::self()
                                                           : PeerHeapRef::share(info.heap_nonce));
    maps.push_back(std::move(m));
  }
  SCL_TRY(init_from_table(table, std::move(maps)));
  if (!parent.rail_ || local.size() == members.size()) {
    child_ep_.reset();  // every member on our host: no network
    return Status::Ok();
  }
  return join_shrunk_across_hosts(parent, members, parts);
}

}  // namespace stratacl
