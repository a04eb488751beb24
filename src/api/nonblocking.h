// Non-blocking communicators (sclConfig_t.blocking = 0, NCCL's non-blocking mode). Each has a
// queue, a stream of its own: its init or split, its finalize and its calls on the NULL stream
// run there, in issue order, while the entry point returns sclInProgress; sclCommGetAsyncError
// reports sclInProgress until the queue is drained. A non-blocking init or split hands out its
// handle before the communicator exists: a key, bound to the communicator when it is made.
#pragma once

#include <functional>
#include <memory>
#include <optional>

#include "comm/communicator.h"
#include "core/status.h"
#include "exec/stream.h"
#include "stratacl/stratacl.h"

namespace stratacl::api::nonblocking {

// A new handle with a queue; `make` runs there, and its communicator (registered under the
// handle) or its failure is what the handle stands for.
sclComm_t start(std::function<Status(sclComm_t key)> make);
// The queue of a non-blocking handle, or nullptr for a blocking one.
Stream* queue(sclComm_t key);
// For sclCommGetAsyncError: sclInProgress while the handle's queue has work, the failure of a
// make that failed, or nothing (ask the communicator).
std::optional<sclResult_t> state(sclComm_t key);
// Why a handle has no communicator yet (its make runs or failed), or nothing.
std::optional<Status> not_ready(sclComm_t key);
// For destroy and abort of a non-blocking handle: drains its queue, unregisters the
// communicator bound to it and forgets the handle. Nothing for a blocking handle; a null
// communicator when its make failed.
std::optional<std::shared_ptr<Communicator>> release(sclComm_t key);
// For abort of a non-blocking handle whose init or split still runs (waiting for a peer that may
// never come): forgets the handle at once and leaves the make to end in the background, where
// the communicator it makes, if any, is aborted and destroyed. False where the make is done
// (release() then).
bool abandon(sclComm_t key);

}  // namespace stratacl::api::nonblocking
