#include "backend/exit_drain.h"

#include <unistd.h>

#include <condition_variable>
#include <map>
#include <mutex>
#include <vector>

namespace stratacl_torch::exit_drain {
namespace {

// Never destroyed: atexit handlers and static destructors run in no order we control.
struct Registry {
  std::mutex mu;
  std::condition_variable cv;
  std::map<sclStream_t, sclComm_t> groups;  // stream -> communicator
  sclStream_t draining = nullptr;           // the stream drain() waits for, outside the lock
  pid_t pid = 0;                            // the process that added them
  bool revoked = false;                     // revoke_all() ran
};
Registry& registry() {
  static auto* r = new Registry();
  return *r;
}

// A daemon thread may go on queueing calls while the program exits: after this many passes
// that each found a stream busy, the exit goes on without waiting further.
constexpr int kMaxPasses = 8;

}  // namespace

void add(sclStream_t stream, sclComm_t comm) {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  r.groups[stream] = comm;
  r.pid = getpid();
}

void remove(sclStream_t stream) {
  Registry& r = registry();
  std::unique_lock lock(r.mu);
  r.cv.wait(lock, [&] { return r.draining != stream; });
  r.groups.erase(stream);
}

void revoke_all() {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  if (r.pid != getpid()) return;
  r.revoked = true;
  for (const auto& [stream, comm] : r.groups) (void)sclCommRevoke(comm, SCL_REVOKE_DEFAULT);
}

void drain() {
  Registry& r = registry();
  std::unique_lock lock(r.mu);
  if (r.pid != getpid()) return;
  // A pass waits for each stream in turn; a completion may queue more calls (a future's
  // callback), and another thread may make or destroy groups meanwhile, so passes go on until
  // one finds every stream idle.
  for (int pass = 0; pass < kMaxPasses; ++pass) {
    std::vector<sclStream_t> streams;
    for (const auto& [stream, comm] : r.groups) streams.push_back(stream);
    bool busy = false;
    for (sclStream_t stream : streams) {
      if (r.groups.count(stream) == 0) continue;  // destroyed while an earlier one was waited for
      r.draining = stream;
      lock.unlock();
      if (sclStreamQuery(stream) == sclInProgress) {
        busy = true;
        // Its errors belong to the Works that completed with them, not to the exit.
        (void)sclStreamSynchronize(stream);
      }
      lock.lock();
      r.draining = nullptr;
      r.cv.notify_all();
    }
    if (!busy) return;
  }
}

bool revoked_at_exit() {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  return r.revoked;
}

}  // namespace stratacl_torch::exit_drain
