#include "sync/agreement.h"

#include <time.h>

#include <algorithm>
#include <bit>

namespace stratacl {

RankSet RankSet::of_words(int n, const uint64_t* words) {
  RankSet s(n);
  std::copy(words, words + s.words_.size(), s.words_.begin());
  if (n % 64) s.words_.back() &= (uint64_t(1) << (n % 64)) - 1;  // no rank past the end
  return s;
}

void RankSet::add_all(const RankSet& other) {
  for (size_t i = 0; i < words_.size() && i < other.words_.size(); ++i)
    words_[i] |= other.words_[i];
}

int RankSet::count() const {
  int c = 0;
  for (uint64_t w : words_) c += std::popcount(w);
  return c;
}

namespace {

// What one pass over the board found.
struct Pass {
  bool complete = true;   // every rank outside our set voted in our round or later, or is gone
  bool unanimous = true;  // and every such vote is ours: our round, our set
  uint32_t highest = 0;   // the highest round read
  RankSet gone;           // our set, with every set read and every rank that never came
  int waiting_for = -1;   // a rank that neither voted nor is gone
  std::optional<RankSet> decided;  // a decided vote read
};

Pass look(VoteBoard& board, int self, const Vote& mine) {
  Pass pass;
  pass.highest = mine.round;
  pass.gone = mine.gone;
  for (int r = 0; r < mine.gone.size(); ++r) {
    if (r == self || mine.gone.has(r)) continue;
    std::optional<Vote> v = board.read(r);
    if (!(v && (v->decided || v->round >= mine.round)) && board.gone(r)) {
      v = board.read(r);  // a vote published before it died is read by every survivor alike
      if (!(v && (v->decided || v->round >= mine.round))) {
        pass.gone.add(r);
        pass.unanimous = false;
        continue;
      }
    }
    if (!v || !(v->decided || v->round >= mine.round)) {
      pass.complete = false;
      pass.waiting_for = r;
      continue;
    }
    if (v->decided) {
      pass.decided = v->gone;
      return pass;
    }
    pass.highest = std::max(pass.highest, v->round);
    if (v->round != mine.round || v->gone != mine.gone) pass.unanimous = false;
    pass.gone.add_all(v->gone);
  }
  return pass;
}

}  // namespace

Result<RankSet> agree_on_gone(VoteBoard& board, int self, RankSet gone, const Deadline& deadline) {
  Vote mine{1, false, std::move(gone)};
  SCL_TRY(board.publish(mine));
  int64_t nap_ns = 20000;
  for (;;) {
    Pass pass = look(board, self, mine);
    if (pass.decided || (pass.complete && pass.unanimous)) {
      if (pass.decided) mine.gone = *pass.decided;
      mine.decided = true;
      SCL_TRY(board.publish(mine));
      return mine.gone;
    }
    if (pass.complete || pass.gone != mine.gone) {
      // Something differed, or a vote named ranks gone that we still wait for: vote again with
      // everything learnt, in a round no one has voted yet unless someone is ahead of us (then
      // in theirs, to meet them there).
      mine.round = pass.highest > mine.round ? pass.highest : mine.round + 1;
      mine.gone = pass.gone;
      SCL_TRY(board.publish(mine));
      nap_ns = 20000;
      continue;
    }
    if (deadline.expired()) {
      return Errorf(sclTimeout,
                    "shrink: timed out waiting for rank %d to take part (it neither joined the "
                    "shrink nor died; exclude a rank that is stopped or will not come)",
                    pass.waiting_for)
          .with_culprit(pass.waiting_for);
    }
    timespec ts{0, long(nap_ns)};
    nanosleep(&ts, nullptr);
    nap_ns = std::min<int64_t>(nap_ns * 2, 1000000);
  }
}

}  // namespace stratacl
