#include "net/heartbeat.h"

#include <sys/eventfd.h>
#include <unistd.h>

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
constexpr int64_t kGoodbyeNs = 20 * 1000 * 1000;  // lets the goodbye leave before the close
constexpr int64_t kFirstBeatsNs = 10 * 1000 * 1000;
constexpr int64_t kLeftGraceNs = 200 * 1000 * 1000;

uint64_t word_of(Heartbeat::State s, int culprit, bool usage = false) {
  return uint64_t(s) | uint64_t(usage) << kUsageBit | uint64_t(culprit + 1) << (kUsageBit + 1);
}
Heartbeat::State state_of(uint64_t word) { return Heartbeat::State(word & 3); }
bool usage_of(uint64_t word) { return (word >> kUsageBit) & 1; }
int culprit_of(uint64_t word) { return int((word & kWordMask) >> (kUsageBit + 1)) - 1; }

}  // namespace

Result<std::unique_ptr<Heartbeat>> Heartbeat::open() {
  SCL_ASSIGN_OR_RETURN(std::unique_ptr<Endpoint> ep, Endpoint::open(0, false));
  std::unique_ptr<Heartbeat> h(new Heartbeat(std::move(ep)));
  h->wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (h->wake_fd_ < 0) return SystemErrorf("heartbeat: eventfd");
  return h;
}

uint64_t Heartbeat::tag_of(uint64_t word) const { return nonce_ << kWordBits | word; }

Heartbeat::~Heartbeat() {
  leave();
  if (wake_fd_ >= 0) ::close(wake_fd_);
}

