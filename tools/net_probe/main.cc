// net-probe: small messages between 2 ranks through one net::Endpoint alone, without the
// collectives above it, to tell the endpoint's cost per message from theirs and from the
// provider's (libfabric's own fi_pingpong, bench/provider-floor). Run under stratarun across
// hosts; the ranks' communicator only carries the endpoints' addresses.
//
//   stratarun -n 2 --netns A,B net-probe [pingpong|exchange] [-b BYTES] [-n ITERS] [--header]
//
// pingpong: rank 0 sends and then receives, rank 1 the other way; prints half a round trip, as
// fi_pingpong's usec/xfer. exchange: both send and receive at once, a 2-rank collective's batch;
// prints the time of one. --header: each message carries an 8-byte word ahead of its data, as a
// world batch's size words do (net::Transfer::header).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "net/endpoint.h"
#include "stratacl/stratacl.h"

namespace {

using namespace stratacl;

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "net-probe: %s\n", what.c_str());
  std::exit(1);
}

struct Options {
  bool pingpong = true, header = false;
  size_t bytes = 64;
  int iters = 20000, warmup = 1000;
};

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "pingpong" || a == "exchange") {
      o.pingpong = a == "pingpong";
    } else if (a == "--header") {
      o.header = true;
    } else if ((a == "-b" || a == "-n") && i + 1 < argc) {
      char* end = nullptr;
      const unsigned long long v = std::strtoull(argv[++i], &end, 10);
      if (*argv[i] == '\0' || *end != '\0') die(a + ": not a number: " + argv[i]);
      if (a == "-b") o.bytes = size_t(v);
      if (a == "-n") o.iters = v > (1u << 30) ? 0 : int(v);
    } else {
      die("usage: net-probe [pingpong|exchange] [-b BYTES] [-n ITERS] [--header]");
    }
  }
  if (o.iters < 1 || o.bytes > (1 << 20)) die("-n must be positive and -b at most 1 MiB");
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  sclComm_t comm = nullptr;
  if (sclCommInitFromEnv(&comm) != sclSuccess) die(sclGetLastError(nullptr));
  int rank = 0, n = 0;
  if (sclCommUserRank(comm, &rank) != sclSuccess || sclCommCount(comm, &n) != sclSuccess) {
    die(sclGetLastError(comm));
  }
  if (n != 2) die("runs on 2 ranks");

  // Polled and slept on as a communicator's own endpoint is.
  Result<std::unique_ptr<net::Endpoint>> opened = net::Endpoint::open(net::kDataSpinNs, true);
  if (!opened.ok()) die(opened.status().message());
  net::Endpoint& ep = **opened;
  if (o.header && !ep.carries_headers()) die("--header: this provider takes no two-part messages");
  // Both addresses, through the communicator: fixed-size records of a length and the bytes.
  constexpr size_t kRecord = 256;
  std::vector<uint8_t> mine(kRecord), both(2 * kRecord);
  const std::vector<uint8_t> name = ep.name();
  if (name.size() + 1 > kRecord) die("an endpoint address longer than 255 bytes");
  mine[0] = uint8_t(name.size());
  std::memcpy(mine.data() + 1, name.data(), name.size());
  if (sclAllGather(mine.data(), both.data(), kRecord, sclUint8, comm, nullptr) != sclSuccess) {
    die(sclGetLastError(comm));
  }
  std::vector<std::vector<uint8_t>> names;
  for (int r = 0; r < 2; ++r) {
    const uint8_t* rec = both.data() + size_t(r) * kRecord;
    names.emplace_back(rec + 1, rec + 1 + rec[0]);
  }
  if (Status s = ep.connect(names, rank); !s.ok()) die(s.message());

  std::vector<char> out(o.bytes, char(rank + 1)), in(o.bytes);
  uint64_t word_out = o.bytes, word_in = 0;
  const auto stop = [](int) { return Status::Ok(); };
  const auto who = [](int p) { return "rank " + std::to_string(p); };
  const auto run = [&](std::span<net::Transfer> batch) {
    if (Status s = ep.run(batch, Deadline::after_ms(10000), stop, who); !s.ok()) die(s.message());
  };
  using Clock = std::chrono::steady_clock;
  Clock::time_point start = Clock::now();
  for (int i = -o.warmup; i < o.iters; ++i) {
    if (i == 0) start = Clock::now();
    net::Transfer batch[2];
    batch[0].send = true, batch[0].buf = out.data();
    batch[1].buf = in.data();
    for (net::Transfer& t : batch) {
      t.peer = 1 - rank, t.bytes = o.bytes, t.tag = uint64_t(i) & 0xffff;
      if (o.header) t.header = t.send ? &word_out : &word_in;
    }
    if (!o.pingpong) {
      run(batch);
    } else {
      run(std::span<net::Transfer>(&batch[rank], 1));  // rank 0 sends first
      run(std::span<net::Transfer>(&batch[1 - rank], 1));
    }
    if (o.header && word_in != o.bytes) die("the header word did not arrive");
  }
  const double us = std::chrono::duration<double, std::micro>(Clock::now() - start).count() /
                    o.iters / (o.pingpong ? 2 : 1);
  if (rank == 0) {
    std::printf("%s %zu B%s: %.2f us %s\n", o.pingpong ? "pingpong" : "exchange", o.bytes,
                o.header ? " with a header word" : "", us,
                o.pingpong ? "per half round trip" : "per exchange");
  }
  sclCommDestroy(comm);
  return 0;
}
