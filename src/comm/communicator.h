// A communicator: the ranks of one job on this host, their mapped heaps and control blocks, and
// the state of this rank's calls. It owns the CollContext the algorithms run on.
#pragma once

#include <atomic>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

#include "bootstrap/unique_id.h"
#include "bootstrap/wire.h"
#include "coll/call.h"
#include "coll/context.h"
#include "coll/p2p.h"
#include "core/config.h"
#include "core/status.h"
#include "fabric/peer_heaps.h"
#include "fabric/registration_cache.h"
#include "sync/liveness.h"
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
  static Result<std::unique_ptr<Communicator>> create(const InitRequest& req);
  ~Communicator();

  int rank() const { return ctx_.rank; }
  int nranks() const { return ctx_.nranks; }
  const CommConfig& config() const { return cfg_; }

  // Runs one collective or a batch of point-to-point ops, blocking. Serialised per communicator.
  Status run(const Call& call);
  Status run_p2p(std::span<const P2POp> ops);
  Result<std::unique_ptr<Communicator>> split(int color, int key, const sclConfig_t* config);

  // Tears down after a departure barrier with the peers (bounded by the timeout), so no peer can
  // still be reading our control block when its memory is reused.
  void destroy();
  // Revokes the communicator: every peer's pending and later calls fail with sclRemoteError.
  void abort();

  // Errors: the sticky revocation status, the last error text, async (stream) errors.
  void set_last_error(const Status& s);
  std::string last_error() const;
  void set_async_error(const Status& s);
  sclResult_t async_error() const { return async_error_.load(); }

  // Stream bookkeeping: destroy waits until queued work on this communicator has drained.
  void enqueue_begin();
  void enqueue_end();

  // sclCommRegister: foreign ranges peers then read with process_vm_readv. Fails when this rank
  // cannot read its peers that way (the probe at init says why).
  Result<void*> register_range(void* buff, size_t size);
  bool deregister(void* handle);

  uint64_t control_bytes() const;

 private:
  Communicator() = default;
  Status init_from_table(const std::vector<bootstrap::RankInfo>& table,
                         std::vector<PeerHeapRef> maps);
  void probe_cma();
  Status agree_on_settings();
  Status allocate_blocks(int nranks);
  Status check_usable() const;
  Status finish_call(Status s);
  void revoke(const Status& why);
  void depart();
  void release_shared_memory();

  CommConfig cfg_;
  CollContext ctx_;
  std::vector<PeerHeapRef> maps_;
  std::vector<uint64_t> heap_nonces_;
  Liveness live_;
  std::unique_ptr<Waiter> waiter_;
  P2PState p2p_;
  void* cb_ = nullptr;       // our control block, in our heap
  void* staging_ = nullptr;  // our staging area, in our heap (touched only for foreign buffers)
  uint64_t cb_bytes_ = 0;
  bool leak_shared_ = false;  // set when a peer may still read our blocks after destroy

  std::mutex call_mu_;
  std::atomic<uint32_t> aborted_{0};
  mutable std::mutex err_mu_;
  Status revoked_;
  std::atomic<bool> revoked_flag_{false};  // revoked_ is set (read without the mutex)
  std::string last_error_;
  std::atomic<sclResult_t> async_error_{sclSuccess};

  std::mutex q_mu_;
  std::condition_variable q_cv_;
  int queued_ = 0;

  RegistrationCache registrations_;
  Status cma_refusal_;  // why this rank cannot read its peers with process_vm_readv
};

}  // namespace stratacl
