// C entry points: version, errors and communicator life cycle.
#include <atomic>
#include <memory>
#include <vector>

#include "api/handles.h"
#include "bootstrap/launcher_env.h"
#include "bootstrap/root.h"
#include "comm/communicator.h"

using namespace stratacl;
using stratacl::api::report;

namespace {

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
  Result<std::shared_ptr<Communicator>> c = Communicator::create(req);
  if (!c.ok()) return report(nullptr, c.status());
  *out = c->get();
  api::register_comm(std::move(*c));
  return sclSuccess;
}

Status not_live(sclComm_t comm) {
  return Errorf(sclInvalidArgument, "comm: %p is NULL or not a live communicator", (void*)comm);
}

// The preamble of the life-cycle entry points: not a forked child, a live communicator.
Communicator* lookup(sclComm_t comm, sclResult_t* refused) {
  if (auto r = api::refused_in_child()) {
    *refused = *r;
    return nullptr;
  }
  Communicator* c = api::find_comm(comm);
  if (!c) *refused = report(nullptr, not_live(comm));
  return c;
}

// Destroy and abort: the handle goes first, so no new call can find the communicator.
sclResult_t end(sclComm_t comm, bool abort) {
  sclResult_t refused;
  Communicator* c = lookup(comm, &refused);
  if (!c) return refused;
  std::shared_ptr<Communicator> held = api::unregister_comm(c);
  if (!held) return report(nullptr, not_live(comm));  // another thread ended it first
  if (abort) held->abort();
  held->destroy();
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

sclResult_t sclCommInitRank(sclComm_t* comm, int nranks, sclUniqueId commId, int rank) {
  return sclCommInitRankConfig(comm, nranks, commId, rank, nullptr);
}

sclResult_t sclCommInitFromEnv(sclComm_t* comm) {
  if (auto r = api::refused_in_child()) return *r;
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
  if (!newcomm) return report(c, Errorf(sclInvalidArgument, "newcomm: NULL output pointer"));
  *newcomm = nullptr;
  if (color < 0 && color != SCL_SPLIT_NOCOLOR) {
    return report(c,
                  Errorf(sclInvalidArgument, "color: %d (use >= 0 or SCL_SPLIT_NOCOLOR)", color));
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

sclResult_t sclCommDestroy(sclComm_t comm) { return end(comm, false); }

sclResult_t sclCommAbort(sclComm_t comm) { return end(comm, true); }

sclResult_t sclCommGetAsyncError(sclComm_t comm, sclResult_t* asyncError) {
  sclResult_t refused;
  Communicator* c = lookup(comm, &refused);
  if (!c) return refused;
  if (!asyncError) return report(c, Errorf(sclInvalidArgument, "asyncError: NULL pointer"));
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
