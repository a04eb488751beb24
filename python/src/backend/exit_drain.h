// Every live group's stream, waited for at interpreter exit.
//
// A Work completes on its group's stream thread, and may drop the last reference to a tensor
// whose Python object is gone; torch then takes the GIL on that thread to free the object. Once
// the interpreter has begun to finalize, CPython ends any other thread that takes the GIL
// (pthread_exit), and a thread ended inside a destructor aborts the process ("terminate called
// without an active exception"). stratacl/torch.py registers a handler with atexit, which runs
// while the interpreter is still whole (_torch.drain_at_exit): it waits, without the GIL, until
// every live group's stream has finished what was queued on it, so nothing of ours completes
// during finalization.
#pragma once

#include "stratacl/stratacl.h"

namespace stratacl_torch::exit_drain {

// A group's stream and communicator, from the group's creation...
void add(sclStream_t stream, sclComm_t comm);
// ...until just before they are destroyed. Waits while drain() is waiting for this stream.
void remove(sclStream_t stream);
// When the program ends on an uncaught exception, before anything else: revokes every group's
// communicator, so that their pending and later calls fail at once, on every rank, instead of
// waiting for peers that may be waiting for this rank elsewhere.
void revoke_all();
// Waits until every stream added and not removed is idle. The caller has released the GIL.
// Both do nothing in a process forked since the streams were added: their threads are not in it.
void drain();
// Whether revoke_all() ran: a group destroyed after it aborts its communicator rather than
// destroying it, since a destroy waits (up to the timeout) for every peer to destroy theirs.
bool revoked_at_exit();

}  // namespace stratacl_torch::exit_drain
