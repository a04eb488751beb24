#include "bootstrap/unique_id.h"

#include <sys/random.h>

#include <cstring>

#include "core/hash.h"

namespace stratacl::bootstrap {
namespace {
constexpr uint32_t kIdMagic = 0x53434c49;  // "SCLI"
constexpr uint16_t kIdVersion = 1;

// Layout of sclUniqueId.internal (little-endian):
//   0 magic u32 | 4 version u16 | 6 family u16 | 8 port u16 (network order) | 10 pad u16
//   12 addr[16] | 28 secret[16] | 44..127 zero
constexpr size_t kOffMagic = 0, kOffVersion = 4, kOffFamily = 6, kOffPort = 8, kOffAddr = 12,
                 kOffSecret = 28;
}  // namespace

sclUniqueId encode_id(const IdData& d) {
  sclUniqueId id;
  std::memset(&id, 0, sizeof id);
  uint16_t family = AF_INET;
  std::memcpy(id.internal + kOffMagic, &kIdMagic, 4);
  std::memcpy(id.internal + kOffVersion, &kIdVersion, 2);
  std::memcpy(id.internal + kOffFamily, &family, 2);
  std::memcpy(id.internal + kOffPort, &d.root.sin_port, 2);
  std::memcpy(id.internal + kOffAddr, &d.root.sin_addr, sizeof d.root.sin_addr);
  std::memcpy(id.internal + kOffSecret, d.secret.data(), d.secret.size());
  return id;
}

Result<IdData> decode_id(const sclUniqueId& id) {
  uint32_t magic;
  uint16_t version, family;
  std::memcpy(&magic, id.internal + kOffMagic, 4);
  std::memcpy(&version, id.internal + kOffVersion, 2);
  std::memcpy(&family, id.internal + kOffFamily, 2);
  if (magic != kIdMagic) {
    return Errorf(sclInvalidArgument, "commId: not a StrataCL unique id (bad magic 0x%08x)", magic);
  }
  if (version != kIdVersion) {
    return Errorf(sclInvalidArgument, "commId: unsupported version %u (this build speaks %u)",
                  version, kIdVersion);
  }
  if (family != AF_INET) {
    return Errorf(sclInvalidArgument, "commId: unsupported address family %u", family);
  }
  IdData d;
  d.root.sin_family = AF_INET;
  std::memcpy(&d.root.sin_port, id.internal + kOffPort, 2);
  std::memcpy(&d.root.sin_addr, id.internal + kOffAddr, sizeof d.root.sin_addr);
  std::memcpy(d.secret.data(), id.internal + kOffSecret, d.secret.size());
  if (d.root.sin_port == 0) return Errorf(sclInvalidArgument, "commId: root port is 0");
  return d;
}

Result<Secret> random_secret() {
  Secret s;
  if (getrandom(s.data(), s.size(), 0) != ssize_t(s.size())) return SystemErrorf("getrandom");
  return s;
}

std::string secret_hex(const Secret& s) {
  static const char* kDigits = "0123456789abcdef";
  std::string out;
  for (uint8_t b : s) {
    out += kDigits[b >> 4];
    out += kDigits[b & 15];
  }
  return out;
}

Result<Secret> parse_secret_hex(const std::string& hex) {
  Secret s{};
  if (hex.size() != 2 * s.size()) {
    return Errorf(sclInvalidArgument, "job secret must be %zu hex digits, got %zu", 2 * s.size(),
                  hex.size());
  }
  auto nib = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  for (size_t i = 0; i < s.size(); ++i) {
    int hi = nib(hex[2 * i]), lo = nib(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return Errorf(sclInvalidArgument, "job secret is not hexadecimal");
    s[i] = uint8_t(hi << 4 | lo);
  }
  return s;
}

Secret secret_for_generation(const Secret& s, uint64_t k) {
  if (k == 0) return s;
  Secret out = s;
  // Mix k through every byte (FNV-1a over secret and k); distinct k give distinct secrets.
  uint64_t h = fnv1a_u64(fnv1a(kFnvBasisShared, s.data(), s.size()), k);
  static_assert(std::tuple_size_v<Secret> <= 256, "the index below is hashed as one byte");
  for (size_t i = 0; i < out.size(); ++i) {
    out[i] ^= uint8_t(h >> (8 * (i % 8)));
    if (i % 8 == 7) h = fnv1a_byte(h, uint8_t(i));
  }
  return out;
}

bool secret_equal(const Secret& a, const Secret& b) {
  uint8_t diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= uint8_t(a[i] ^ b[i]);
  return diff == 0;
}

}  // namespace stratacl::bootstrap
