// A communicator: the ranks of one job on this host, their control blocks and mapped heaps, and
// this rank's calls on it. Its jobs live in pieces of their own: init wiring
// (communicator_init.cc), split (comm_split.cc), issue order (call_order.h), revocation, abort and
// departure (sync/membership.h), errors (error_state.h), the CMA agreement and registrations
// (fabric/); the algorithms are free functions over its CollContext.
//
// Lifetime: the C API holds communicators by shared_ptr, and so does every queued stream call,
// so sclCommAbort or sclCommDestroy from another thread never frees one under a call. destroy()
// releases everything shared with peers; the object itself goes with its last reference.
#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "bootstrap/rendezvous.h"
#include "bootstrap/unique_id.h"
#include "bootstrap/wire.h"
#include "coll/call.h"
#include "coll/context.h"
#include "coll/p2p.h"
#include "comm/call_order.h"
#include "comm/control_layout.h"
#include "comm/error_state.h"
#include "comm/shrink_record.h"
#include "core/config.h"
#include "core/status.h"
#include "fabric/cma_agreement.h"
#include "fabric/heap_exchange.h"
#include "fabric/peer_heaps.h"
#include "fabric/peer_memory.h"
#include "fabric/registration_cache.h"
#include "fabric/staging.h"
#include "hier/hierarchical.h"
#include "moe/moe.h"
#include "net/heartbeat.h"
#include "net/rail.h"
#include "sync/liveness.h"
#include "sync/membership.h"
#include "sync/waiter.h"

struct sclComm {};  // the public handle type; Communicator derives from it

namespace stratacl {

struct InitRequest {
  int nranks = 0, rank = 0;
  bootstrap::IdData id;
  bool serve_root = false;  // start the rendezvous root in this process
  int root_fd = -1;         // an inherited listening socket for the root (stratarun)
  const sclConfig_t* config = nullptr;
};

class Communicator : public sclComm {
 public:
  static Result<std::shared_ptr<Communicator>> create(const InitRequest& req);
  ~Communicator();
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  // The rank in the whole job. Across hosts, ctx_ holds this host's ranks only, and the rail
  // (net/rail.h) reaches the other hosts.
  int rank() const { return rail_ ? world_rank_ : ctx_.rank; }
  int nranks() const { return rail_ ? world_nranks_ : ctx_.nranks; }
  bool spans_hosts() const { return rail_ != nullptr; }
  const CommConfig& config() const { return cfg_; }

  // A ticket in issue order, taken on the thread that issues the call (comm/call_order.h); for a
  // call queued on `queue`, held until started() is told its job has begun there.
  uint32_t issue(const Stream* queue = nullptr) {
    return queue ? order_.take_queued(queue) : order_.take();
  }
  void started(uint32_t ticket) { order_.started(ticket); }
  // sclInvalidUsage where this thread runs a stream's callback and calls of ours queued on that
  // stream wait behind it: a call issued now could only wait for them in vain.
  Status queued_behind_caller() { return order_.queued_behind_caller(); }
  // Runs one collective, or a batch of point-to-point ops, blocking, in its ticket's turn.
  Status run(uint32_t ticket, const Call& call);
  Status run_p2p(uint32_t ticket, std::span<const P2POp> ops);
  // One MoE call (moe/moe.h), in its ticket's turn.
  Status run_moe(uint32_t ticket, const moe::Call& call);
  // Lets `ticket`'s turn pass with nothing run: a call of a group after one that failed.
  // `counted`: a call the hosts number (a collective or a MoE call, not send/recv).
  void skip(uint32_t ticket, bool counted);
  // sclCommSplit, in its ticket's turn: a child, or null for SCL_SPLIT_NOCOLOR. A `refused`
  // call (its arguments) still takes part in the step and fails it, so that every rank fails
  // at once instead of waiting for this one; it returns `refused`.
  Result<std::shared_ptr<Communicator>> split(uint32_t ticket, int color, int key,
                                              const sclConfig_t* config,
                                              const Status& refused = Status::Ok());

  // sclCommShrink, in its ticket's turn (comm/comm_shrink.cc): the survivors' communicator,
  // without the ranks in `exclude` and those the survivors find gone meanwhile.
  // `abort_first`: revoke first, so that pending calls fail at once (SCL_SHRINK_ABORT).
  Result<std::shared_ptr<Communicator>> shrink(uint32_t ticket, std::span<const int> exclude,
                                               const sclConfig_t* config, bool abort_first);
  // sclCommRevoke: every rank's pending and later calls fail; destroy and shrink still work.
  void revoke_by_user();

