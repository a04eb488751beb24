// The two hashes of the library, its tools and its tests, written once: FNV-1a over bytes, and
// splitmix64's mixing of one 64-bit word. Some FNV-1a values leave the process (the MoE plan
// digest, secrets derived from a launcher's environment, the host identity): every rank must
// compute them alike, so their bases and byte orders below are part of the wire format.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace stratacl {

inline constexpr uint64_t kFnvPrime = 1099511628211ull;
// The standard 64-bit offset basis (14695981039346656037).
inline constexpr uint64_t kFnvBasis = 0xcbf29ce484222325ull;
// The basis the library's shared values start from: the standard one without its last decimal
// digit. Peers compare these values, so it stays as it is.
inline constexpr uint64_t kFnvBasisShared = 1469598103934665603ull;

// 2^64 divided by the golden ratio: splitmix64's increment, and the multiplier of Fibonacci
// hashing.
inline constexpr uint64_t kGoldenGamma = 0x9e3779b97f4a7c15ull;

// FNV-1a. Each function continues the hash `h` (a basis, or the hash of what came before) with
// more bytes; `h` comes first, and no argument has a default, so that a string and a byte range
// cannot be taken for one another.

// One byte.
constexpr uint64_t fnv1a_byte(uint64_t h, uint8_t b) { return (h ^ b) * kFnvPrime; }

// `bytes` bytes at `p`.
inline uint64_t fnv1a(uint64_t h, const void* p, size_t bytes) {
  const auto* b = static_cast<const unsigned char*>(p);
  for (size_t i = 0; i < bytes; ++i) h = fnv1a_byte(h, b[i]);
  return h;
}

// The characters of `s`.
constexpr uint64_t fnv1a(uint64_t h, std::string_view s) {
  for (char c : s) h = fnv1a_byte(h, uint8_t(c));
  return h;
}

// The 8 bytes of `v`, least significant first whatever the host's byte order.
constexpr uint64_t fnv1a_u64(uint64_t h, uint64_t v) {
  for (int i = 0; i < 8; ++i) h = fnv1a_byte(h, uint8_t(v >> (8 * i)));
  return h;
}

// splitmix64's finaliser: a bijection of 64-bit words in which every input bit flips about half
// of the output bits.
constexpr uint64_t mix64(uint64_t x) {
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// splitmix64 as a hash of one word: the generator's next output from the state `x`.
constexpr uint64_t splitmix64(uint64_t x) { return mix64(x + kGoldenGamma); }

}  // namespace stratacl
