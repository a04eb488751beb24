// What a rank publishes in sclCommShrink: its vote in the agreement on who is gone
// (sync/agreement.h), and its part of the smaller communicator: whether it could prepare it, the
// blocks it allocated for it (for the survivors on its host) and its new network address (for
// those on other hosts). One flat array of words, the same on every path: a peer on this host
// reads it from our heap, a peer on another host receives it with our heartbeat.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <vector>

#include "sync/agreement.h"

namespace stratacl {

struct ShrinkPart {
  int32_t prepared = 0;  // sclSuccess, or why this rank cannot join the smaller communicator
  uint64_t cb_offset = 0, doorbell_offset = 0, staging_offset = 0, staging_bytes = 0;
  uint32_t name_bytes = 0;
  uint8_t name[112] = {};
};

struct ShrinkRecord {
  uint32_t attempt = 0;  // this rank's sclCommShrink calls on the communicator: only the same count
  Vote vote;             // (the same attempt) is taken, so a failed shrink can be tried again
  ShrinkPart part;

  static constexpr size_t kHeadWords = 2 + 4 + 14;
  static size_t words_for(int nranks) { return kHeadWords + size_t(nranks + 63) / 64; }

  std::vector<uint64_t> encode() const {
    std::vector<uint64_t> w(kHeadWords, 0);
    w[0] = uint64_t(vote.round) | uint64_t(vote.decided) << 32 | uint64_t(attempt) << 33;
    w[1] = uint32_t(part.prepared) | uint64_t(part.name_bytes) << 32;
    w[2] = part.cb_offset, w[3] = part.doorbell_offset;
    w[4] = part.staging_offset, w[5] = part.staging_bytes;
    std::memcpy(&w[6], part.name, sizeof part.name);
    w.insert(w.end(), vote.gone.words().begin(), vote.gone.words().end());
    return w;
  }
  // From `words` (at least words_for(nranks) of them), as a peer sent them: sizes are clamped,
  // and ranks past the end dropped, so nothing read can index out of range.
  static ShrinkRecord decode(const uint64_t* w, int nranks) {
    ShrinkRecord r;
    r.vote.round = uint32_t(w[0]);
    r.vote.decided = (w[0] >> 32) & 1;
    r.attempt = uint32_t(w[0] >> 33);
    r.part.prepared = int32_t(uint32_t(w[1]));
    r.part.name_bytes = std::min<uint32_t>(uint32_t(w[1] >> 32), sizeof r.part.name);
    r.part.cb_offset = w[2], r.part.doorbell_offset = w[3];
    r.part.staging_offset = w[4], r.part.staging_bytes = w[5];
    std::memcpy(r.part.name, &w[6], sizeof r.part.name);
    r.vote.gone = RankSet::of_words(nranks, w + kHeadWords);
    return r;
  }
};

// Where a rank's record is, in its control block (comm/control_layout.h): a block of its heap,
// under a sequence lock, since the owner rewrites it as the agreement goes on. `seq` is 0 until
// the first record, odd while one is being written.
struct ShrinkSlot {
  std::atomic<uint64_t> seq;
  uint64_t offset, words;
};

}  // namespace stratacl
