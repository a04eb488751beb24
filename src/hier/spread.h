// A small call's messages between hosts spread over a host's ranks. Where every rank of a host
// holds the host's messages for the other hosts (the host's sum of a small allreduce, or its
// partials of a small reduce-scatter), local rank l sends those for the hosts l + 1, l + 1 + L,
// ... on and receives from as far back (net::Rail::share): one message between each pair of
// hosts, H - 1 a host, where every rail sending its own took L (H - 1), and a rank's messages
// fall from H - 1 to ceil((H - 1) / L). A local allgather then gives every rank of the host what
// its host's ranks heard, each block ending with its rank's rail result: a host whose call failed
// is heard by one rank of each other host, whose word fails the call on the rest of its host.
// The messages go through heap scratch, registered for the network and read in place by the
// host's ranks above the eager size.
#pragma once

#include <vector>

#include "hier/hierarchical.h"

namespace stratacl::hier {

// From here a small allreduce or reduce-scatter with several ranks a host goes spread. At 2 hosts
// a rank's messages stay one, only the host's fall (L to 1), and the added local step cost more
// than that saved from 512 B at 2x2 here (1.1-1.7x the time of a small allreduce; 0.5-0.8x at
// 8-64 B).
constexpr int kSpreadMinHosts = 3;

// Where the messages of one host land on every rank of it.
class Spread {
 public:
  // Heap scratch for messages of `bytes`, at least; `lead` bytes of it before the spread's own
  // for the caller (the reduce-scatter's partials, which the rails send from there).
  Status reserve(Context& c, size_t bytes, size_t lead);
  char* lead() const { return lead_; }
  // Sends `bytes` at mine + g x stride to each host g of this rank's share, and gathers what
  // every rank of the host heard. `tag` goes in the local allgather's signature (as its root,
  // which an allgather ignores), so that it never pairs with another caller's. Returns the
  // call's outcome: a failure here or on another host ends it everywhere alike.
  Status exchange(Context& c, const Call& call, const char* mine, size_t stride, int tag);
  // Host g's message (g not ours), once exchange() went through.
  const char* from(int g) const { return heard_[size_t(g)]; }

 private:
  size_t bytes_ = 0, slots_ = 0, block_ = 0;
  char* lead_ = nullptr;
  char* mine_ = nullptr;  // what this rank heard, then its rail result
  char* all_ = nullptr;   // local rank k's block at all_ + k x block_
  std::vector<const char*> heard_;
};

}  // namespace stratacl::hier
