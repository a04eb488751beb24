// The two-shot allreduce body of one round (see allreduce_twoshot.cc).
#pragma once

#include <vector>

#include "coll/call.h"
#include "coll/context.h"

namespace stratacl {

// This rank's view of one allreduce round: its input and output slice, and where its reduced
// shard lives for the peers (the output when it is heap memory, else the staging area).
struct AllreduceRound {
  size_t count = 0, bytes = 0;
  LocalBuffer in;
  char* out = nullptr;
  char* shard_home = nullptr;
  bool out_in_heap = false;
};

Status allreduce_twoshot(CollContext& c, const Call& call, const std::vector<CallDesc>& descs,
                         const AllreduceRound& a);

}  // namespace stratacl
