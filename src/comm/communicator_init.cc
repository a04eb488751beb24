// Communicator init: allocate this rank's blocks, meet every rank at the rendezvous, exchange heaps
// with the ranks on this host, then wire the views the algorithms run on.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <thread>

#include "bootstrap/rendezvous.h"
#include "bootstrap/root.h"
#include "bootstrap/socket.h"
#include "comm/communicator.h"
#include "core/log.h"
#include "fabric/heap.h"
#include "fabric/heap_exchange.h"

namespace stratacl {

using bootstrap::RankInfo;

namespace {

// Starts the rendezvous root of an env-launched job in this process (rank 0).
Status start_env_root(const InitRequest& req, int64_t timeout_ms, std::jthread* root) {
  UniqueFd listener;
  if (req.root_fd >= 0) {
    listener.reset(req.root_fd);  // stratarun's listening socket: ours now
    fcntl(listener.get(), F_SETFD, FD_CLOEXEC);
  } else {
    sockaddr_in addr = req.id.root;
    SCL_ASSIGN_OR_RETURN(listener, bootstrap::tcp_listen(&addr));
  }
  *root = bootstrap::start_root(std::move(listener), req.id.secret, timeout_ms);
  return Status::Ok();
}

uint64_t random_instance() {
  uint64_t v = 0;
  while (v == 0) v = (uint64_t(std::random_device{}()) << 32) ^ std::random_device{}();
  return v;
}

}  // namespace

Result<std::shared_ptr<Communicator>> Communicator::create(const InitRequest& req) {
  SCL_TRY(check_environment());
  SCL_ASSIGN_OR_RETURN(CommConfig cfg, resolve_comm_config(req.config));
  std::shared_ptr<Communicator> comm(new Communicator());
  comm->cfg_ = cfg;
  const Deadline deadline = Deadline::after_ms(cfg.timeout_ms.value);
  SCL_TRY(comm->allocate_blocks(req.nranks));

  SCL_ASSIGN_OR_RETURN(HeapExchange exch, HeapExchange::listen(req.id.secret));
  std::jthread root;  // joined on every return: the root has sent every table by then
  if (req.serve_root) SCL_TRY(start_env_root(req, cfg.timeout_ms.value, &root));

  RankInfo me = comm->describe(req);
  me.exchange_name = exch.name();
  SCL_ASSIGN_OR_RETURN(bootstrap::Joined joined, bootstrap::rendezvous(req.id, me, deadline));
  comm->published_ = true;  // from here on, a failure must not free blocks peers may read

  const std::vector<RankInfo>& table = joined.table;
  std::vector<int> local;
  Status s;
  for (const RankInfo& r : table) {
    if (r.host_hash == me.host_hash) local.push_back(r.rank);
    if (r.uid != me.uid && s.ok()) {
      s = Errorf(sclInvalidUsage, "rank %d runs as uid %u, we run as uid %u", r.rank, r.uid,
                 me.uid);
    }
  }
  if (s.ok() && bootstrap::spans_hosts(table)) {
    s = comm->init_across_hosts(joined, req.rank, exch, deadline);
  } else if (s.ok()) {
    Result<std::vector<PeerHeapRef>> maps = exch.exchange(table, local, req.rank, deadline);
    s = maps.ok() ? comm->init_from_table(table, std::move(*maps)) : maps.status();
  }
  if (!s.ok()) {
    comm->abandon_init();
    return s;
  }
  return comm;
}

Status Communicator::allocate_blocks(int nranks) {
  SCL_ASSIGN_OR_RETURN(auto* heap, Heap::instance());
  SCL_ASSIGN_OR_RETURN(auto* bells, Heap::doorbells());
  layout_ = ControlLayout::of(nranks);
  SCL_ASSIGN_OR_RETURN(cb_, heap->allocate(layout_.bytes()));
  SCL_ASSIGN_OR_RETURN(doorbells_, bells->allocate(layout_.lines() * sizeof(Doorbell)));
  std::memset(cb_, 0, layout_.bytes());
  std::memset(doorbells_, 0, layout_.lines() * sizeof(Doorbell));
  auto* block = new (cb_) ControlBlock();
  block->instance.store(random_instance(), std::memory_order_release);
  layout_.cma.in(block)->block_va = reinterpret_cast<uintptr_t>(block);  // for peers' CMA probe
  *layout_.settings.in(block) = SharedSettings::of_process();
  // Virtual until a foreign buffer needs it: pages are touched only by staging copies.
  SCL_ASSIGN_OR_RETURN(staging_, heap->allocate(size_t(cfg_.staging_bytes.value)));
  return Status::Ok();
}

RankInfo Communicator::describe(const InitRequest& req) const {
  Heap* heap = existing_heap();
  Heap* bells = *Heap::doorbells();
  RankInfo me;
  me.rank = req.rank;
  me.nranks = req.nranks;
  me.pid = getpid();
  me.uid = getuid();
  me.host_hash = bootstrap::host_hash();
  me.heap_nonce = heap->nonce();
  me.heap_bytes = heap->capacity();
  me.cb_offset = heap->offset_of(cb_);
  me.staging_bytes = uint64_t(cfg_.staging_bytes.value);
  me.staging_offset = heap->offset_of(staging_);
  me.doorbell_bytes = bells->capacity();
  me.doorbell_offset = bells->offset_of(doorbells_);
  return me;
}

Status Communicator::init_from_table(const std::vector<RankInfo>& table,
                                     std::vector<PeerHeapRef> maps) {
  const int n = int(table.size());
  Heap* heap = existing_heap();
  ctx_.nranks = n;
  ctx_.rank = -1;
  std::vector<pid_t> pids(static_cast<size_t>(n));
  std::vector<MappedAccess::Mapping> heaps(static_cast<size_t>(n));
  std::vector<uint64_t> instances(static_cast<size_t>(n));
  ctx_.round_bytes = ~uint64_t(0);
  const size_t bytes = layout_.bytes(), bell_bytes = layout_.lines() * sizeof(Doorbell);
  for (int p = 0; p < n; ++p) {
    const RankInfo& r = table[size_t(p)];
    const PeerHeapRef& m = maps[size_t(p)];
    if (r.pid == getpid() && r.cb_offset == heap->offset_of(cb_)) ctx_.rank = p;
    if (r.cb_offset > m.data_bytes() || bytes > m.data_bytes() - r.cb_offset ||
        r.doorbell_offset > m.doorbell_bytes() ||
        bell_bytes > m.doorbell_bytes() - r.doorbell_offset) {
      return Errorf(sclRemoteError, "rank %d announced a control block outside its heaps", p);
    }
    PeerBlock b;
    b.cb = reinterpret_cast<const ControlBlock*>(m.data() + r.cb_offset);
    b.doorbells = reinterpret_cast<Doorbell*>(m.doorbells() + r.doorbell_offset);
    ctx_.blocks.push_back(b);
    instances[size_t(p)] = b.cb->instance.load(std::memory_order_acquire);
    heaps[size_t(p)] = MappedAccess::Mapping{m.data(), m.data_bytes()};
    pids[size_t(p)] = r.pid;
    heap_nonces_.push_back(r.heap_nonce);
    ctx_.round_bytes = std::min(ctx_.round_bytes, r.staging_bytes);
  }
  if (ctx_.rank < 0)
    return Errorf(sclInternalError, "init: our own entry is missing from the table");
  pids_ = pids;
  maps_ = std::move(maps);
  ctx_.mine = OwnBlock{static_cast<ControlBlock*>(cb_), static_cast<Doorbell*>(doorbells_)};
  ctx_.regions = layout_.coll;
  membership_.bind(ctx_.mine, layout_.lines());

  std::vector<pid_t> watched = pids;
  watched[size_t(ctx_.rank)] = -1;
  SCL_ASSIGN_OR_RETURN(live_, Liveness::watch(watched));
  // Workers and engines: the cost model sizes the team unless the configuration pins it, for
  // every rank on the host (a split's parent may have more than this communicator). Every
  // thread that may spin counts towards oversubscription.
  const int host_ranks = std::max(n, host_ranks_);
  ExecSettings es;
  es.model = CostModel::for_host(usable_cpus(), double(process_value(Var::kHostGbps)));
  es.engines = int(cfg_.copy_engines.value);
  es.threads = cfg_.threads.value > 0 ? int(cfg_.threads.value)
                                      : es.model.auto_threads(host_ranks, es.engines);
  const int64_t min_part = process_value(Var::kWorkerMinBytes);
  es.min_part_bytes = min_part >= 0 ? size_t(min_part) : es.model.min_part_bytes();
  const WaitPolicy policy =
      WaitPolicy::for_ranks(host_ranks * (es.threads + es.engines), process_value(Var::kSpinNs));
  es.spin = SpinPolicy{policy.spin_ns, policy.yield_while_spinning};
  exec_ = std::make_unique<Executor>(es);
  log_info("rank %d: %d worker thread(s)%s, %d copy engine(s), parts of %zu bytes or more",
           ctx_.rank, es.threads, cfg_.threads.value > 0 ? "" : " (auto)", es.engines,
           es.min_part_bytes);
  ctx_.exec = exec_.get();
  ctx_.scratch.resize(size_t(es.threads));
  waiter_ = std::make_unique<Waiter>(policy, ctx_.rank, ctx_.blocks, std::move(instances), &live_,
                                     membership_.abort_flag());
  ctx_.waiter = waiter_.get();
  ctx_.timeout_ms = cfg_.timeout_ms.value;

  mapped_ = MappedAccess(std::move(heaps));
  process_ = ProcessAccess(&live_, ctx_.rank);
  ctx_.mem.bind(RefKind::kMapped, &mapped_);
  ctx_.mem.bind(RefKind::kProcess, &process_);
  std::vector<const CmaVerdict*> verdicts;
  for (const PeerBlock& b : ctx_.blocks) verdicts.push_back(layout_.cma.in(b.cb));
  cma_.bind(ctx_.rank, layout_.cma.in(ctx_.mine.cb), std::move(verdicts));
  ctx_.stager = Stager(heap, static_cast<char*>(staging_), &cma_, exec_.get());
  ctx_.quarantine = &quarantine_;
  p2p_ = P2PState(n);
  ctx_.tiles_done.assign(size_t(n), 0);
  SCL_TRY(agree_on_settings());
  std::vector<const ControlBlock*> cbs;
  for (const PeerBlock& b : ctx_.blocks) cbs.push_back(b.cb);
  cma_.probe(cbs, pids);
  return Status::Ok();
}

// Settings that steer which algorithm a call runs must be the same on every rank, or ranks
// would run different protocols in one step. Every rank compares every peer's with its own, so
// all of them fail init, naming the variable and both values. (Across hosts every rank compared
// every other's before this, with the network addresses: comm/across_hosts.cc.)
Status Communicator::agree_on_settings() {
  const SharedSettings& me = *layout_.settings.in(ctx_.cb(ctx_.rank));
  for (int p = 0; p < ctx_.nranks; ++p)
    SCL_TRY(compare_settings(me, ctx_.rank, *layout_.settings.in(ctx_.cb(p)), p));
  ctx_.eager_max_bytes = me.eager_max_bytes;
  ctx_.oneshot_forced_max = me.oneshot_forced_max;
  return Status::Ok();
}

// Init (or a split's child) failed after the rendezvous: peers know where our blocks are, and
// those whose init succeeded may be reading them in their first call. We announce that we left;
// then, when we got far enough to watch the peers, a departure barrier (bounded, as after an
// abort) shows when none reads our blocks any more. Until it does, the blocks are leaked: freed
// and reused, they could pass for this communicator's blocks to a peer.
void Communicator::abandon_init() {
  if (!published_) return;
  ControlBlock* me = static_cast<ControlBlock*>(cb_);
  uint32_t expected = kNotRevoked;
  me->revoked.compare_exchange_strong(expected, kDeparted);
  me->depart.value.store(1, std::memory_order_seq_cst);
  if (!waiter_) return;
  membership_.abort();  // bounds the barrier: a peer in its first call never departs by itself
  departed_ = membership_.depart(*waiter_, live_, ctx_.nranks, ctx_.rank, ctx_.timeout_ms);
}

Communicator::~Communicator() { release_shared_memory(); }

// Our blocks and quarantined staging go back to the heap only when no peer can read them: it
// never learned of them, or it passed our departure barrier. Otherwise they are leaked.
void Communicator::release_shared_memory() {
  Heap* heap = existing_heap();
  quarantine_.keep(std::move(ctx_.alltoallv_staged));
  if (!heap || (published_ && !departed_)) {
    quarantine_.leak_all();
    hier_moe_.leak();
    hier_heap_scratch_.leak();
    hier_average_input_.leak();
    return;
  }
  quarantine_.release_all();
  hier_moe_.release();
  hier_heap_scratch_.release();
  hier_average_input_.release();
  if (shrink_words_) (void)heap->release(shrink_words_);
  shrink_words_ = nullptr;
  if (cb_) {
    static_cast<ControlBlock*>(cb_)->instance.store(0, std::memory_order_release);
    (void)heap->release(cb_);
  }
  if (doorbells_) (void)(*Heap::doorbells())->release(doorbells_);
  if (staging_) (void)heap->release(staging_);
  cb_ = doorbells_ = staging_ = nullptr;
}

}  // namespace stratacl
