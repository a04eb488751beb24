#include "backend/exit_drain.h"

#include <unistd.h>

#include <condition_variable>
#include <mutex>
#include <set>

namespace stratacl_torch::exit_drain {
namespace {

std::mutex g_mu;
std::condition_variable g_cv;
// Never destroyed: atexit handlers and static destructors run in no order we control.
std::set<sclStream_t>& streams() {
  static auto* s = new std::set<sclStream_t>();
  return *s;
}
sclStream_t g_draining = nullptr;  // the stream drain() waits for, outside the lock
pid_t g_pid = 0;                   // the process that added them

}  // namespace

void add(sclStream_t stream) {
  std::lock_guard lock(g_mu);
  streams().insert(stream);
  g_pid = getpid();
}

void remove(sclStream_t stream) {
  std::unique_lock lock(g_mu);
  g_cv.wait(lock, [&] { return g_draining != stream; });
  streams().erase(stream);
}

void drain() {
  std::unique_lock lock(g_mu);
  if (g_pid != getpid()) return;
  std::set<sclStream_t> waited;
  for (;;) {
    // A group may be made or destroyed by another thread meanwhile: look again after each wait.
    auto next = streams().begin();
    while (next != streams().end() && waited.count(*next)) ++next;
    if (next == streams().end()) return;
    g_draining = *next;
    waited.insert(g_draining);
    lock.unlock();
    // Its errors belong to the Works that completed with them, not to the exit.
    (void)sclStreamSynchronize(g_draining);
    lock.lock();
    g_draining = nullptr;
    g_cv.notify_all();
  }
}

}  // namespace stratacl_torch::exit_drain