Status Heartbeat::start(const std::vector<std::vector<uint8_t>>& names, int self, uint64_t nonce,
                        std::vector<int> watched, int64_t lost_after_ms, PeerName who,
                        const Deadline& deadline, size_t record_bytes) {
  SCL_TRY(ep_->connect(names, self));
  record_bytes_ = record_bytes;
  records_.assign(names.size(), std::nullopt);
  record_versions_.assign(names.size(), 0);
  silent_ = std::make_unique<std::atomic<bool>[]>(names.size());
  nonce_ = nonce & kNonceMask;
  watched_ = std::move(watched);
  lost_after_ns_ = lost_after_ms * 1000000;
  who_ = std::move(who);
  left_at_ = std::make_unique<std::atomic<int64_t>[]>(names.size());
  heard_all_ = watched_.empty();
  thread_ = std::jthread([this] { loop(); });
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

// Per watched rank: the record being sent to it and the receive of its next one.
struct Heartbeat::RecordLines {
  explicit RecordLines(size_t watched)
      : out(watched),
        in(watched),
        out_bufs(watched),
        in_bufs(watched),
        sent(watched, 0),
        sending(watched, false),
        listening(watched, false) {}
  std::vector<Transfer> out, in;
  std::vector<std::vector<uint64_t>> out_bufs, in_bufs;
  std::vector<uint32_t> sent;  // the number of the record last sent
  std::vector<bool> sending, listening;
};

void Heartbeat::post_records(RecordLines& lines) {
  // Nothing is posted until this rank has a record (it shrinks): a peer's records that come
  // earlier wait in the provider until then, and no communicator pays for receives it never uses.
  const uint32_t version = my_version_.load(std::memory_order_acquire);
  if (record_bytes_ == 0 || version == 0) return;
  if (records_posted_at_.load(std::memory_order_relaxed) == 0)
    records_posted_at_.store(now_ns(), std::memory_order_release);
  for (size_t i = 0; i < watched_.size(); ++i) {
    const int p = watched_[i];
    if (!lines.listening[i]) {
      lines.in_bufs[i].assign((record_bytes_ + 7) / 8, 0);
      Transfer& t = lines.in[i];
      t = Transfer{};
      t.peer = p, t.buf = lines.in_bufs[i].data(), t.bytes = record_bytes_;
      t.tag = kRecordTag | nonce_ << kWordBits;
      t.ignore = kWordMask;
      lines.listening[i] = ep_->post_async(t).ok();
    }
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
    t.send = true, t.peer = p;
    t.buf = lines.out_bufs[i].data(), t.bytes = lines.out_bufs[i].size() * sizeof(uint64_t);
    t.tag = kRecordTag | nonce_ << kWordBits | version;
    if (ep_->post_async(t).ok()) {
      lines.sent[i] = version;
      lines.sending[i] = !t.done;
    }
  }
}

void Heartbeat::reap_records(RecordLines& lines) {
  for (size_t i = 0; i < watched_.size(); ++i) {
    if (lines.sending[i] && lines.out[i].done) {
      lines.sending[i] = false;
      if (lines.out[i].failed) lines.sent[i] = 0;  // send it again
    }
    Transfer& t = lines.in[i];
    if (!lines.listening[i] || !t.done) continue;
    lines.listening[i] = false;  // listen again at the next post_records()
    if (t.failed || t.bytes % sizeof(uint64_t) != 0) continue;
    const uint32_t version = uint32_t(t.tag & kWordMask);
    std::lock_guard<std::mutex> lock(records_mu_);
    const size_t p = size_t(watched_[i]);
    // Numbers wrap at 2^19: "newer" is within half of that ahead.
    const uint32_t ahead = (version - record_versions_[p]) & kWordMask;
    if (records_[p] && (ahead == 0 || ahead > (kWordMask >> 1))) continue;
    records_[p].emplace(lines.in_bufs[i].begin(),
                        lines.in_bufs[i].begin() + long(t.bytes / sizeof(uint64_t)));
    record_versions_[p] = version;
  }
}

void Heartbeat::leave() {
  if (!thread_.joinable()) return;
  stopping_.store(true, std::memory_order_release);
  wake();
  thread_.join();
}

void Heartbeat::wake() const {
  const uint64_t one = 1;
  (void)!write(wake_fd_, &one, sizeof one);
}

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

void Heartbeat::beat(uint64_t word) {
  for (int p : watched_) {
    if (left_at_[size_t(p)].load(std::memory_order_acquire) == 0) ep_->signal(p, tag_of(word));
  }
}

void Heartbeat::loop() {
  const int64_t period = std::max<int64_t>(lost_after_ns_ / kBeatsPerLoss, 1000000);
  std::vector<Transfer> ears(watched_.size());
  std::vector<bool> listening(watched_.size(), false);
  std::vector<int64_t> last(watched_.size(), now_ns());
  std::vector<bool> heard_once(watched_.size(), false);
  size_t unheard = watched_.size();
  int64_t next_beat = 0;
  uint64_t said = ~uint64_t(0);
  bool silent = false;  // a watched rank was lost to silence
  RecordLines records(watched_.size());
  while (!stopping_.load(std::memory_order_acquire)) {
    post_records(records);
    for (size_t i = 0; i < ears.size(); ++i) {
      if (listening[i]) continue;
      ears[i] = Transfer{};
      ears[i].peer = watched_[i];
      ears[i].tag = tag_of(0);
      ears[i].ignore = kWordMask;
      listening[i] = ep_->listen(ears[i]).ok();
    }
    const int64_t before = now_ns();
    const uint64_t word = word_.load(std::memory_order_acquire);
    if (before >= next_beat || word != said) {
      beat(word);
      said = word;
      // Until every peer was heard, often: a first beat may wait for its connection.
      next_beat = before + (unheard ? std::min(period, kFirstBeatsNs) : period);
    }
    const int64_t asked_ms = std::clamp<int64_t>((next_beat - before) / 1000000, 1, 1000);
    ep_->poll(int(asked_ms), wake_fd_);
    uint64_t drained;
    (void)!read(wake_fd_, &drained, sizeof drained);
    const int64_t now = now_ns();
    // A wait that ran far past what it asked for (the machine stalled, the process was
    // stopped) is our silence, not the peers': count theirs from now.
    if (now - before > asked_ms * 1000000 + 2 * period) std::fill(last.begin(), last.end(), now);
    reap_records(records);
    for (size_t i = 0; i < ears.size(); ++i) {
      if (listening[i] && ears[i].done) {
        listening[i] = false;  // listen again at the top of the loop
        if (ears[i].failed) continue;
        last[i] = now;
        heard(watched_[i], ears[i].tag & kWordMask, now);
        if (!heard_once[i]) {
          heard_once[i] = true;
          if (--unheard == 0) {
            std::lock_guard<std::mutex> lock(mu_);
            heard_all_ = true;
            all_heard_.notify_all();
          }
        }
      }
      const int p = watched_[i];
      if (now - last[i] > lost_after_ns_ &&
          left_at_[size_t(p)].load(std::memory_order_acquire) == 0)
        silent_[size_t(p)].store(true, std::memory_order_release);
      if (now - last[i] > lost_after_ns_ && !silent &&
          left_at_[size_t(p)].load(std::memory_order_acquire) == 0) {
        silent = true;
        lose(Errorf(sclRemoteError,
                    "%s is lost: no heartbeat for %.1f s (dead, or its link is cut; "
                    "STRATACL_NET_LOST_MS)",
                    who_(p).c_str(), double(now - last[i]) / 1e9),
             p, true);
      }
    }
  }
  // Our last record leaves before the goodbye (the same connection keeps their order): a rank
  // the shrink left out learns so from it, not from our silence.
  for (const int64_t until = now_ns() + kGoodbyeNs; now_ns() < until;) {
    reap_records(records);
    post_records(records);
    if (std::none_of(records.sending.begin(), records.sending.end(), [](bool b) { return b; }) &&
        std::all_of(records.sent.begin(), records.sent.end(),
                    [&](uint32_t v) { return v == my_version_.load(std::memory_order_acquire); })) {
      break;
    }
    ep_->poll(1, -1);
  }
  say_goodbye();
  // Beats may be stuck on a cut link: see Endpoint::abandon().
  if (lost_.load(std::memory_order_acquire)) ep_->abandon();
  ep_.reset();  // while `ears`, which its posted receives point into, still exist
}

void Heartbeat::say_goodbye() {
  // The peers stop expecting us. A rank that failed says that instead, last: the peers must
  // fail, and a goodbye overtaking the failure would hide it. Injected sends have no
  // completions: progress a moment so they leave, and retry one the queue refused.
  const uint64_t last_word = word_.load(std::memory_order_acquire);
  const uint64_t word =
      state_of(last_word) == State::kAlive ? word_of(State::kLeft, -1) : last_word;
  std::vector<int> unsent;
  for (int p : watched_) {
    if (left_at_[size_t(p)].load(std::memory_order_acquire) == 0) unsent.push_back(p);
  }
  for (const int64_t until = now_ns() + kGoodbyeNs; now_ns() < until;) {
    std::erase_if(unsent, [&](int p) { return ep_->signal(p, tag_of(word)); });
    ep_->poll(1, -1);
  }
}

}  // namespace stratacl::net
