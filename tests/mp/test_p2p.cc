// Case `p2p`: send/recv patterns, mostly inside sclGroupStart/End.
//
// A pattern is a plan per rank: an ordered list of sends (peer, count) and receives (peer).
// Messages between two ranks match in order, so the k-th receive from p gets the k-th send of p
// to this rank: the receive count and the expected data are derived from the sender's plan. The
// data of a message is reference input of the sender under a seed naming (pattern, sender,
// receiver, k), so a message delivered to the wrong receive, or out of order, is caught. Every
// receive buffer (and its guards) is checked, and every send buffer must be unchanged.
//
// Patterns: bidirectional ring; all-pairs exchange (an alltoallv written as sends and receives,
// distinct sizes, self included, receives posted in reverse order); 20 sends to the same peer in
// one group (more than the 8 slots of a channel); 20 sends to self; receives posted before
// sends; send to self only; count 0 (with NULL buffers too); one pair exchanging while the other
// ranks submit empty groups; blocking sends and receives outside a group; groups queued on a
// stream; a 1Mi+5 element message. Buffers alternate heap/malloc and offset 0/1.
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "buffers.h"
#include "reference.h"
#include "tests.h"

namespace mp {
namespace {

struct PlanOp {
  bool is_send;
  int peer;
  size_t count;  // sends only; receives take the count of the matching send
};
using Plan = std::function<std::vector<PlanOp>(int rank, int n)>;

struct Pattern {
  std::string name;
  Plan plan;
  sclDataType_t dtype = sclInt32;
  bool grouped = true;          // false: every op is a blocking call of its own
  bool on_stream = false;       // queue the group on a stream, then synchronise
  bool null_for_empty = false;  // count-0 ops pass NULL
  int mem_salt = 0;             // rotates heap/malloc and offsets
};

struct Live {
  PlanOp op;
  size_t count;
  uint64_t seed;  // names the message
  int sender;
  Buffer buf;
};

uint64_t message_seed(uint64_t pattern_seed, int sender, int receiver, int k) {
  return ref::make_seed(pattern_seed, uint64_t(sender), uint64_t(receiver), uint64_t(k));
}

// Runs one pattern on the world; returns wrong elements on this rank.
uint64_t run_pattern(const Pattern& p, uint64_t pattern_seed, sclStream_t stream, Tally& tally) {
  const Comm& w = world();
  const int me = w.rank, n = w.n;
  const std::vector<PlanOp> mine = p.plan(me, n);

  // The sends of each peer to me, in order (for receive counts).
  std::vector<std::vector<size_t>> sends_to_me(static_cast<size_t>(n));
  for (int peer = 0; peer < n; ++peer) {
    for (const PlanOp& op : p.plan(peer, n)) {
      if (op.is_send && op.peer == me) sends_to_me[size_t(peer)].push_back(op.count);
    }
  }

  std::vector<int> sent_k(size_t(n), 0), recv_k(size_t(n), 0);
  std::vector<Live> ops;
  for (size_t i = 0; i < mine.size(); ++i) {
    const PlanOp& op = mine[i];
    Live l{op, 0, 0, 0, {}};
    const size_t salt = i + size_t(p.mem_salt) + size_t(me);
    const Mem mem = salt % 2 == 0 ? Mem::kHeap : Mem::kMalloc;
    const size_t offset = (salt / 2) % 2;
    if (op.is_send) {
      l.count = op.count;
      l.sender = me;
      l.seed = message_seed(pattern_seed, me, op.peer, sent_k[size_t(op.peer)]++);
    } else {
      const int k = recv_k[size_t(op.peer)]++;
      const auto& counts = sends_to_me[size_t(op.peer)];
      if (size_t(k) >= counts.size()) {
        fatal("p2p %s: plan error: receive #%d from %d has no matching send", p.name.c_str(), k,
              op.peer);
      }
      l.count = counts[size_t(k)];
      l.sender = op.peer;
      l.seed = message_seed(pattern_seed, op.peer, me, k);
    }
    l.buf = Buffer(mem, p.dtype, l.count, offset, ref::sentinel_byte(l.seed));
    if (op.is_send)
      ref::fill_input(l.buf.data(), p.dtype, ref::Kind::kMove, l.seed, me, 0, l.count);
    ops.push_back(std::move(l));
  }

  if (p.grouped) MP_OK(sclGroupStart());
  for (Live& l : ops) {
    void* ptr = (l.count == 0 && p.null_for_empty) ? nullptr : l.buf.data();
    if (l.op.is_send) {
      MP_OK(sclSend(ptr, l.count, p.dtype, l.op.peer, w.comm, stream));
    } else {
      MP_OK(sclRecv(ptr, l.count, p.dtype, l.op.peer, w.comm, stream));
    }
  }
  if (p.grouped) MP_OK(sclGroupEnd());
  if (stream) MP_OK(sclStreamSynchronize(stream));

  uint64_t wrong = 0;
  for (size_t i = 0; i < ops.size(); ++i) {
    const Live& l = ops[i];
    CallInfo info;
    info.coll = "p2p " + p.name;
    info.dtype = p.dtype;
    info.count = l.count;
    info.detail = std::string(l.op.is_send ? "send to " : "recv from ") +
                  std::to_string(l.op.peer) + " (op " + std::to_string(i) + " of " +
                  std::to_string(ops.size()) + ", " + mem_name(l.buf.mem()) + "+" +
                  std::to_string(l.buf.offset()) + ") ranks=" + std::to_string(n);
    std::vector<unsigned char> image = l.buf.image();
    ref::fill_input(l.buf.image_data(image), p.dtype, ref::Kind::kMove, l.seed, l.sender, 0,
                    l.count);
    wrong += l.buf.check(tally, info, l.op.is_send ? "send" : "recv", image);
  }
  return wrong;
}

}  // namespace

int run_p2p(int argc, char**) {
  if (argc != 0) fatal("p2p: takes no arguments");
  const Comm& w = world();
  Tally& tally = global_tally();
  const double start = now();
  std::vector<Pattern> patterns;

  // Bidirectional ring: send to next and previous, receive from previous and next.
  int salt = 0;
  for (size_t count : {size_t(0), size_t(1), size_t(7), size_t(4097), size_t(65537)}) {
    for (sclDataType_t t : {sclInt8, sclFloat16, sclFloat32, sclFloat64, sclFloat8e5m2}) {
      Pattern p;
      p.name = "ring count=" + std::to_string(count);
      p.dtype = t;
      p.mem_salt = salt++;
      p.plan = [count](int r, int n) {
        const int next = (r + 1) % n, prev = (r + n - 1) % n;
        return std::vector<PlanOp>{
            {true, next, count}, {true, prev, count + 1}, {false, prev, 0}, {false, next, 0}};
      };
      patterns.push_back(p);
    }
  }
  // All-pairs exchange, self included, distinct sizes (some zero); receives in reverse order.
  for (size_t scale : {size_t(1), size_t(700)}) {
    for (sclDataType_t t : {sclUint8, sclBfloat16, sclInt64}) {
      Pattern p;
      p.name = "all-pairs scale=" + std::to_string(scale);
      p.dtype = t;
      p.mem_salt = salt++;
      p.plan = [scale](int r, int n) {
        std::vector<PlanOp> ops;
        for (int q = 0; q < n; ++q) {
          ops.push_back({true, q, size_t((r * 3 + q * 5 + 1) % 7) * scale + size_t(q)});
        }
        for (int q = n - 1; q >= 0; --q) ops.push_back({false, q, 0});
        return ops;
      };
      patterns.push_back(p);
    }
  }
  // 20 sends to the same peer in one group (more than a channel's 8 slots), varying sizes.
  for (bool recv_first : {false, true}) {
    Pattern p;
    p.name = std::string("20 to next") + (recv_first ? " (receives first)" : "");
    p.dtype = sclFloat32;
    p.mem_salt = salt++;
    p.plan = [recv_first](int r, int n) {
      std::vector<PlanOp> sends, recvs;
      for (int k = 0; k < 20; ++k) {
        sends.push_back({true, (r + 1) % n, size_t((k * 37) % 100) * size_t(k % 3)});
        recvs.push_back({false, (r + n - 1) % n, 0});
      }
      std::vector<PlanOp> ops = recv_first ? recvs : sends;
      ops.insert(ops.end(), recv_first ? sends.begin() : recvs.begin(),
                 recv_first ? sends.end() : recvs.end());
      return ops;
    };
    patterns.push_back(p);
  }
  {
    Pattern p;
    p.name = "20 to self, interleaved";
    p.dtype = sclUint32;
    p.mem_salt = salt++;
    p.plan = [](int r, int) {
      std::vector<PlanOp> ops;
      for (int k = 0; k < 20; ++k) {
        ops.push_back({true, r, size_t(k * 11 + 1)});
        if (k >= 4) ops.push_back({false, r, 0});  // receives trail the sends by 4
      }
      for (int k = 0; k < 4; ++k) ops.push_back({false, r, 0});
      return ops;
    };
    patterns.push_back(p);
  }
  for (size_t count : {size_t(1), size_t(4097)}) {
    Pattern p;
    p.name = "self only";
    p.dtype = sclFloat8e4m3;
    p.mem_salt = salt++;
    p.plan = [count](int r, int) { return std::vector<PlanOp>{{false, r, 0}, {true, r, count}}; };
    patterns.push_back(p);
  }
  for (bool null_for_empty : {false, true}) {
    Pattern p;
    p.name = std::string("count 0") + (null_for_empty ? " (NULL buffers)" : "");
    p.dtype = sclFloat64;
    p.null_for_empty = null_for_empty;
    p.mem_salt = salt++;
    p.plan = [](int r, int n) {
      std::vector<PlanOp> ops;
      for (int q = 0; q < n; ++q) ops.push_back({true, q, 0});
      for (int q = 0; q < n; ++q) ops.push_back({false, q, 0});
      (void)r;
      return ops;
    };
    patterns.push_back(p);
  }
  {
    Pattern p;
    p.name = "first-last pair, others empty";
    p.dtype = sclInt32;
    p.mem_salt = salt++;
    p.plan = [](int r, int n) {
      std::vector<PlanOp> ops;
      if (r == 0) ops = {{true, n - 1, 333}, {false, n - 1, 0}};
      if (r == n - 1 && n > 1) ops = {{false, 0, 0}, {true, 0, 444}};
      if (n == 1) ops = {{true, 0, 333}, {false, 0, 0}};
      return ops;
    };
    patterns.push_back(p);
  }
  if (w.n >= 2) {
    // Blocking calls outside a group: 0 -> 1, then 1 -> 0.
    Pattern p;
    p.name = "blocking, no group";
    p.dtype = sclInt64;
    p.grouped = false;
    p.mem_salt = salt++;
    p.plan = [](int r, int) {
      std::vector<PlanOp> ops;
      if (r == 0) ops = {{true, 1, 1000}, {false, 1, 0}};
      if (r == 1) ops = {{false, 0, 0}, {true, 0, 999}};
      return ops;
    };
    patterns.push_back(p);
  }
  {
    Pattern p;
    p.name = "ring on a stream";
    p.dtype = sclFloat16;
    p.on_stream = true;
    p.mem_salt = salt++;
    p.plan = [](int r, int n) {
      std::vector<PlanOp> ops;
      for (int k = 0; k < 12; ++k) ops.push_back({true, (r + 1) % n, size_t(k * 100 + 3)});
      for (int k = 0; k < 12; ++k) ops.push_back({false, (r + n - 1) % n, 0});
      return ops;
    };
    patterns.push_back(p);
  }
  {
    Pattern p;
    p.name = "1Mi+5 ring";
    p.dtype = sclFloat32;
    p.mem_salt = salt++;
    p.plan = [](int r, int n) {
      return std::vector<PlanOp>{{true, (r + 1) % n, size_t(1 << 20) + 5},
                                 {false, (r + n - 1) % n, 0}};
    };
    patterns.push_back(p);
    p.mem_salt = salt++;
    patterns.push_back(p);
  }

  sclStream_t stream = nullptr;
  MP_OK(sclStreamCreate(&stream));
  uint64_t index = 0;
  for (const Pattern& p : patterns) {
    const uint64_t failed_before = tally.failed();
    const double t0 = now();
    run_pattern(p, ref::make_seed(0x929, ++index), p.on_stream ? stream : nullptr, tally);
    if (w.rank == 0) {
      printf("p2p: %-34s %-8s %7.2f ms%s\n", p.name.c_str(), dtype_name(p.dtype),
             1e3 * (now() - t0), tally.failed() > failed_before ? "  FAILED on rank 0" : "");
    }
  }
  MP_OK(sclStreamDestroy(stream));
  if (w.rank == 0) printf("p2p: %zu patterns in %.2f s\n", patterns.size(), now() - start);
  return finish("p2p");
}

}  // namespace mp
