#include "net/heartbeat.h"

#include <algorithm>
#include <chrono>

#include "core/deadline.h"

namespace stratacl::net {
namespace {

// A beat's tag: the state in two bits, a bit set when a failure was a mismatch (mismatched calls
// or sizes: sclInvalidUsage), then the culprit + 1 (0: none) in 17, then the communicator's nonce
// in 24. Receives match the nonce exactly: a closed endpoint's address is
// soon another's, and a late beat of an earlier communicator must not land in a later one.
constexpr int kStateBits = 2, kUsageBit = 2, kWordBits = kStateBits + 1 + 17;
constexpr uint64_t kWordMask = (uint64_t(1) << kWordBits) - 1;
constexpr uint64_t kNonceMask = (uint64_t(1) << 24) - 1;
// A record's tag: this bit above the nonce, and its number (mod 2^20) in the word's bits.
constexpr uint64_t kRecordTag = uint64_t(1) << (kWordBits + 24);
static_assert((kRecordTag | (kRecordTag - 1)) < kFailedTag);  // the endpoint's bits above
constexpr int kBeatsPerLoss = 8;
constexpr int64_t kGoodbyeNs = 20 * 1000 * 1000;  // at most, for our last record and the goodbye
constexpr int64_t kFirstBeatsNs = 10 * 1000 * 1000;
constexpr int64_t kLeftGraceNs = 200 * 1000 * 1000;

uint64_t word_of(Heartbeat::State s, int culprit, bool usage = false) {
  return uint64_t(s) | uint64_t(usage) << kUsageBit | uint64_t(culprit + 1) << (kUsageBit + 1);
}
Heartbeat::State state_of(uint64_t word) { return Heartbeat::State(word & 3); }
bool usage_of(uint64_t word) { return (word >> kUsageBit) & 1; }
int culprit_of(uint64_t word) { return int((word & kWordMask) >> (kUsageBit + 1)) - 1; }

}  // namespace

Result<std::unique_ptr<Heartbeat>> Heartbeat::open(std::shared_ptr<HeartbeatHub> hub) {
  if (!hub) {
    SCL_ASSIGN_OR_RETURN(hub, HeartbeatHub::shared());
  }
  return std::unique_ptr<Heartbeat>(new Heartbeat(std::move(hub)));
}

uint64_t Heartbeat::tag_of(uint64_t word) const { return nonce_ << kWordBits | word; }

Heartbeat::~Heartbeat() {
  leave();
  // In a forked child the hub's thread is not there: the hub must not close, as closing waits
  // for it.
  if (hub_ && hub_->forked()) {
    static std::mutex mu;
    static auto* inherited = new std::vector<std::shared_ptr<HeartbeatHub>>();  // never freed
    std::lock_guard<std::mutex> lock(mu);
    inherited->push_back(std::move(hub_));
  }
}

Status Heartbeat::start(const std::vector<std::vector<uint8_t>>& names, int self, uint64_t nonce,
                        std::vector<int> watched, int64_t lost_after_ms, PeerName who,
                        const Deadline& deadline, size_t record_bytes) {
  record_bytes_ = record_bytes;
  records_.assign(names.size(), std::nullopt);
  record_versions_.assign(names.size(), 0);
  silent_ = std::make_unique<std::atomic<bool>[]>(names.size());
  nonce_ = nonce & kNonceMask;
  self_ = self;
  watched_ = std::move(watched);
  lost_after_ns_ = lost_after_ms * 1000000;
  who_ = std::move(who);
  left_at_ = std::make_unique<std::atomic<int64_t>[]>(names.size());
  heard_all_ = watched_.empty();
  SCL_TRY(hub_->join(this, names));
  joined_ = true;
  std::unique_lock<std::mutex> lock(mu_);
  const auto until = std::chrono::steady_clock::now() +
                     std::chrono::milliseconds(std::max<int64_t>(deadline.remaining_ms(), 0));
  if (all_heard_.wait_until(lock, until, [this] { return heard_all_ || silence_; })) {
    return heard_all_ ? Status::Ok() : lost_why_;
  }
  return Errorf(sclTimeout, "heartbeat: not every rank on the other hosts answered in time");
}

Status Heartbeat::check(int waiting_on) const {
  if (lost_.load(std::memory_order_acquire)) {
    std::lock_guard<std::mutex> lock(mu_);
    return lost_why_;
  }
  // Its goodbye travels apart from its data: what it sent last may still be arriving. Only a
  // receive still waiting a moment after the goodbye waits in vain.
  const int64_t left_at = waiting_on >= 0 && left_at_
                              ? left_at_[size_t(waiting_on)].load(std::memory_order_acquire)
                              : 0;
  if (left_at != 0 && now_ns() - left_at > kLeftGraceNs) {
    return Errorf(sclRemoteError, "%s left the communicator (destroyed it)",
                  who_(waiting_on).c_str());
  }
  return Status::Ok();
}

void Heartbeat::fail(State why, int culprit, bool usage) {
  uint64_t alive = word_of(State::kAlive, -1);
  if (word_.compare_exchange_strong(alive, word_of(why, culprit, usage))) wake();
}

void Heartbeat::set_record(std::vector<uint64_t> words) {
  {
    std::lock_guard<std::mutex> lock(records_mu_);
    my_record_ = std::move(words);
    my_version_.store(((my_version_.load(std::memory_order_relaxed) + 1) & kWordMask) ?: 1,
                      std::memory_order_release);
  }
  wake();
}

std::optional<std::vector<uint64_t>> Heartbeat::record(int peer) const {
  std::lock_guard<std::mutex> lock(records_mu_);
  if (peer < 0 || size_t(peer) >= records_.size()) return std::nullopt;
  return records_[size_t(peer)];
}

bool Heartbeat::gone(int peer) const {
  if (silent_[size_t(peer)].load(std::memory_order_acquire)) return true;
  // A rank that left sent its last record before its goodbye, but our receives for records are
  // posted only once we have one: give a record that waited in the provider a moment to land.
  const int64_t left_at = left_at_[size_t(peer)].load(std::memory_order_acquire);
  const int64_t listening_since = records_posted_at_.load(std::memory_order_acquire);
  return left_at != 0 && listening_since != 0 &&
         now_ns() - std::max(left_at, listening_since) > kLeftGraceNs;
}

void Heartbeat::Receive::post(Endpoint& ep) {
  t = Transfer{};
  t.peer = peer, t.rank = rank, t.tag = tag, t.ignore = kWordMask;
  if (bytes == 0) {
    posted = ep.listen(t).ok();
    return;
  }
  buf.assign((bytes + 7) / 8, 0);
  t.buf = buf.data(), t.bytes = bytes;
  posted = ep.post_async(t).ok();
}

void Heartbeat::Lines::relisten(Endpoint& ep) {
  for (std::vector<Receive>* receives : {&ears, &ins}) {
    for (Receive& r : *receives) {
      if (r.posted && r.t.done) r.post(ep);
    }
  }
}

void Heartbeat::Lines::cancel(Endpoint& ep) {
  for (std::vector<Receive>* receives : {&ears, &ins}) {
    for (Receive& r : *receives) {
      if (r.posted && !r.t.done) ep.cancel(r.t);
    }
  }
}

bool Heartbeat::Lines::settled() const {
  const auto outstanding = [](const Receive& r) { return r.posted && !r.t.done; };
  for (size_t i = 0; i < out.size(); ++i) {
    if (sending[i] && !out[i].done) return false;
  }
  return std::none_of(ears.begin(), ears.end(), outstanding) &&
         std::none_of(ins.begin(), ins.end(), outstanding);
}

void Heartbeat::post_records(Endpoint& ep) {
  // Nothing is posted until this rank has a record (it shrinks): a peer's records that come
  // earlier wait in the provider until then, and no communicator pays for receives it never uses.
  const uint32_t version = my_version_.load(std::memory_order_acquire);
  if (record_bytes_ == 0 || version == 0) return;
  if (records_posted_at_.load(std::memory_order_relaxed) == 0)
    records_posted_at_.store(now_ns(), std::memory_order_release);
  Lines& lines = *lines_;
  for (size_t i = 0; i < watched_.size(); ++i) {
    const int p = watched_[i];
    if (!lines.ins[i].posted) lines.ins[i].post(ep);
    if (lines.sending[i] || lines.sent[i] == version ||
        left_at_[size_t(p)].load(std::memory_order_acquire) != 0) {
      continue;
    }
    {
      std::lock_guard<std::mutex> lock(records_mu_);
      lines.out_bufs[i] = my_record_;
    }
    Transfer& t = lines.out[i];
    t = Transfer{};
    t.send = true, t.peer = routes_[i], t.rank = self_;
    t.buf = lines.out_bufs[i].data(), t.bytes = lines.out_bufs[i].size() * sizeof(uint64_t);
    t.tag = kRecordTag | nonce_ << kWordBits | version;
    if (ep.post_async(t).ok()) {
      lines.sent[i] = version;
      lines.sending[i] = !t.done;
    }
  }
}

void Heartbeat::reap_records() {
  Lines& lines = *lines_;
  for (size_t i = 0; i < watched_.size(); ++i) {
    if (lines.sending[i] && lines.out[i].done) {
      lines.sending[i] = false;
      if (lines.out[i].failed) lines.sent[i] = 0;  // send it again
    }
    Receive& r = lines.ins[i];
    if (!r.posted || !r.t.done) continue;
    r.posted = false;  // listen again at the next post_records()
    if (r.t.failed || r.t.bytes % sizeof(uint64_t) != 0) continue;
    const uint32_t version = uint32_t(r.t.tag & kWordMask);
    std::lock_guard<std::mutex> lock(records_mu_);
    const size_t p = size_t(watched_[i]);
    // Numbers wrap at 2^19: "newer" is within half of that ahead.
    const uint32_t ahead = (version - record_versions_[p]) & kWordMask;
    if (records_[p] && (ahead == 0 || ahead > (kWordMask >> 1))) continue;
    records_[p].emplace(r.buf.begin(), r.buf.begin() + long(r.t.bytes / sizeof(uint64_t)));
    record_versions_[p] = version;
  }
}

void Heartbeat::leave() {
  if (!joined_) return;
  joined_ = false;
  if (!hub_->forked()) hub_->part(this);  // (a forked child's hub has no thread to ask)
}

bool Heartbeat::nonce_taken(uint64_t nonce) const { return hub_->nonce_taken(nonce & kNonceMask); }

void Heartbeat::lose(Status why, int culprit, bool silence) {
  std::lock_guard<std::mutex> lock(mu_);
  if (silence && !silence_) {
    silence_ = true;
    all_heard_.notify_all();  // start() waits no longer
  }
  if (lost_.load(std::memory_order_relaxed)) return;
  lost_why_ = std::move(why);
  lost_culprit_.store(culprit, std::memory_order_release);
  lost_.store(true, std::memory_order_release);
}

void Heartbeat::heard(int peer, uint64_t word, int64_t now) {
  const State s = state_of(word);
  if (s == State::kLeft) {
    left_at_[size_t(peer)].store(now, std::memory_order_release);
    return;
  }
  if (s == State::kAlive) return;
  const int blamed = culprit_of(word);
  std::string because;
  if (blamed >= 0 && blamed != peer) because = " because " + who_(blamed) + " failed";
  // A mismatch that another host saw first is a mismatch here too: the calls did not match, and
  // every rank should say so, whichever news comes first (its own data, or this beat).
  if (s == State::kFailed && usage_of(word)) {
    lose(Errorf(sclInvalidUsage,
                "%s found the ranks' calls mismatched (or used wrongly) and revoked the "
                "communicator%s",
                who_(peer).c_str(), because.c_str()),
         blamed >= 0 ? blamed : peer, false);
    return;
  }
  lose(Errorf(sclRemoteError, "%s %s%s", who_(peer).c_str(),
              s == State::kAborted ? "called sclCommAbort" : "failed and revoked the communicator",
              because.c_str()),
       blamed >= 0 ? blamed : peer, false);
}

void Heartbeat::beat(Endpoint& ep, uint64_t word) {
  for (size_t i = 0; i < watched_.size(); ++i) {
    if (left_at_[size_t(watched_[i])].load(std::memory_order_acquire) == 0) {
      ep.signal(routes_[i], tag_of(word), self_);
    }
  }
}

void Heartbeat::set_routes(std::vector<int> routes) {
  routes_ = std::move(routes);
  lines_ = std::make_unique<Lines>(watched_.size());
  for (size_t i = 0; i < watched_.size(); ++i) {
    for (Receive* r : {&lines_->ears[i], &lines_->ins[i]}) {
      r->peer = routes_[i], r->rank = watched_[i];
    }
    lines_->ears[i].tag = tag_of(0);
    lines_->ins[i].tag = kRecordTag | nonce_ << kWordBits;
    lines_->ins[i].bytes = record_bytes_;
  }
  last_.assign(watched_.size(), now_ns());
  heard_once_.assign(watched_.size(), false);
  unheard_ = watched_.size();
}

int64_t Heartbeat::period_ns() const {
  return std::max<int64_t>(lost_after_ns_ / kBeatsPerLoss, 1000000);
}

int64_t Heartbeat::prepare(Endpoint& ep, int64_t now) {
  const int64_t period = period_ns();
  post_records(ep);
  for (Receive& ear : lines_->ears) {
    if (!ear.posted) ear.post(ep);
  }
  const uint64_t word = word_.load(std::memory_order_acquire);
  if (now >= next_beat_ || word != said_) {
    beat(ep, word);
    said_ = word;
    // Until every peer was heard, often: a first beat may wait for its connection.
    next_beat_ = now + (unheard_ ? std::min(period, kFirstBeatsNs) : period);
  }
  return next_beat_;
}

void Heartbeat::collect(int64_t now, int64_t overrun_ns) {
  const int64_t period = period_ns();
  // A wait that ran far past what it asked for (the machine stalled, the process was stopped)
  // is our silence, not the peers': count theirs from now.
  if (overrun_ns > 2 * period) std::fill(last_.begin(), last_.end(), now);
  reap_records();
  for (size_t i = 0; i < watched_.size(); ++i) {
    Receive& ear = lines_->ears[i];
    if (ear.posted && ear.t.done) {
      ear.posted = false;  // listen again at the next prepare()
      if (!ear.t.failed) {
        last_[i] = now;
        heard(watched_[i], ear.t.tag & kWordMask, now);
        if (!heard_once_[i]) {
          heard_once_[i] = true;
          if (--unheard_ == 0) {
            std::lock_guard<std::mutex> lock(mu_);
            heard_all_ = true;
            all_heard_.notify_all();
          }
        }
      }
    }
    const int p = watched_[i];
    if (now - last_[i] <= lost_after_ns_ || left_at_[size_t(p)].load(std::memory_order_acquire)) {
      continue;
    }
    silent_[size_t(p)].store(true, std::memory_order_release);
    if (!silent_seen_) {
      silent_seen_ = true;
      lose(Errorf(sclRemoteError,
                  "%s is lost: no heartbeat for %.1f s (dead, or its link is cut; "
                  "STRATACL_NET_LOST_MS)",
                  who_(p).c_str(), double(now - last_[i]) / 1e9),
           p, true);
    }
  }
}

std::unique_ptr<Heartbeat::Lines> Heartbeat::finish(Endpoint& ep) {
  // Our last record leaves before the goodbye (the same connection keeps their order): a rank
  // the shrink left out learns so from it, not from our silence.
  // (Not to a rank that left: post_records() sends it nothing more.)
  const auto all_sent = [&] {
    const uint32_t version = my_version_.load(std::memory_order_acquire);
    for (size_t i = 0; i < watched_.size(); ++i) {
      if (left_at_[size_t(watched_[i])].load(std::memory_order_acquire) != 0) continue;
      if (lines_->sending[i] || lines_->sent[i] != version) return false;
    }
    return true;
  };
  for (const int64_t until = now_ns() + kGoodbyeNs; now_ns() < until;) {
    reap_records();
    post_records(ep);
    if (record_bytes_ == 0 || my_version_.load(std::memory_order_acquire) == 0 || all_sent()) {
      break;
    }
    ep.poll(1, -1);
  }
  say_goodbye(ep);
  return std::move(lines_);
}

void Heartbeat::say_goodbye(Endpoint& ep) {
  // The peers stop expecting us. A rank that failed says that first: the peers must fail, and a
  // goodbye overtaking the failure would hide it (one connection keeps their order). The goodbye
  // still follows, so that the peers stop beating to us: the hub's endpoint outlives this
  // communicator, and their beats would pile up in it. A send the queue refused is tried again
  // while the provider makes progress.
  const uint64_t last_word = word_.load(std::memory_order_acquire);
  std::vector<uint64_t> words;
  if (state_of(last_word) != State::kAlive) words.push_back(last_word);
  words.push_back(word_of(State::kLeft, -1));
  std::vector<std::pair<size_t, size_t>> unsent;  // (watched rank, next word)
  for (size_t i = 0; i < watched_.size(); ++i) {
    if (left_at_[size_t(watched_[i])].load(std::memory_order_acquire) == 0)
      unsent.push_back({i, 0});
  }
  for (const int64_t until = now_ns() + kGoodbyeNs; !unsent.empty() && now_ns() < until;) {
    std::erase_if(unsent, [&](std::pair<size_t, size_t>& u) {
      while (u.second < words.size() &&
             ep.signal(routes_[u.first], tag_of(words[u.second]), self_)) {
        ++u.second;
      }
      return u.second == words.size();
    });
    if (!unsent.empty()) ep.poll(1, -1);
  }
}

}  // namespace stratacl::net
