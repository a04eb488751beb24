// Fork safety. A process that forks after StrataCL made its heap (a PyTorch DataLoader worker
// does) must not be able to corrupt the job: its copy of the allocator would hand out the blocks
// the parent hands out next, in a heap both of them share, and its calls would run as the
// parent's rank.
//  - Every shared mapping (our heaps, our peers' heaps) is MADV_DONTFORK: a child inherits no
//    shared view of anything.
//  - In its place the child gets a private, copy-on-write view of the data heap at the same
//    address (an atfork handler maps it), so buffers made before the fork stay readable (and
//    writable, privately) in the child, as ordinary memory would be.
//  - The library refuses every call in the child with sclInvalidUsage (refusal()); the parent's
//    job continues untouched.
#pragma once

#include "core/status.h"

namespace stratacl {

class Heap;

// Installs the atfork handler for the data heap (once; the heap calls it when it is made).
void install_fork_guard(const Heap* data_heap);

// True in a process forked after the heap was made. One load: it sits on every call's path.
bool in_forked_child();

// The error every entry point returns in such a child, saying why and what to do instead.
Status fork_refusal();

}  // namespace stratacl
