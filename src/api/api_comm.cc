// C entry points: version, errors and communicator life cycle.
#include <algorithm>
#include <atomic>
#include <cstring>
#include <memory>
#include <vector>

#include "api/handles.h"
#include "api/nonblocking.h"
#include "api/premul_ops.h"
#include "bootstrap/launcher_env.h"
#include "bootstrap/root.h"
#include "comm/communicator.h"

using namespace stratacl;
using stratacl::api::report;

namespace {

// A caller's configuration, kept for a background init or split (the caller's struct may be gone
// by the time it runs).
class ConfigCopy {
 public:
  explicit ConfigCopy(const sclConfig_t* c) : given_(c != nullptr) {
    if (!c) return;
    std::memcpy(&config_, c, std::min(c->size, sizeof(config_)));  // resolved already: size is sane
    if (c->commName) name_ = c->commName;
    config_.commName = c->commName ? name_.c_str() : nullptr;
    config_.netName = nullptr;
  }
  ConfigCopy(const ConfigCopy& o) : ConfigCopy(o.get()) {}
  ConfigCopy& operator=(const ConfigCopy&) = delete;
  const sclConfig_t* get() const { return given_ ? &config_ : nullptr; }

 private:
  bool given_;
  sclConfig_t config_ = SCL_CONFIG_INITIALIZER;
  std::string name_;
};

bool non_blocking(const sclConfig_t* config) {
  return config && config->blocking != SCL_CONFIG_UNDEF_INT && config->blocking == 0;
}

sclResult_t init(sclComm_t* out, const InitRequest& req) {
  if (auto r = api::refused_in_child()) return *r;
  if (!out) return report(nullptr, Errorf(sclInvalidArgument, "comm: NULL output pointer"));
  *out = nullptr;
  if (req.nranks < 1)
    return report(nullptr, Errorf(sclInvalidArgument, "nranks: %d must be >= 1", req.nranks));
  if (req.rank < 0 || req.rank >= req.nranks) {
    return report(nullptr, Errorf(sclInvalidArgument, "rank: %d is out of range [0, %d)", req.rank,
                                  req.nranks));
  }
  if (non_blocking(req.config)) {
    // The configuration's own errors come back now; the rest from sclCommGetAsyncError.
    if (Result<CommConfig> cfg = resolve_comm_config(req.config); !cfg.ok())
      return report(nullptr, cfg.status());
    *out = api::nonblocking::start([req, kept = ConfigCopy(req.config)](sclComm_t key) {
      InitRequest r = req;
      r.config = kept.get();
      SCL_ASSIGN_OR_RETURN(std::shared_ptr<Communicator> c, Communicator::create(r));
      api::register_comm(std::move(c), key);
      return Status::Ok();
    });
    return sclInProgress;
  }
  Result<std::shared_ptr<Communicator>> c = Communicator::create(req);
  if (!c.ok()) return report(nullptr, c.status());
  *out = c->get();
  api::register_comm(std::move(*c));
  return sclSuccess;
}

// The preamble of the life-cycle entry points: not a forked child, a live communicator.
Communicator* lookup(sclComm_t comm, sclResult_t* refused) {
  if (auto r = api::refused_in_child()) {
    *refused = *r;
    return nullptr;
  }
  Communicator* c = api::find_comm(comm);
  if (!c) *refused = report(nullptr, api::not_live(comm));
  return c;
}

// Destroy and abort: the handle goes first, so no new call can find the communicator. A
// non-blocking handle's queue drains first (after an abort, its calls fail at once).
sclResult_t end(sclComm_t comm, bool abort) {
  if (auto r = api::refused_in_child()) return *r;
  if (abort) {
    if (Communicator* c = api::find_comm(comm)) c->abort();
    if (api::nonblocking::abandon(comm)) return sclSuccess;  // its init or split still waits
  }
  // A destroy waits for every call issued before it: not from a callback they wait behind.
  if (Communicator* c = abort ? nullptr : api::find_comm(comm)) {
    if (Status s = c->queued_behind_caller(); !s.ok()) return report(c, s);
  }
  std::shared_ptr<Communicator> held;
  if (std::optional<std::shared_ptr<Communicator>> nb = api::nonblocking::release(comm)) {
    held = std::move(*nb);
    if (!held) return sclSuccess;  // its init or split failed: nothing else to free
  } else {
    Communicator* c = api::find_comm(comm);
    held = c ? api::unregister_comm(c) : nullptr;
    if (!held) return report(nullptr, api::not_live(comm));  // or another thread ended it first
  }
  if (abort) held->abort();
  held->destroy();
  api::forget_ops(held.get());
  return sclSuccess;
}

}  // namespace

