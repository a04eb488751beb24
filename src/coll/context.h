// What an algorithm needs to run: this rank's view of the communicator (every rank's control
// block, the peers' memory), the step sequence, the waiter, and the stager that publishes our
// buffers. The communicator owns it; the algorithms are free functions over it.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "coll/step_lines.h"
#include "core/deadline.h"
#include "core/status.h"
#include "exec/executor.h"
#include "fabric/peer_memory.h"
#include "fabric/staging.h"
#include "sync/doorbells.h"
#include "sync/region.h"
#include "sync/waiter.h"

namespace stratacl {

struct P2PChannel;
struct P2PAck;
struct AlltoallvBlock;

// The regions coll's protocols publish in every control block.
struct CollRegions {
  Region<StepLines> step;
  Region<P2PChannel> p2p_send;       // one per peer: sends posted to it
  Region<P2PAck> p2p_ack;            // one per peer: receives completed from it
  Region<AlltoallvBlock> alltoallv;  // one per peer: what this rank sends it
  static CollRegions declare(RegionLayout& layout, int nranks);
};

struct CollContext {
  int rank = 0, nranks = 0;
  OwnBlock mine;                  // our control block, writable
  std::vector<PeerBlock> blocks;  // every rank's block, ours included, read-only
  CollRegions regions;
  PeerMemory mem;                    // how we reach what peers publish
  Stager stager;                     // how we publish what peers read
  Quarantine* quarantine = nullptr;  // staged blocks a failed call could not prove unread
  // alltoallv's staged send buffer, kept from call to call so that its pages fault in once (a
  // call returns only when every peer finished reading it; the communicator quarantines it).
  StagedBlock alltoallv_staged;
  Waiter* waiter = nullptr;
  int64_t timeout_ms = 0;
  uint32_t seq = kNoStep;             // the step number of the last step begun
  std::vector<uint32_t> tiles_done;   // per rank: tiles announced over the communicator's life
  std::vector<CallDesc> descs;        // the peers' descriptors of the current step
  std::vector<const void*> payloads;  // the peers' payloads of the current eager step
  Executor* exec = nullptr;           // the rank's workers and copy engines (always set)
  // Scratch memory of the communicator's calls, one per worker (a job's part p uses scratch[p]),
  // grown as needed and reused (calls on one communicator run one at a time).
  struct Scratch {
    std::vector<char> bytes;                 // in-place one-shot allreduce's result
    std::vector<const void*> srcs;           // a reduction's inputs, one per rank
    std::vector<std::vector<char>> fetched;  // inputs read (not mapped), one per rank
  };
  std::vector<Scratch> scratch = std::vector<Scratch>(1);
  uint64_t call_index = 0;  // user-visible call counter, for messages
  const char* call_name = "";
  // Every rank cuts calls into the same rounds: round_bytes is the smallest staging area of all.
  uint64_t round_bytes = 0;
  // Algorithm choices every rank must make alike (checked to agree at init).
  size_t eager_max_bytes = 0;       // STRATACL_EAGER_MAX_BYTES
  int64_t oneshot_forced_max = -1;  // STRATACL_ONESHOT_MAX_BYTES

  // A call starts: its number and name for messages, and a fresh deadline.
  void begin_call(const char* name) {
    ++call_index;
    call_name = name;
    deadline_.reset();
  }
  // The call's deadline: STRATACL_TIMEOUT_MS after its first wait that had to block. One
  // deadline serves every wait of the call, however many steps and tiles it has; calls that
  // never block never read the clock for it.
  const Deadline& deadline() {
    if (!deadline_) deadline_ = Deadline::after_ms(timeout_ms);
    return *deadline_;
  }
  // Waits until rank `peer`'s line `flag` reaches `target`, within the call's deadline.
  Status wait(int peer, const Flag& flag, uint32_t target,
              const std::function<std::string()>& what) {
    if (seq_reached(flag.value.load(std::memory_order_acquire), target)) return Status::Ok();
    return waiter->wait(peer, flag, target, deadline(), what);
  }
  void signal(Flag& flag, uint32_t value) const { signal_flag(mine, flag, value); }

  ControlBlock* me() const { return mine.cb; }
  const ControlBlock* cb(int p) const { return blocks[size_t(p)].cb; }
  StepLines& my_step() const { return *regions.step.in(mine.cb); }
  const StepLines& step_of(int p) const { return *regions.step.in(cb(p)); }

  // Block `block`, bytes [offset, offset + bytes), of what `peer` published as `ref`: a pointer
  // when it is mapped here, nullptr when it must be read (errors name the call).
  Result<const char*> view_block(int peer, const RemoteRef& ref, size_t block, uint64_t offset,
                                 uint64_t bytes) const;
  // Reads them into dst; large reads are cut over the workers, or go to the copy engines.
  Status read_block(int peer, const RemoteRef& ref, size_t block, uint64_t offset, uint64_t bytes,
                    char* dst, bool stream = false) const;
  // A local pure move, on the workers or engines as the cost model says.
  void copy(char* dst, const char* src, size_t bytes, bool stream = false) const;
  std::string where() const;  // "allreduce #12 (step 40)"

 private:
  std::optional<Deadline> deadline_;
};

}  // namespace stratacl
