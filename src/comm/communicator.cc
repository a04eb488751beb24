#include "comm/communicator.h"

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <random>

#include "bootstrap/rendezvous.h"
#include "bootstrap/root.h"
#include "bootstrap/socket.h"
#include "coll/algorithms.h"
#include "coll/step.h"
#include "core/log.h"
#include "fabric/cma.h"
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
    Result<UniqueFd> l = bootstrap::tcp_listen(&addr);
    if (!l.ok()) return l.status();
    listener = std::move(*l);
  }
  *root = bootstrap::start_root(std::move(listener), req.id.secret, timeout_ms);
  return Status::Ok();
}

}  // namespace

Result<std::unique_ptr<Communicator>> Communicator::create(const InitRequest& req) {
  Result<CommConfig> cfg = resolve_comm_config(req.config);
  if (!cfg.ok()) return cfg.status();
  Result<Heap*> heap = Heap::instance();
  if (!heap.ok()) return heap.status();
  std::unique_ptr<Communicator> comm(new Communicator());
  comm->cfg_ = *cfg;
  const Deadline deadline = Deadline::after_ms(cfg->timeout_ms.value);
  SCL_TRY(comm->allocate_blocks(req.nranks));

  Result<HeapExchange> exch = HeapExchange::listen(req.id.secret, req.rank);
  if (!exch.ok()) return exch.status();
  std::jthread root;  // joined on every return: the root has sent every table by then
  if (req.serve_root) SCL_TRY(start_env_root(req, cfg->timeout_ms.value, &root));

  RankInfo me;
  me.rank = req.rank;
  me.nranks = req.nranks;
  me.pid = getpid();
  me.uid = getuid();
  me.host_hash = bootstrap::host_hash();
  me.heap_nonce = (*heap)->nonce();
  me.heap_bytes = (*heap)->capacity();
  me.cb_offset = (*heap)->offset_of(comm->cb_);
  me.staging_bytes = uint64_t(cfg->staging_bytes.value);
  me.staging_offset = (*heap)->offset_of(comm->staging_);
  Result<std::vector<RankInfo>> table = bootstrap::rendezvous(req.id, me, deadline);
  if (!table.ok()) return table.status();

  std::vector<int> local;
  for (const RankInfo& r : *table) {
    if (r.host_hash == me.host_hash) local.push_back(r.rank);
    if (r.uid != me.uid) {
      return Errorf(sclInvalidUsage, "rank %d runs as uid %u, we run as uid %u", r.rank, r.uid,
                    me.uid);
    }
  }
  if (local.size() != table->size()) {
    return Errorf(sclInvalidUsage,
                  "the %d ranks span more than one host (%zu are on this one); the inter-host "
                  "transport (libfabric) is not built yet",
                  req.nranks, local.size());
  }
  Result<std::vector<PeerHeapRef>> maps =
      exch->exchange(*table, local, req.rank, (*heap)->fd(), deadline);
  if (!maps.ok()) return maps.status();
  SCL_TRY(comm->init_from_table(*table, std::move(*maps)));
  return comm;
}

Status Communicator::allocate_blocks(int nranks) {
  Result<Heap*> heap = Heap::instance();
  if (!heap.ok()) return heap.status();
  cb_bytes_ = CbLayout::of(nranks).total;
  Result<void*> cb = (*heap)->allocate(cb_bytes_);
  if (!cb.ok()) return cb.status();
  cb_ = *cb;
  std::memset(cb_, 0, cb_bytes_);
  auto* cb_obj = new (cb_) ControlBlock();
  uint64_t instance = 0;
  while (instance == 0)
    instance = (uint64_t(std::random_device{}()) << 32) ^ std::random_device{}();
  cb_obj->instance.store(instance, std::memory_order_release);
  cb_obj->self_va = reinterpret_cast<uintptr_t>(cb_);
  cb_obj->eager_max_bytes = uint32_t(process_value(Var::kEagerMaxBytes));
  cb_obj->oneshot_forced_max = process_value(Var::kOneShotMaxBytes);
  // Virtual until a foreign buffer needs it: pages are touched only by staging copies.
  Result<void*> staging = (*heap)->allocate(size_t(cfg_.staging_bytes.value));
  if (!staging.ok()) return staging.status();
  staging_ = *staging;
  return Status::Ok();
}

