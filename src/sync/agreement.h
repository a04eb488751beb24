// Agreement on who is gone, for sclCommShrink: every survivor must build the same smaller
// communicator, so every survivor must end with the same set of gone ranks, even when ranks die
// while they agree.
//
// Each rank publishes a vote (a round number and the set it holds gone) on a board every rank
// can read, and keeps it there; the board also tells whether a rank is gone (on one host its
// pidfd: a dead process is never taken for a live one). A rank waits until every rank outside its
// set has voted in its round or later, or is gone: a gone rank's vote is read once more then, as
// a vote published before the death stays readable. When every one of those votes is its own
// round and set, the rank decides and says so on the board; otherwise it takes the union of the
// sets (and the gone ranks that never reached its round) and votes again, in the highest round
// seen or the next. It does so at once, without waiting, when a vote names ranks gone that it
// still waits for. A rank that reads a decided vote adopts it.
//
// Why two survivors cannot decide differently: a rank decides in round k only when every rank
// outside its set voted (k, the same set). Another rank outside that set reads those same votes,
// so in round k it decides the same set or moves on; it moves on only by reading something the
// first did not (a later vote, a new death), and the first rank never votes again: its decided
// vote is what the other reads next, and adopts, since it waits for every rank outside its set.
// Ranks that die after the decision are in the result: the next call on the smaller communicator
// names them, and the survivors shrink again.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "core/deadline.h"
#include "core/status.h"

namespace stratacl {

// A set of ranks, as 64-bit words (as they travel).
class RankSet {
 public:
  RankSet() = default;
  explicit RankSet(int n) : n_(n), words_(size_t(n + 63) / 64, 0) {}
  static RankSet of_words(int n, const uint64_t* words);
  int size() const { return n_; }  // the ranks it can hold (not how many it holds)
  bool has(int r) const { return (words_[size_t(r) / 64] >> (r % 64)) & 1; }
  void add(int r) { words_[size_t(r) / 64] |= uint64_t(1) << (r % 64); }
  void add_all(const RankSet& other);
  int count() const;
  const std::vector<uint64_t>& words() const { return words_; }
  bool operator==(const RankSet& o) const = default;

 private:
  int n_ = 0;
  std::vector<uint64_t> words_;
};

struct Vote {
  uint32_t round = 0;  // from 1
  bool decided = false;
  RankSet gone;
};

// Where the votes are: read and published by the agreement, on the thread that runs it.
class VoteBoard {
 public:
  virtual ~VoteBoard() = default;
  // Rank r's latest vote, or none yet.
  virtual std::optional<Vote> read(int r) = 0;
  // Whether rank r is gone for good (dead, or lost): it will not vote again.
  virtual bool gone(int r) = 0;
  virtual Status publish(const Vote& v) = 0;
};

// Runs the agreement for rank `self`, starting from the ranks it knows are gone (the caller's
// exclusion list and the deaths seen so far). Fails at the deadline, naming a rank that neither
// voted nor is gone (a stopped rank that was not excluded).
Result<RankSet> agree_on_gone(VoteBoard& board, int self, RankSet gone, const Deadline& deadline);

}  // namespace stratacl