  // sclCommFinalize, in its ticket's turn: waits until every call issued before it is through,
  // then leaves after a departure barrier with the peers (bounded by the timeout), so no peer can
  // still be reading our blocks when their memory is reused, and releases them. Later calls
  // fail. A peer that never comes is waited for until the timeout, then left behind (our blocks
  // stay allocated for it); the error is an earlier call that never finished. A second finalize
  // fails with sclInvalidUsage and touches nothing.
  Status finalize(uint32_t ticket);
  // Finalizes, unless that was done; what is left goes with the object, locally.
  void destroy();
  // Revokes the communicator: every rank's pending and later calls fail with sclRemoteError.
  // Any thread, any time: a blocked call returns within milliseconds. Not async-signal-safe.
  void abort();

  ErrorState& errors() { return errors_; }
  // Whether calls can no longer go on (destroyed, revoked, a rank lost): what an asynchronous
  // error reports, as NCCL's, after a failed call on a stream.
  bool broken() const { return !usable().ok(); }
  // sclCommRegister: foreign ranges peers then read with process_vm_readv. Fails when this rank
  // cannot read its peers that way (the probe at init says why).
  Result<void*> register_range(void* buff, size_t size);
  bool deregister(void* handle);
  const RegistrationCache& registrations() const { return registrations_; }

  // Tests only: moves this communicator to step `seq`, as if it had run every step before (it
  // lets a test reach the wrap-around of step numbers without running 2^32 steps). Every rank
  // calls it with the same value before its next call; it returns once every rank is there.
  Status set_step_for_testing(uint32_t seq);

 private:
  Communicator() = default;
  // Runs `work` in `ticket`'s turn, if the communicator is still usable then.
  template <typename Work>
  Status in_turn(uint32_t ticket, const char* name, Work&& work);
  // Whether calls can go on: not destroyed, not revoked, and (across hosts) no rank lost, and
  // `waiting_on` (a world rank a call waits for; -1: none) still a member.
  Status usable(int waiting_on = -1) const;
  // Revokes the communicator here, and tells the other hosts through the heartbeat.
  void revoke(const Status& why);
  // Across hosts, a call refused for its arguments (`what`, `why`) ends the communicator.
  Status end_for_refusal(const char* what, sclResult_t why);
  Status allocate_blocks(int nranks);
  // A split's or shrink's child gets `config` resolved, or ours when it is null.
  Status configure_child(Communicator& child, const sclConfig_t* config) const;
  bootstrap::RankInfo describe(const InitRequest& req) const;
  Status init_from_table(const std::vector<bootstrap::RankInfo>& table,
                         std::vector<PeerHeapRef> maps);
  // Across hosts: the network endpoint, the rail, and this host's share of the table.
  Status init_across_hosts(const bootstrap::Joined& joined, int rank, HeapExchange& exch,
                           const Deadline& deadline);
  // The context of the hierarchical algorithms (valid while rail_ is set).
  hier::Context across_hosts() {
    return hier::Context{ctx_,          *rail_,    hier_scratch_,      world_rank_,
                         world_nranks_, hier_moe_, hier_heap_scratch_, {}};
  }
  // sclCommSplit across hosts (comm/split_across_hosts.cc): every rank's card over the parent's
  // network (opening the child's endpoint first), then the child's rail.
  Status share_split(int color, int key, const Status& here, Communicator* child,
                     std::vector<net::SplitCard>* cards);
  // The parent ranks of `color` in child rank order (`members`), and the child's network nodes
  // (child_nodes()).
  std::vector<uint64_t> split_nodes(const std::vector<net::SplitCard>& cards, int color,
                                    std::vector<int>* members, bool* cut) const;
  Status join_across_hosts(const std::vector<net::SplitCard>& cards,
                           const std::vector<int>& members, const std::vector<uint64_t>& nodes,
                           bool cut, int parent_rank);
  // A child's network nodes (split or shrink), from its members (parent ranks, in child rank
  // order): the parent's nodes where the child can take them, otherwise cut smaller
  // (net::Topology::nodes()), each within one of the parent's, whose ranks share memory. `cut`
  // (optional): whether they are cut from hosts, here or in the parent (net::Topology::cut).
  std::vector<uint64_t> child_nodes(const std::vector<int>& members, bool* cut = nullptr) const;
  // A child's network (split or shrink): its members' nodes and endpoint addresses, in child
  // rank order, whether the nodes are cut, and our child rank. A child whose members share one
  // node needs none.
  Status join_network(const std::vector<uint64_t>& nodes, bool cut,
                      const std::vector<std::vector<uint8_t>>& names, int me);