extern "C" {

sclResult_t sclGetVersion(int* version) {
  if (!version) return report(nullptr, Errorf(sclInvalidArgument, "version: NULL pointer"));
  *version = SCL_VERSION_CODE;
  return sclSuccess;
}

const char* sclGetErrorString(sclResult_t r) {
  switch (r) {
    case sclSuccess:
      return "no error";
    case sclUnhandledSystemError:
      return "unhandled system error";
    case sclSystemError:
      return "system error";
    case sclInternalError:
      return "internal error";
    case sclInvalidArgument:
      return "invalid argument";
    case sclInvalidUsage:
      return "invalid usage";
    case sclRemoteError:
      return "remote process exited or there was a network error";
    case sclInProgress:
      return "operation in progress";
    case sclTimeout:
      return "timeout";
    default:
      return "unknown result code";
  }
}

const char* sclGetLastError(sclComm_t comm) {
  Communicator* c = api::find_comm(comm);
  if (!c) return api::thread_error();
  // The string lives in thread-local storage so the pointer stays valid after the call.
  thread_local std::string text;
  text = c->errors().last();
  return text.c_str();
}

sclResult_t sclGetUniqueId(sclUniqueId* uniqueId) {
  if (auto r = api::refused_in_child()) return *r;
  if (!uniqueId) return report(nullptr, Errorf(sclInvalidArgument, "uniqueId: NULL pointer"));
  Result<sclUniqueId> id = bootstrap::serve_new_unique_id(process_value(Var::kTimeoutMs));
  if (!id.ok()) return report(nullptr, id.status());
  *uniqueId = *id;
  return sclSuccess;
}

sclResult_t sclCommInitRankConfig(sclComm_t* comm, int nranks, sclUniqueId commId, int rank,
                                  sclConfig_t* config) {
  if (nranks >= 1 && (rank < 0 || rank >= nranks)) {
    return report(nullptr,
                  Errorf(sclInvalidArgument, "rank: %d is out of range [0, %d)", rank, nranks));
  }
  Result<bootstrap::IdData> id = bootstrap::decode_id(commId);
  if (!id.ok()) return report(nullptr, id.status());
  InitRequest req;
  req.nranks = nranks;
  req.rank = rank;
  req.id = *id;
  req.config = config;
  return init(comm, req);
}

sclResult_t sclCommInitRankScalable(sclComm_t* newcomm, int nranks, int myrank, int nId,
                                    sclUniqueId* commIds, sclConfig_t* config) {
  if (nId < 1 || (nranks >= 1 && nId > nranks)) {
    return report(nullptr,
                  Errorf(sclInvalidArgument, "nId: %d (must be in [1, nranks = %d])", nId, nranks));
  }
  if (!commIds) return report(nullptr, Errorf(sclInvalidArgument, "commIds: NULL array"));
  return sclCommInitRankConfig(newcomm, nranks, commIds[0], myrank, config);
}

sclResult_t sclCommInitRank(sclComm_t* comm, int nranks, sclUniqueId commId, int rank) {
  return sclCommInitRankConfig(comm, nranks, commId, rank, nullptr);
}

sclResult_t sclCommInitAll(sclComm_t* comm, int ndev, const int* devlist) {
  if (auto r = api::refused_in_child()) return *r;
  if (!comm) return report(nullptr, Errorf(sclInvalidArgument, "comm: NULL output array"));
  if (ndev < 1) return report(nullptr, Errorf(sclInvalidArgument, "ndev: %d must be >= 1", ndev));
  if (ndev > 1) {
    return report(nullptr,
                  Errorf(sclInvalidUsage,
                         "ndev: %d ranks in one process; a StrataCL process holds one rank (its "
                         "heap, liveness and fork guard are the rank's): start one process per "
                         "rank (stratarun -n %d) and use sclCommInitRank",
                         ndev, ndev));
  }
  if (devlist && devlist[0] != 0) {
    return report(nullptr, Errorf(sclInvalidArgument,
                                  "devlist[0]: %d (a CPU rank has one device, 0)", devlist[0]));
  }
  sclUniqueId id;
  if (const sclResult_t r = sclGetUniqueId(&id); r != sclSuccess) return r;
  return sclCommInitRank(comm, 1, id, 0);
}

sclResult_t sclCommInitFromEnv(sclComm_t* comm) {
  if (auto r = api::refused_in_child()) return *r;
  // Before the launch's next generation is taken: a refused call must leave it for the next.
  if (!comm) return report(nullptr, Errorf(sclInvalidArgument, "comm: NULL output pointer"));
  Result<bootstrap::LaunchEnv> env = bootstrap::next_env_launch();
  if (!env.ok()) return report(nullptr, env.status());
  InitRequest req;
  req.nranks = env->nranks;
  req.rank = env->rank;
  req.id = env->id;
  req.serve_root = env->serve_root;
  req.root_fd = env->root_fd;
  return init(comm, req);
}

sclResult_t sclCommSplit(sclComm_t comm, int color, int key, sclComm_t* newcomm,
                         sclConfig_t* config) {
  sclResult_t refused;
  Communicator* c = lookup(comm, &refused);
  if (!c) return refused;
  Status bad;
  if (!newcomm) {
    bad = Errorf(sclInvalidArgument, "newcomm: NULL output pointer");
  } else if (color < 0 && color != SCL_SPLIT_NOCOLOR) {
    bad = Errorf(sclInvalidArgument, "color: %d (use >= 0 or SCL_SPLIT_NOCOLOR)", color);
  }
  if (newcomm) *newcomm = nullptr;
  if (!bad.ok()) {
    // Still in the split's step, failing it: the other ranks fail now, not at their deadline.
    (void)c->split(c->issue(), SCL_SPLIT_NOCOLOR, key, nullptr, bad);
    return report(c, bad);
  }
  const bool nb = config ? non_blocking(config) : !c->config().blocking;
  if (nb && color != SCL_SPLIT_NOCOLOR) {
    if (config) {
      if (Result<CommConfig> cfg = resolve_comm_config(config); !cfg.ok()) {
        (void)c->split(c->issue(), SCL_SPLIT_NOCOLOR, key, nullptr, cfg.status());  // as above
        return report(c, cfg.status());
      }
    }
    *newcomm = api::nonblocking::start([parent = api::share(c), ticket = c->issue(), color, key,
                                        kept = ConfigCopy(config)](sclComm_t handle) {
      SCL_ASSIGN_OR_RETURN(std::shared_ptr<Communicator> child,
                           parent->split(ticket, color, key, kept.get()));
      api::register_comm(std::move(child), handle);
      return Status::Ok();
    });
    return sclInProgress;
  }
  // Without a colour there is no handle to poll: the split blocks (a NULL *newcomm is its whole
  // result), unless the parent is non-blocking, whose queue takes it.
  if (Stream* queue = api::nonblocking::queue(comm); nb && queue) {
    queue->enqueue([parent = api::share(c), ticket = c->issue(), key]() {
      Result<std::shared_ptr<Communicator>> child = parent->split(ticket, -1, key, nullptr);
      if (!child.ok()) parent->errors().set_async(child.status());
      return child.status();
    });
    return sclInProgress;
  }
  Result<std::shared_ptr<Communicator>> child = c->split(c->issue(), color, key, config);
  if (!child.ok()) return report(c, child.status());
  if (*child) {
    *newcomm = child->get();
    api::register_comm(std::move(*child));
  }
  return sclSuccess;
}

sclResult_t sclCommRevoke(sclComm_t comm, int revokeFlags) {
  sclResult_t refused;
  Communicator* c = lookup(comm, &refused);
  if (!c) return refused;
  if (revokeFlags != SCL_REVOKE_DEFAULT) {
    return report(
        c, Errorf(sclInvalidArgument, "revokeFlags: %d (must be SCL_REVOKE_DEFAULT)", revokeFlags));
  }
  c->revoke_by_user();
  return sclSuccess;
}

sclResult_t sclCommShrink(sclComm_t comm, int* excludeRanksList, int excludeRanksCount,
                          sclComm_t* newcomm, sclConfig_t* config, int shrinkFlags) {
  sclResult_t refused;
  Communicator* c = lookup(comm, &refused);
  if (!c) return refused;
  if (!newcomm) return report(c, Errorf(sclInvalidArgument, "newcomm: NULL output pointer"));
  *newcomm = nullptr;
  if (shrinkFlags != SCL_SHRINK_DEFAULT && shrinkFlags != SCL_SHRINK_ABORT) {
    return report(
        c, Errorf(sclInvalidArgument,
                  "shrinkFlags: %d (use SCL_SHRINK_DEFAULT or SCL_SHRINK_ABORT)", shrinkFlags));
  }
  const int n = c->nranks();
  if (excludeRanksCount < 0 || excludeRanksCount >= n) {
    return report(c, Errorf(sclInvalidArgument,
                            "excludeRanksCount: %d (must be in [0, %d): someone must remain)",
                            excludeRanksCount, n));
  }
  if (excludeRanksCount > 0 && !excludeRanksList)
    return report(c, Errorf(sclInvalidArgument, "excludeRanksList: NULL with a count of %d",
                            excludeRanksCount));
  std::vector<bool> seen(size_t(n), false);
  for (int i = 0; i < excludeRanksCount; ++i) {
    const int r = excludeRanksList[i];
    if (r < 0 || r >= n) {
      return report(c, Errorf(sclInvalidArgument,
                              "excludeRanksList[%d]: rank %d is out of range [0, %d)", i, r, n));
    }
    if (r == c->rank()) {
      return report(c, Errorf(sclInvalidArgument,
                              "excludeRanksList[%d]: this rank (%d); excluded ranks do not call "
                              "sclCommShrink",
                              i, r));
    }
    if (seen[size_t(r)]) {
      return report(
          c, Errorf(sclInvalidArgument, "excludeRanksList[%d]: rank %d is listed twice", i, r));
    }
    seen[size_t(r)] = true;
  }
  Result<std::shared_ptr<Communicator>> child =
      c->shrink(c->issue(), std::span<const int>(excludeRanksList, size_t(excludeRanksCount)),
                config, shrinkFlags == SCL_SHRINK_ABORT);
  if (!child.ok()) return report(c, child.status());
  *newcomm = child->get();
  api::register_comm(std::move(*child));
  return sclSuccess;
}

sclResult_t sclCommFinalize(sclComm_t comm) {
  sclResult_t refused;
  Communicator* c = lookup(comm, &refused);
  if (!c) return refused;
  if (Stream* queue = api::nonblocking::queue(comm)) {
    queue->enqueue([held = api::share(c), ticket = c->issue()] {
      Status s = held->finalize(ticket);
      if (!s.ok()) held->errors().set_async(s);
      return s;
    });
    return sclInProgress;
  }
  return report(c, c->finalize(c->issue()));
}

sclResult_t sclCommDestroy(sclComm_t comm) { return end(comm, false); }

sclResult_t sclCommAbort(sclComm_t comm) { return end(comm, true); }

sclResult_t sclCommGetAsyncError(sclComm_t comm, sclResult_t* asyncError) {
  if (auto r = api::refused_in_child()) return *r;
  if (!asyncError) return report(nullptr, Errorf(sclInvalidArgument, "asyncError: NULL pointer"));
  if (std::optional<sclResult_t> s = api::nonblocking::state(comm)) {
    *asyncError = *s;
    return sclSuccess;
  }
  sclResult_t refused;
  Communicator* c = lookup(comm, &refused);
  if (!c) return refused;
  *asyncError = c->errors().async();
  return sclSuccess;
}

sclResult_t sclCommCount(const sclComm_t comm, int* count) {
  sclResult_t refused;
  Communicator* c = lookup(comm, &refused);
  if (!c) return refused;
  if (!count) return report(c, Errorf(sclInvalidArgument, "count: NULL pointer"));
  *count = c->nranks();
  return sclSuccess;
}

sclResult_t sclCommUserRank(const sclComm_t comm, int* rank) {
  sclResult_t refused;
  Communicator* c = lookup(comm, &refused);
  if (!c) return refused;
  if (!rank) return report(c, Errorf(sclInvalidArgument, "rank: NULL pointer"));
  *rank = c->rank();
  return sclSuccess;
}

}  // extern "C"
