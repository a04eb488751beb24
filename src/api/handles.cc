#include "api/handles.h"

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
thread_local std::string t_error;
}  // namespace

void register_comm(Communicator* c) {
  std::unique_lock lock(g_mu);
  live().insert(static_cast<sclComm*>(c));
}
void unregister_comm(Communicator* c) {
  std::unique_lock lock(g_mu);
  live().erase(static_cast<sclComm*>(c));
}
Communicator* find_comm(sclComm_t c) {
  std::shared_lock lock(g_mu);
  return (c && live().count(c)) ? static_cast<Communicator*>(c) : nullptr;
}
void register_stream(Stream* s) {
  std::unique_lock lock(g_mu);
  live().insert(static_cast<sclStream*>(s));
}
void unregister_stream(Stream* s) {
  std::unique_lock lock(g_mu);
  live().erase(static_cast<sclStream*>(s));
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