Status Communicator::init_from_table(const std::vector<RankInfo>& table,
                                     std::vector<PeerHeapRef> maps) {
  const int n = int(table.size());
  Heap* heap = existing_heap();
  ctx_.nranks = n;
  ctx_.rank = -1;
  std::vector<pid_t> pids(static_cast<size_t>(n));
  std::vector<ControlBlock*> cbs(static_cast<size_t>(n));
  ctx_.round_bytes = ~uint64_t(0);
  for (int p = 0; p < n; ++p) {
    const RankInfo& r = table[size_t(p)];
    if (r.pid == getpid() && r.cb_offset == heap->offset_of(cb_)) ctx_.rank = p;
    PeerView v;
    v.base = maps[size_t(p)].base();
    v.bytes = maps[size_t(p)].size();
    if (r.cb_offset > v.bytes || cb_bytes_ > v.bytes - r.cb_offset) {
      return Errorf(sclRemoteError, "rank %d announced a control block outside its heap", p);
    }
    v.cb = reinterpret_cast<ControlBlock*>(v.base + r.cb_offset);
    v.cb_instance = v.cb->instance.load(std::memory_order_acquire);
    v.pid = r.pid;
    ctx_.peers.push_back(v);
    cbs[size_t(p)] = v.cb;
    pids[size_t(p)] = r.pid;
    heap_nonces_.push_back(r.heap_nonce);
    ctx_.round_bytes = std::min(ctx_.round_bytes, r.staging_bytes);
  }
  if (ctx_.rank < 0)
    return Errorf(sclInternalError, "init: our own entry is missing from the table");
  pids[size_t(ctx_.rank)] = -1;
  maps_ = std::move(maps);
  Result<Liveness> live = Liveness::watch(pids);
  if (!live.ok()) return live.status();
  live_ = std::move(*live);
  std::vector<uint64_t> instances;
  for (const PeerView& v : ctx_.peers) instances.push_back(v.cb_instance);
  waiter_ = std::make_unique<Waiter>(WaitPolicy::for_ranks(n, process_value(Var::kSpinNs)), cbs,
                                     std::move(instances), &live_, &aborted_);
  ctx_.waiter = waiter_.get();
  ctx_.timeout_ms = cfg_.timeout_ms.value;
  ctx_.staging = static_cast<char*>(staging_);
  ctx_.staging_bytes = uint64_t(cfg_.staging_bytes.value);
  p2p_ = P2PState(n);
  ctx_.tiles_done.assign(size_t(n), 0);
  ctx_.registrations = &registrations_;
  SCL_TRY(agree_on_settings());
  probe_cma();
  return Status::Ok();
}

// Settings that steer which algorithm a call runs must be the same on every rank, or ranks
// would run different protocols in one step. Every rank compares every peer's with its own, so
// all of them fail init, naming the variable and both values.
Status Communicator::agree_on_settings() {
  const ControlBlock* me = ctx_.me();
  for (int p = 0; p < ctx_.nranks; ++p) {
    const ControlBlock* cb = ctx_.peers[size_t(p)].cb;
    if (cb->eager_max_bytes != me->eager_max_bytes) {
      return Errorf(sclInvalidUsage,
                    "STRATACL_EAGER_MAX_BYTES is %u on rank %d but %u on rank %d; every rank "
                    "must use the same value",
                    me->eager_max_bytes, ctx_.rank, cb->eager_max_bytes, p);
    }
    if (cb->oneshot_forced_max != me->oneshot_forced_max) {
      return Errorf(sclInvalidUsage,
                    "STRATACL_ONESHOT_MAX_BYTES is %lld on rank %d but %lld on rank %d (-1: "
                    "unset); every rank must use the same value",
                    (long long)me->oneshot_forced_max, ctx_.rank, (long long)cb->oneshot_forced_max,
                    p);
    }
  }
  ctx_.eager_max_bytes = me->eager_max_bytes;
  ctx_.oneshot_forced_max = me->oneshot_forced_max;
  return Status::Ok();
}

// Reads each peer's control-block identity through process_vm_readv at the address the peer
// wrote into the block, and publishes the verdict for the peers (see CollContext::cma_usable).
void Communicator::probe_cma() {
  int err = 0;
  for (int p = 0; p < ctx_.nranks && cma_refusal_.ok(); ++p) {
    if (p == ctx_.rank) continue;
    const PeerView& v = ctx_.peers[size_t(p)];
    const uint64_t instance_offset =
        uint64_t(reinterpret_cast<char*>(&v.cb->instance) - reinterpret_cast<char*>(v.cb));
    cma_refusal_ = cma_probe(p, v.pid, v.cb->self_va + instance_offset, v.cb_instance, &err);
  }
  if (!cma_refusal_.ok()) log_info("rank %d: %s", ctx_.rank, cma_refusal_.message().c_str());
  ctx_.me()->cma.store(cma_refusal_.ok() ? kCmaOk : kCmaRefused | uint32_t(err) << 8,
                       std::memory_order_release);
}

Communicator::~Communicator() { release_shared_memory(); }

void Communicator::release_shared_memory() {
  Heap* heap = existing_heap();
  if (!heap || leak_shared_) return;  // a peer may still read them: leaking beats corruption
  if (cb_) {
    static_cast<ControlBlock*>(cb_)->instance.store(0, std::memory_order_release);
    (void)heap->release(cb_);
  }
  if (staging_) (void)heap->release(staging_);
  cb_ = staging_ = nullptr;
}

Status Communicator::check_usable() const {
  // Fast path of every call: nothing revoked, nothing aborted (set before revoked_ is written).
  if (!revoked_flag_.load(std::memory_order_acquire) && !aborted_.load()) return Status::Ok();
  std::lock_guard<std::mutex> lock(err_mu_);
  if (!revoked_.ok()) {
    return Status(revoked_.code(),
                  "the communicator was revoked by an earlier error: " + revoked_.message());
  }
  if (aborted_.load()) return Errorf(sclRemoteError, "the communicator was aborted");
  return Status::Ok();
}

