#include "api/handles.h"

#include <atomic>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>
#include <unordered_set>

#include "api/nonblocking.h"
#include "fabric/fork_guard.h"

namespace stratacl::api {
namespace {
std::shared_mutex g_mu;
// Handle to communicator, and back (a key of a non-blocking init differs from the object).
std::unordered_map<const void*, std::shared_ptr<Communicator>>& comms() {
  static auto* m = new std::unordered_map<const void*, std::shared_ptr<Communicator>>();
  return *m;
}
std::unordered_map<const Communicator*, sclComm_t>& keys() {
  static auto* m = new std::unordered_map<const Communicator*, sclComm_t>();
  return *m;
}
std::unordered_set<const void*>& streams() {
  static auto* s = new std::unordered_set<const void*>();
  return *s;
}
// Communicators unregistered so far (written under g_mu): a thread's last lookup stays valid
// while it holds, so a call needs no lock to validate its handle.
std::atomic<uint64_t> g_unregistered{0};
thread_local std::shared_ptr<Communicator> t_last_comm;
thread_local sclComm_t t_last_key = nullptr;
thread_local uint64_t t_last_comm_at = 0;
thread_local std::string t_error;
}  // namespace

void register_comm(std::shared_ptr<Communicator> c, sclComm_t key) {
  std::unique_lock lock(g_mu);
  if (!key) key = c.get();
  keys().emplace(c.get(), key);
  comms().emplace(key, std::move(c));
}

std::shared_ptr<Communicator> unregister_comm(Communicator* c) {
  std::unique_lock lock(g_mu);
  auto k = keys().find(c);
  if (k == keys().end()) return nullptr;
  auto it = comms().find(k->second);
  std::shared_ptr<Communicator> held = std::move(it->second);
  comms().erase(it);
  keys().erase(k);
  g_unregistered.fetch_add(1, std::memory_order_release);
  return held;
}

std::shared_ptr<Communicator> unregister_key(sclComm_t key) {
  Communicator* c = nullptr;
  {
    std::shared_lock lock(g_mu);
    auto it = comms().find(key);
    if (it == comms().end()) return nullptr;
    c = it->second.get();
  }
  return unregister_comm(c);
}

Communicator* find_comm(sclComm_t c) {
  if (c && t_last_comm && t_last_key == c &&
      t_last_comm_at == g_unregistered.load(std::memory_order_acquire)) {
    return t_last_comm.get();
  }
  std::shared_lock lock(g_mu);
  auto it = c ? comms().find(c) : comms().end();
  if (it == comms().end()) return nullptr;
  t_last_comm = it->second;
  t_last_key = c;
  t_last_comm_at = g_unregistered.load(std::memory_order_relaxed);
  return t_last_comm.get();
}

sclComm_t handle_of(const Communicator* c) {
  std::shared_lock lock(g_mu);
  auto k = keys().find(c);
  return k == keys().end() ? nullptr : k->second;
}

std::shared_ptr<Communicator> share(Communicator* c) {
  if (t_last_comm.get() == c) return t_last_comm;
  std::shared_lock lock(g_mu);
  auto k = keys().find(c);
  return k == keys().end() ? nullptr : comms().at(k->second);
}

Status not_live(sclComm_t comm) {
  if (std::optional<Status> why = nonblocking::not_ready(comm)) return *why;
  return Errorf(sclInvalidArgument, "comm: %p is NULL or not a live communicator", (void*)comm);
}

void register_stream(Stream* s) {
  std::unique_lock lock(g_mu);
  streams().insert(static_cast<sclStream*>(s));
}
void unregister_stream(Stream* s) {
  std::unique_lock lock(g_mu);
  streams().erase(static_cast<sclStream*>(s));
}
Stream* find_stream(sclStream_t s) {
  std::shared_lock lock(g_mu);
  return (s && streams().count(s)) ? static_cast<Stream*>(s) : nullptr;
}

void set_thread_error(const std::string& msg) { t_error = msg; }
const char* thread_error() { return t_error.c_str(); }

sclResult_t report(Communicator* c, const Status& s) {
  if (!s.ok()) {
    set_thread_error(s.message());
    if (c) c->errors().set_last(s);
  }
  return s.code();
}

std::optional<sclResult_t> refused_in_child() {
  if (!in_forked_child()) return std::nullopt;
  return report(nullptr, fork_refusal());
}

}  // namespace stratacl::api
