/* Byte counts as people write them: a decimal integer with an optional K, M or G suffix (powers
 * of 1024), as in STRATACL_HEAP_BYTES=16G or scl-bench -e 64M. Plain C, and header-only, so that
 * the library, the tools and the peer benchmarks (bench/peers, built by MPI's C compiler) parse
 * sizes with this one function. */
#ifndef STRATACL_CORE_BYTE_SIZE_H_
#define STRATACL_CORE_BYTE_SIZE_H_

#include <errno.h>
#include <stdlib.h>

/* Parses all of `text`. Returns 0 and sets *out, or -1 for something that is not such a number
 * (empty, junk after the number or its suffix) and -2 for one that does not fit a long long. */
static inline int scl_parse_byte_size(const char* text, long long* out) {
  char* end = NULL;
  errno = 0;
  const long long n = strtoll(text, &end, 10);
  if (end == text) return -1;
  if (errno == ERANGE) return -2;
  long long scale = 1;
  switch (*end) {
    case 'K':
    case 'k':
      scale = 1LL << 10;
      break;
    case 'M':
    case 'm':
      scale = 1LL << 20;
      break;
    case 'G':
    case 'g':
      scale = 1LL << 30;
      break;
    default:
      break;
  }
  if (scale != 1) ++end;
  if (*end != '\0') return -1;
  if (__builtin_mul_overflow(n, scale, out)) return -2;
  return 0;
}

#endif /* STRATACL_CORE_BYTE_SIZE_H_ */
