// The contents of an sclUniqueId: the root's socket address and a 128-bit job secret. Only
// holders of the id can join: the root drops every connection that does not present the secret.
#pragma once

#include <netinet/in.h>

#include <array>
#include <cstdint>
#include <string>

#include "core/status.h"
#include "stratacl/stratacl.h"

namespace stratacl::bootstrap {

using Secret = std::array<uint8_t, 16>;

struct IdData {
  sockaddr_in root{};  // IPv4 today; the encoding leaves room for IPv6
  Secret secret{};
};

sclUniqueId encode_id(const IdData& d);
// Validates magic, version and address family; never reads past the 128 bytes.
Result<IdData> decode_id(const sclUniqueId& id);

Result<Secret> random_secret();
std::string secret_hex(const Secret& s);
Result<Secret> parse_secret_hex(const std::string& hex);
// The secret of the k-th communicator made from one job secret (k = 0 is the secret itself).
Secret secret_for_generation(const Secret& s, uint64_t k);

// Constant-time comparison, so the secret cannot be guessed byte by byte from timing.
bool secret_equal(const Secret& a, const Secret& b);

}  // namespace stratacl::bootstrap