Status Communicator::finish_call(Status s) {
  if (is_fatal(s)) revoke(s);
  if (!s.ok()) set_last_error(s);
  return s;
}

Status Communicator::run(const Call& call) {
  std::lock_guard<std::mutex> lock(call_mu_);
  SCL_TRY(check_usable());
  ++ctx_.call_index;
  ctx_.call_name = coll_name(call.coll);
  return finish_call(run_collective(ctx_, call));
}

Status Communicator::run_p2p(std::span<const P2POp> ops) {
  std::lock_guard<std::mutex> lock(call_mu_);
  SCL_TRY(check_usable());
  ++ctx_.call_index;
  ctx_.call_name = "send/recv";
  return finish_call(stratacl::run_p2p(ctx_, p2p_, ops));
}

void Communicator::revoke(const Status& why) {
  ControlBlock* me = static_cast<ControlBlock*>(cb_);
  {
    // The first cause wins, locally and in the control block: a later revocation (say, by
    // destroy) must not overwrite the culprit peers report.
    std::lock_guard<std::mutex> lock(err_mu_);
    if (revoked_.ok()) {
      revoked_ = why;
      revoked_flag_.store(true, std::memory_order_release);
      if (me->revoked.load(std::memory_order_relaxed) == kNotRevoked) {
        me->culprit.store(why.culprit(), std::memory_order_relaxed);
        me->revoked.store(aborted_.load() ? kAborted : kFailed, std::memory_order_seq_cst);
      }
    }
  }
  // Peers sleeping on our lines wake, re-check and see the revocation.
  wake_flag(me->arrive), wake_flag(me->progress), wake_flag(me->done);
  for (int p = 0; p < ctx_.nranks; ++p) {
    wake_flag(channels(me, ctx_.nranks)[p].posted);
    wake_flag(recv_acks(me, ctx_.nranks)[p]);
  }
}

void Communicator::abort() {
  aborted_.store(1);
  revoke(Errorf(sclRemoteError, "the communicator was aborted (sclCommAbort)"));
}

void Communicator::depart() {
  ControlBlock* me = static_cast<ControlBlock*>(cb_);
  uint32_t expected = kNotRevoked;
  me->revoked.compare_exchange_strong(expected, kDeparted);
  signal_flag(me->depart, 1);
  revoke(Errorf(sclInvalidUsage, "the communicator was destroyed"));
  // Departure barrier: wait until every peer departed or died, so none still reads our blocks.
  // It only reads peers' memory (no futex, no sleeper count): a peer that passed the barrier
  // first frees its block, and a write there would land in whatever is allocated next. A block
  // whose identity changed was freed by a departed owner.
  const Deadline deadline = Deadline::after_ms(
      aborted_.load() ? std::min<int64_t>(ctx_.timeout_ms, 2000) : ctx_.timeout_ms);
  for (int p = 0; p < ctx_.nranks; ++p) {
    if (p == ctx_.rank) continue;
    int64_t nap_ns = 1000;
    while (!waiter_->departed(p)) {
      if (live_.is_dead(p)) break;
      if (deadline.expired()) {
        leak_shared_ = true;
        return;
      }
      timespec ts{0, long(nap_ns)};
      nanosleep(&ts, nullptr);
      nap_ns = std::min<int64_t>(nap_ns * 2, 1000000);
    }
  }
}

void Communicator::destroy() {
  {
    std::unique_lock<std::mutex> lock(q_mu_);
    q_cv_.wait_for(lock, std::chrono::milliseconds(ctx_.timeout_ms), [&] { return queued_ == 0; });
    if (queued_ != 0) leak_shared_ = true;
  }
  std::lock_guard<std::mutex> lock(call_mu_);
  if (ctx_.nranks > 0) depart();
}

void Communicator::set_last_error(const Status& s) {
  std::lock_guard<std::mutex> lock(err_mu_);
  last_error_ = s.message();
}

std::string Communicator::last_error() const {
  std::lock_guard<std::mutex> lock(err_mu_);
  return last_error_;
}

void Communicator::set_async_error(const Status& s) {
  sclResult_t expected = sclSuccess;
  async_error_.compare_exchange_strong(expected, s.code());
  set_last_error(s);
}

void Communicator::enqueue_begin() {
  std::lock_guard<std::mutex> lock(q_mu_);
  ++queued_;
}

void Communicator::enqueue_end() {
  std::lock_guard<std::mutex> lock(q_mu_);
  if (--queued_ == 0) q_cv_.notify_all();
}

Result<void*> Communicator::register_range(void* buff, size_t size) {
  if (!cma_refusal_.ok()) {
    return Status(cma_refusal_.code(),
                  "peers cannot read registered buffers on this host: " + cma_refusal_.message());
  }
  return registrations_.add(buff, size);
}

bool Communicator::deregister(void* handle) { return registrations_.remove(handle); }

uint64_t Communicator::control_bytes() const { return cb_bytes_; }

}  // namespace stratacl
