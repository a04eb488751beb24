#include "api/handles.h"

#include <atomic>
#include <mutex>
#include <shared_mutex>
#include <unordered_set>

namespace stratacl::api {
namespace {
std::shared_mutex g_mu;
std::unordered_set<const void*>& live() {
  static auto* s = new std::unordered_set<const void*>();
  return *s;
}
// Handles unregistered so far (written under g_mu): a thread's last successful lookup of a
// communicator stays valid while it holds, so a call needs no lock to validate its handle.
std::atomic<uint64_t> g_unregistered{0};
thread_local const void* t_last_comm = nullptr;
thread_local uint64_t t_last_comm_at = 0;
thread_local std::string t_error;
}  // namespace

void register_comm(Communicator* c) {
  std::unique_lock lock(g_mu);
  live().insert(static_cast<sclComm*>(c));
}
void unregister_comm(Communicator* c) {
  std::unique_lock lock(g_mu);
  live().erase(static_cast<sclComm*>(c));
  g_unregistered.fetch_add(1, std::memory_order_release);
}
Communicator* find_comm(sclComm_t c) {
  if (c && c == t_last_comm && t_last_comm_at == g_unregistered.load(std::memory_order_acquire))
    return static_cast<Communicator*>(c);
  std::shared_lock lock(g_mu);
  if (!c || !live().count(c)) return nullptr;
  t_last_comm = c;
  t_last_comm_at = g_unregistered.load(std::memory_order_relaxed);
  return static_cast<Communicator*>(c);
}
void register_stream(Stream* s) {
  std::unique_lock lock(g_mu);
  live().insert(static_cast<sclStream*>(s));
}
void unregister_stream(Stream* s) {
  std::unique_lock lock(g_mu);
  live().erase(static_cast<sclStream*>(s));
  g_unregistered.fetch_add(1, std::memory_order_release);
}
Stream* find_stream(sclStream_t s) {
  std::shared_lock lock(g_mu);
  return (s && live().count(s)) ? static_cast<Stream*>(s) : nullptr;
}

void set_thread_error(const std::string& msg) { t_error = msg; }
const char* thread_error() { return t_error.c_str(); }

sclResult_t report(Communicator* c, const Status& s) {
  if (!s.ok()) {
    set_thread_error(s.message());
    if (c) c->set_last_error(s);
  }
  return s.code();
}

}  // namespace stratacl::api
