// The rendezvous root: collects one hello from every rank and answers each with the table of
// all of them. It runs on its own thread, drops connections that lack the job secret or stall,
// and closes its listening socket when done, so no port stays open after init.
#pragma once

#include <cstdint>
#include <thread>

#include "bootstrap/unique_id.h"
#include "core/status.h"
#include "core/unique_fd.h"

namespace stratacl::bootstrap {

// Starts serving one rendezvous on `listener` (already listening) in a thread that ends when
// the table is sent, the rendezvous fails, or `timeout_ms` passes. A rank that serves its own
// job's root joins it before init returns, so no thread outlives init; sclGetUniqueId detaches.
[[nodiscard]] std::jthread start_root(UniqueFd listener, const Secret& secret, int64_t timeout_ms);

// What sclGetUniqueId does: a new job secret, and a root for it serving from this process on
// STRATACL_BOOTSTRAP_ADDR (any port), loopback by default: ranks on other hosts need a routable
// address. The root stops once every rank has joined, or after `timeout_ms`.
Result<sclUniqueId> serve_new_unique_id(int64_t timeout_ms);

// Serves synchronously (what the thread runs). Exposed for tests.
void serve_root(UniqueFd listener, const Secret& secret, int64_t timeout_ms);

}  // namespace stratacl::bootstrap
