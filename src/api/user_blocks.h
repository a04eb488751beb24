// The blocks sclMemAlloc handed out and sclMemFree has not taken back. The library's own heap
// blocks (control blocks, staging areas, scratch) share the heap with them, so the heap alone
// cannot tell a user's stale or guessed pointer from one of those: freeing or passing one would
// hand the library's live memory to the user.
#pragma once

#include <cstddef>
#include <cstdint>

namespace stratacl::api::user_blocks {

void add(const void* start, size_t bytes);
// False where `start` is not the start of a live block.
bool remove(const void* start);
// The bytes from `p` to the end of the live block that holds it; 0 where none does.
uint64_t bytes_left(const void* p);

}  // namespace stratacl::api::user_blocks
