// Fuzzes decode_id: the 128-byte sclUniqueId a user hands to sclCommInitRank, which may be stale,
// truncated or garbage. Bytes past the first 128 feed parse_secret_hex, the other user-supplied
// way to give the job secret (STRATACL_* launcher variables).
//
// Input shorter than 128 bytes is zero-padded, as a short id copied into a zeroed struct would be.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

#include "bootstrap/unique_id.h"
#include "fuzz_util.h"

namespace stratacl::bootstrap {
namespace {

// Layout of sclUniqueId.internal, from unique_id.cc: magic u32 | version u16 | family u16 at 0..8,
// port at 8..10, the IPv4 address at 12..16, the secret at 28..44. decode_id validates the first
// three fields and the port; encode_id writes these ranges and zeroes the rest.
constexpr size_t kValidatedEnd = 8;
struct Range {
  size_t begin, end;
};
constexpr Range kCarried[] = {{0, 10}, {12, 16}, {28, 44}};

bool same_range(const sclUniqueId& a, const sclUniqueId& b, Range r) {
  return std::memcmp(a.internal + r.begin, b.internal + r.begin, r.end - r.begin) == 0;
}

// encode_id's magic, version and family: what decode_id must insist on.
const sclUniqueId& reference_id() {
  static const sclUniqueId ref = [] {
    IdData d;
    d.root.sin_port = 1;
    return encode_id(d);
  }();
  return ref;
}

void check_id(const sclUniqueId& id) {
  Result<IdData> d = decode_id(id);
  // Accepted exactly when the validated fields are what encode_id writes and the port is set.
  const bool header_ok = same_range(id, reference_id(), {0, kValidatedEnd});
  const bool port_set = id.internal[kValidatedEnd] != 0 || id.internal[kValidatedEnd + 1] != 0;
  FUZZ_CHECK(d.ok() == (header_ok && port_set));
  if (!d.ok()) return;

  FUZZ_CHECK(d->root.sin_family == AF_INET && d->root.sin_port != 0);
  const sclUniqueId again = encode_id(*d);
  for (Range r : kCarried) FUZZ_CHECK(same_range(id, again, r));
  Result<IdData> d2 = decode_id(again);
  FUZZ_CHECK(d2.ok());
  FUZZ_CHECK(d2->root.sin_port == d->root.sin_port);
  FUZZ_CHECK(d2->root.sin_addr.s_addr == d->root.sin_addr.s_addr);
  FUZZ_CHECK(d2->secret == d->secret && secret_equal(d2->secret, d->secret));
}

bool is_hex_digit(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

char to_lower(char c) { return c >= 'A' && c <= 'Z' ? char(c - 'A' + 'a') : c; }

void check_secret_hex(const std::string& hex) {
  Result<Secret> s = parse_secret_hex(hex);
  const bool well_formed =
      hex.size() == 2 * Secret().size() && std::ranges::all_of(hex, is_hex_digit);
  FUZZ_CHECK(s.ok() == well_formed);
  if (!s.ok()) return;
  std::string lower = hex;
  std::ranges::transform(lower, lower.begin(), to_lower);
  FUZZ_CHECK(secret_hex(*s) == lower);
  Result<Secret> again = parse_secret_hex(secret_hex(*s));
  FUZZ_CHECK(again.ok() && *again == *s);
  // The constant-time comparison must agree with plain equality, both ways.
  Secret other = *s;
  other[0] ^= 1;
  FUZZ_CHECK(secret_equal(*s, *again) && !secret_equal(*s, other));
}

void fuzz_one(const uint8_t* data, size_t size) {
  sclUniqueId id;
  std::memset(&id, 0, sizeof id);
  if (size > 0) std::memcpy(id.internal, data, std::min(size, sizeof id.internal));
  check_id(id);
  if (size > sizeof id.internal) {
    check_secret_hex(std::string(data + sizeof id.internal, data + size));
  }
}

}  // namespace
}  // namespace stratacl::bootstrap

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  stratacl::bootstrap::fuzz_one(data, size);
  return 0;
}
