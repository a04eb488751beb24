// Shared by the fuzz targets, the replay driver and the corpus generator.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <vector>

#include "bootstrap/unique_id.h"
#include "bootstrap/wire.h"

// A violated property must crash, so that libFuzzer (or the replay test) reports the input. A bare
// trap only says where; the message says which property.
#define FUZZ_CHECK(cond)                                                                      \
  do {                                                                                        \
    if (!(cond)) {                                                                            \
      std::fprintf(stderr, "%s:%d: fuzz property violated: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                           \
    }                                                                                         \
  } while (0)

namespace stratacl::fuzz {

inline bool same_info(const bootstrap::RankInfo& a, const bootstrap::RankInfo& b) {
  return a.rank == b.rank && a.nranks == b.nranks && a.pid == b.pid && a.uid == b.uid &&
         a.host_hash == b.host_hash && a.heap_nonce == b.heap_nonce &&
         a.heap_bytes == b.heap_bytes && a.cb_offset == b.cb_offset &&
         a.staging_bytes == b.staging_bytes && a.staging_offset == b.staging_offset;
}

// fuzz_root's input is a list of connections, each a record {u16 little-endian length, bytes}:
// what one client sends the root before it half-closes. A record whose length runs past the end
// takes what is left, so every input means something.
constexpr size_t kRootMaxConnections = 8;  // bounds the fds and the time one input costs

// The job secret of the root under test. Fixed, so that seeds can carry hellos the root accepts.
constexpr bootstrap::Secret kRootSecret = {0x5c, 0x4c, 0x42, 0x5f, 0x66, 0x75, 0x7a, 0x7a,
                                           0x2d, 0x72, 0x6f, 0x6f, 0x74, 0x21, 0x00, 0xff};

inline std::vector<std::span<const uint8_t>> split_connections(std::span<const uint8_t> in) {
  std::vector<std::span<const uint8_t>> out;
  while (in.size() >= 2 && out.size() < kRootMaxConnections) {
    size_t n = size_t(in[0]) | size_t(in[1]) << 8;
    in = in.subspan(2);
    if (n > in.size()) n = in.size();
    out.push_back(in.first(n));
    in = in.subspan(n);
  }
  return out;
}

inline void append_connection(std::vector<uint8_t>& out, std::span<const uint8_t> bytes) {
  out.push_back(uint8_t(bytes.size()));
  out.push_back(uint8_t(bytes.size() >> 8));
  out.insert(out.end(), bytes.begin(), bytes.end());
}

}  // namespace stratacl::fuzz
