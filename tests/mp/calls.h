// One verifiable collective call: its buffers, their inputs, the call itself and the check of
// every element it may touch. The collectives, comms and streams cases are built from these.
//
// A PreparedCall allocates its buffers (guards included), writes the inputs, and later
// verifies, per buffer, the data elements and the guards against images computed by
// reference.h. Expectations (NCCL conventions):
//   - every output element holds its reference value;
//   - a send buffer of an out-of-place call is unchanged;
//   - a buffer that only matters at the root (reduce/gather recv, scatter send, broadcast send)
//     is unchanged on the other ranks;
//   - in place, the parts of the buffer that are not this rank's output keep their input;
//   - the guard elements around every buffer are never written.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "buffers.h"
#include "harness.h"

namespace mp {

enum class Coll {
  kAllReduce,
  kBroadcast,
  kReduce,
  kAllGather,
  kReduceScatter,
  kAlltoAll,
  kAlltoAllv,
  kGather,
  kScatter,
  kSendRecvRing,  // a group of one send to rank+1 and one receive from rank-1
  kBarrier,
};
constexpr Coll kAllColls[] = {Coll::kAllReduce,    Coll::kBroadcast,     Coll::kReduce,
                              Coll::kAllGather,    Coll::kReduceScatter, Coll::kAlltoAll,
                              Coll::kAlltoAllv,    Coll::kGather,        Coll::kScatter,
                              Coll::kSendRecvRing, Coll::kBarrier};
const char* coll_name(Coll c);
bool reduces(Coll c);
bool rooted(Coll c);
bool has_in_place(Coll c);

// Where the buffers live. In place, only the recv fields are used (the one buffer).
struct Placement {
  const char* name;
  Mem send_mem;
  size_t send_offset;  // in elements
  Mem recv_mem;
  size_t recv_offset;
  bool in_place;
};

struct CallSpec {
  Coll coll = Coll::kAllReduce;
  sclDataType_t dtype = sclFloat32;
  int op = -1;  // sclRedOp_t for reducing collectives, else -1
  size_t count = 0;
  int root = -1;  // rooted collectives only
  Placement placement{};
  bool null_when_empty = false;  // count 0: pass NULL for every buffer
  uint64_t seed = 0;
  std::string context;  // extra text for messages (communicator, iteration)
};

class PreparedCall {
 public:
  PreparedCall(const Comm& comm, const CallSpec& spec);
  ~PreparedCall();
  PreparedCall(const PreparedCall&) = delete;
  PreparedCall& operator=(const PreparedCall&) = delete;

  // Issues the call on `stream` (NULL: blocking) and returns what the library returned.
  sclResult_t issue(sclStream_t stream);
  // Checks every buffer; returns the number of wrong elements.
  uint64_t verify(Tally& tally);

  const CallSpec& spec() const { return spec_; }
  CallInfo info() const;

 private:
  struct Segment {  // [at, at + len) of a buffer's data holds...
    size_t at, len;
    bool reduced;  // ...the reduction of element (first + k) over all ranks, or
    int rank;      // ...input element (first + k) of `rank`
    uint64_t first;
  };
  struct Slot {
    const char* name = "";
    bool used = false;
    Buffer buf;
    std::vector<Segment> initial, expected;
  };
  void setup();
  void alloc(Slot& s, Mem mem, size_t count, size_t offset);
  void write(std::vector<unsigned char>& image, const Slot& s,
             const std::vector<Segment>& segs) const;
  size_t vcount(int from, int to) const;  // alltoallv: elements rank `from` sends rank `to`

  Comm comm_;
  CallSpec spec_;
  Slot a_, b_;  // send and recv (in place: b_ only)
  const void* send_ = nullptr;
  void* recv_ = nullptr;
  std::vector<size_t> sendcounts_, sdispls_, recvcounts_, rdispls_;
};

// Runs one call blocking and verifies it; fatal if the library returns an error.
uint64_t run_and_verify(const Comm& comm, const CallSpec& spec, Tally& tally);

}  // namespace mp
