// Live-handle registries: a destroyed or forged sclComm_t / sclStream_t is an invalid argument,
// never a use-after-free inside the library. Communicators are held by shared_ptr: the registry
// holds one reference, every queued stream call another, and each thread its last lookup, so a
// communicator destroyed or aborted from another thread outlives every call that still uses it.
#pragma once

#include <memory>
#include <optional>

#include "comm/communicator.h"
#include "exec/stream.h"

namespace stratacl::api {

// A communicator's handle is the Communicator itself, or, for a non-blocking init or split
// (api/nonblocking.h), a key handed out before the communicator exists and bound to it after.
void register_comm(std::shared_ptr<Communicator> c, sclComm_t key = nullptr);
// Removes the handle (later lookups fail) and returns the registry's reference.
std::shared_ptr<Communicator> unregister_comm(Communicator* c);
// The same by the handle it is registered under (null where none is), without find_comm()'s
// per-thread cache, which would hold the communicator on the calling thread.
std::shared_ptr<Communicator> unregister_key(sclComm_t key);
// The communicator behind a handle, or nullptr when it is not live. The pointer stays valid at
// least until this thread's next lookup: a thread-local reference holds the object.
Communicator* find_comm(sclComm_t c);
// The handle of a live communicator (nullptr when none).
sclComm_t handle_of(const Communicator* c);
// A reference that may outlive the calling entry point (a queued stream call).
std::shared_ptr<Communicator> share(Communicator* c);
// Why `comm` is not a live communicator, for entry points that found none: a NULL or stale
// handle, or a non-blocking init that is still running or failed.
Status not_live(sclComm_t comm);

void register_stream(Stream* s);
void unregister_stream(Stream* s);
Stream* find_stream(sclStream_t s);

// The error text of this thread's last failed call (sclGetLastError(NULL)).
void set_thread_error(const std::string& msg);
const char* thread_error();

// Records an error for sclGetLastError and returns its code.
sclResult_t report(Communicator* c, const Status& s);

// In a process forked after StrataCL started, every entry point refuses (fabric/fork_guard.h):
// `if (auto r = refused_in_child()) return *r;`.
std::optional<sclResult_t> refused_in_child();

}  // namespace stratacl::api
