#include "exec/copy.h"

#include <emmintrin.h>

#include <cstdint>

#include "core/config.h"

namespace stratacl {

void stream_bytes(void* dst_v, const void* src_v, size_t bytes) {
  auto* dst = static_cast<char*>(dst_v);
  const auto* src = static_cast<const char*>(src_v);
  // Ordinary copies up to the first whole destination line and after the last one.
  size_t head = (64 - (reinterpret_cast<uintptr_t>(dst) & 63)) & 63;
  if (head > bytes) head = bytes;
  copy_bytes(dst, src, head);
  dst += head, src += head, bytes -= head;
  const size_t body = bytes & ~size_t(63);
  for (size_t i = 0; i < body; i += 64) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i + 16));
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i + 32));
    const __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i + 48));
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i), a);
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i + 16), b);
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i + 32), c);
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i + 48), d);
  }
  _mm_sfence();  // non-temporal stores are weakly ordered: finish them before any flag
  copy_bytes(dst + body, src + body, bytes - body);
}

bool streaming_pays(size_t out_bytes) {
  static const size_t min_bytes = size_t(process_value(Var::kNtMinBytes));
  return min_bytes > 0 && out_bytes >= min_bytes;
}

}  // namespace stratacl
