#include "api/nonblocking.h"

#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "api/handles.h"

namespace stratacl::api::nonblocking {
namespace {

// A handle's state. Whoever found it holds it (a shared_ptr), queue included, so a poll from
// another thread outlives a release; the queue is the last member, so it drains first.
struct Slot {
  std::unique_ptr<sclComm> key;  // set when the handle is a key of its own
  std::mutex mu;
  bool making = true;      // the make has not finished
  bool abandoned = false;  // aborted while making: its communicator is not wanted
  Status failed;           // what the make returned, if it failed
  std::unique_ptr<Stream> queue;
};

std::mutex g_mu;
std::map<const void*, std::shared_ptr<Slot>>& slots() {
  static auto* m = new std::map<const void*, std::shared_ptr<Slot>>();
  return *m;
}

std::shared_ptr<Slot> find(sclComm_t key) {
  std::lock_guard lock(g_mu);
  auto it = key ? slots().find(key) : slots().end();
  return it == slots().end() ? nullptr : it->second;
}

}  // namespace

sclComm_t start(std::function<Status(sclComm_t key)> make) {
  auto slot = std::make_shared<Slot>();
  slot->key = std::make_unique<sclComm>();
  slot->queue = std::make_unique<Stream>();
  sclComm_t key = slot->key.get();
  register_stream(slot->queue.get());  // calls submitted to it pass the live-stream check
  {
    std::lock_guard lock(g_mu);
    slots().emplace(key, slot);
  }
  Slot* s = slot.get();  // the queue is drained before the slot goes (release)
  s->queue->enqueue([s, key, make = std::move(make)] {
    Status st = make(key);
    bool unwanted;
    {
      std::lock_guard lock(s->mu);
      s->making = false;
      s->failed = st;
      unwanted = s->abandoned;
    }
    if (std::shared_ptr<Communicator> held = unwanted ? unregister_key(key) : nullptr) {
      held->abort();
      held->destroy();
    }
    return st;
  });
  return key;
}

Stream* queue(sclComm_t key) {
  std::shared_ptr<Slot> s = find(key);
  return s ? s->queue.get() : nullptr;
}

std::optional<sclResult_t> state(sclComm_t key) {
  std::shared_ptr<Slot> s = find(key);
  if (!s) return std::nullopt;
  if (!s->queue->idle()) return sclInProgress;
  std::lock_guard lock(s->mu);
  if (!s->failed.ok()) return s->failed.code();
  return std::nullopt;
}

std::optional<Status> not_ready(sclComm_t key) {
  std::shared_ptr<Slot> s = find(key);
  if (!s) return std::nullopt;
  std::lock_guard lock(s->mu);
  if (s->making) {
    return Errorf(sclInvalidUsage,
                  "comm: %p is still being created in the background (non-blocking); poll "
                  "sclCommGetAsyncError until it is no longer sclInProgress",
                  (void*)key);
  }
  if (!s->failed.ok()) {
    return Status(s->failed.code(),
                  "comm: the non-blocking creation of this communicator "
                  "failed (destroy it): " +
                      s->failed.message());
  }
  return std::nullopt;
}

std::optional<std::shared_ptr<Communicator>> release(sclComm_t key) {
  std::shared_ptr<Slot> s;
  {
    std::lock_guard lock(g_mu);
    auto it = key ? slots().find(key) : slots().end();
    if (it == slots().end()) return std::nullopt;
    s = std::move(it->second);  // one releaser only; the key lives with `s` until we return
    slots().erase(it);
  }
  unregister_stream(s->queue.get());
  (void)s->queue->synchronize();  // the make and every queued call finish first
  Communicator* c = find_comm(key);
  return c ? unregister_comm(c) : nullptr;
}

bool abandon(sclComm_t key) {
  // Abandoned slots stay here, never freed: their queue's thread runs the make to its end.
  static auto* abandoned = new std::vector<std::shared_ptr<Slot>>();
  std::lock_guard lock(g_mu);
  auto it = key ? slots().find(key) : slots().end();
  if (it == slots().end()) return false;
  {
    std::lock_guard slot_lock(it->second->mu);
    if (!it->second->making) return false;
    it->second->abandoned = true;
  }
  unregister_stream(it->second->queue.get());
  abandoned->push_back(std::move(it->second));
  slots().erase(it);
  return true;
}

}  // namespace stratacl::api::nonblocking