  // sclCommShrink (comm/comm_shrink.cc, comm/shrink_across_hosts.cc).
  class ShrinkBoard;
  Result<std::shared_ptr<Communicator>> shrink_in_turn(std::span<const int> exclude,
                                                       const sclConfig_t* config);
  Status publish_shrink_record(const ShrinkRecord& rec);
  // `world`'s record of this attempt (shrink_record_read: of any attempt), or none yet.
  std::optional<ShrinkRecord> shrink_record_of(int world) const;
  std::optional<ShrinkRecord> shrink_record_read(int world) const;
  bool shrink_peer_gone(int world) const;
  Status gather_members(const RankSet& gone, const Deadline& deadline, std::vector<int>* members,
                        std::vector<ShrinkRecord>* parts) const;
  Status join_shrunk(Communicator& parent, const std::vector<int>& members,
                     const std::vector<ShrinkRecord>& parts);
  Status prepare_child_endpoint(Communicator& child, ShrinkPart* part);
  // The members on our node in the child (all of them without a network).
  std::vector<int> shrunk_host_members(const std::vector<int>& members) const;
  Status join_shrunk_across_hosts(const Communicator& parent, const std::vector<int>& members,
                                  const std::vector<ShrinkRecord>& parts);
  // The rail over `ep`, which asks usable() while it waits.
  void set_rail(std::unique_ptr<net::Endpoint> ep, const net::Topology& topo);
  // Opens the heartbeat, shares its address with every rank over the rail, and starts it.
  Status start_heartbeat();
  Status agree_on_settings();
  Status finish_call(Status s);
  // Init failed after peers learned where our blocks are: see communicator_init.cc.
  void abandon_init();
  void release_shared_memory();

  CommConfig cfg_;
  ControlLayout layout_;
  std::unique_ptr<net::Rail> rail_;            // set when the ranks span hosts
  std::unique_ptr<net::Heartbeat> heartbeat_;  // with rail_, after init; stops before rail_ goes
  std::unique_ptr<net::Endpoint> child_ep_;    // a split child's endpoint, until it has a rail
  hier::Scratch hier_scratch_;                 // partial results of calls across hosts
  hier::MoeState hier_moe_;                    // MoE across hosts
  hier::HeapScratch hier_heap_scratch_;        // small alltoalls' packs, spread allreduces' sums
  hier::HeapScratch hier_average_input_;       // fp16 and fp8 averages' inputs, divided first
  int world_rank_ = 0, world_nranks_ = 0;
  CollContext ctx_;
  std::vector<PeerHeapRef> maps_;
  std::vector<uint64_t> heap_nonces_;
  std::vector<pid_t> pids_;
  Liveness live_;
  std::unique_ptr<Waiter> waiter_;
  std::unique_ptr<Executor> exec_;
  MappedAccess mapped_{{}};
  ProcessAccess process_{nullptr, 0};
  Membership membership_;
  CmaAgreement cma_;
  RegistrationCache registrations_;
  Quarantine quarantine_;
  P2PState p2p_;
  CallOrder order_;
  ErrorState errors_;
  uint64_t* shrink_words_ = nullptr;  // our shrink record, in our data heap
  uint32_t shrink_attempt_ = 0;       // sclCommShrink calls so far
  bool shrunk_ = false;               // one succeeded
  RankSet shrunk_away_;               // the ranks a shrink left out: destroy does not wait for them
  void* cb_ = nullptr;                // our control block, in our data heap
  void* doorbells_ = nullptr;         // its doorbells, in our doorbell heap
  void* staging_ = nullptr;           // our staging area (touched only for foreign buffers)
  // Ranks on our host, at least: those of the communicator this was split from, or at init
  // across hosts all the world's there (every one its own network node where flat).
  int host_ranks_ = 0;
  bool published_ = false;  // peers know where our blocks are: free them only after departing
  bool departed_ = false;   // a departure barrier completed: no peer reads our blocks any more
  std::atomic<bool> destroyed_{false};
  std::atomic<bool> finalized_{false};  // finalize() ran (sclCommFinalize, or destroy's own)
};

template <typename Work>
Status Communicator::in_turn(uint32_t ticket, const char* name, Work&& work) {
  Status s = order_.enter(ticket, cfg_.timeout_ms.value, [this] { return usable(); });
  if (!s.ok()) {
    // A turn that never came: peers will run this call and we cannot, so later calls would pair
    // wrongly. Revoke.
    if (s.code() == sclTimeout) revoke(s);
    errors_.set_last(s);
    return s;
  }
  Turn turn(order_);
  SCL_TRY(finish_call(usable()));
  ctx_.begin_call(name);
  return finish_call(work());
}

}  // namespace stratacl
