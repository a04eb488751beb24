// Every live group's stream, waited for at interpreter exit.
//
// A Work completes on its group's stream thread, and may drop the last reference to a tensor
// whose Python object is gone; torch then takes the GIL on that thread to free the object. Once
// the interpreter has begun to finalize, CPython ends any other thread that takes the GIL
// (pthread_exit), and a thread ended inside a destructor aborts the process ("terminate called
// without an active exception"). stratacl/torch.py registers drain() with atexit, which runs
// while the interpreter is still whole: it waits, without the GIL, until every live group's
// stream has finished what was queued on it, so nothing of ours completes during finalization.
#pragma once

#include "stratacl/stratacl.h"

namespace stratacl_torch::exit_drain {

// A group's stream, from its creation...
void add(sclStream_t stream);
// ...until just before it is destroyed. Waits while drain() is waiting for this stream.
void remove(sclStream_t stream);
// Waits for each stream added and not removed. The caller has released the GIL. In a process
// forked since the streams were added it does nothing: their threads are not in it.
void drain();

}  // namespace stratacl_torch::exit_drain
