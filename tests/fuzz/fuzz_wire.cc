// Fuzzes the bootstrap wire decoders: the messages a TCP peer sends during rendezvous.
//
// Input: byte 0 picks the rank count handed to decode_table (as int8_t, so negative counts are
// tried too); the rest is a stream of framed messages {12-byte header, payload}. Every decoder
// runs on every payload whatever the header's type says, since a hostile peer controls both.
//
// Round trips, both ways: where a decoder accepts, re-encoding gives back the same bytes (nothing
// is accepted that the encoders would write differently); and for field values taken from the
// input, the decoders accept what the encoders write exactly when the values are in range, and
// return them unchanged (nothing a correct peer sends is rejected).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "bootstrap/wire.h"
#include "fuzz_util.h"

namespace stratacl::bootstrap {
namespace {

using Bytes = std::span<const uint8_t>;

bool same_bytes(Bytes a, Bytes b) { return std::ranges::equal(a, b); }

bool in_range(const RankInfo& r) {
  return r.nranks >= 1 && uint32_t(r.nranks) <= kMaxRanks && r.rank >= 0 && r.rank < r.nranks &&
         r.pid > 0;
}

// `msg` (from an encoder) must be a header of `type` that decode_header accepts, then `payload`.
void check_encoded(const std::vector<uint8_t>& msg, MsgType type, Bytes payload) {
  FUZZ_CHECK(msg.size() == kHeaderBytes + payload.size());
  Result<Header> h = decode_header(msg);
  FUZZ_CHECK(h.ok() && h->type == type && h->length == payload.size());
  FUZZ_CHECK(same_bytes(Bytes(msg).subspan(kHeaderBytes), payload));
}

// Returns the re-encoded message when decode_hello accepts `payload`.
std::vector<uint8_t> check_hello(Bytes payload) {
  Result<Hello> h = decode_hello(payload);
  if (!h.ok()) return {};
  FUZZ_CHECK(in_range(h->info));
  std::vector<uint8_t> msg = encode_hello(h->secret, h->info);
  check_encoded(msg, MsgType::kHello, payload);
  return msg;
}

std::vector<uint8_t> check_table(Bytes payload, int expect_ranks) {
  Result<std::vector<RankInfo>> t = decode_table(payload, expect_ranks);
  if (!t.ok()) return {};
  FUZZ_CHECK(t->size() == size_t(expect_ranks));
  for (size_t i = 0; i < t->size(); ++i) {
    const RankInfo& r = (*t)[i];
    FUZZ_CHECK(in_range(r) && r.rank == int(i) && r.nranks == expect_ranks);
  }
  std::vector<uint8_t> msg = encode_table(*t);
  check_encoded(msg, MsgType::kTable, payload);
  return msg;
}

// An error payload is {int32 result code, text}; one too short for the code is all text.
constexpr size_t kCodeBytes = 4;

std::optional<int32_t> leading_code(Bytes payload) {
  if (payload.size() < kCodeBytes) return std::nullopt;
  int32_t c;
  std::memcpy(&c, payload.data(), kCodeBytes);
  return c;
}

bool is_error_code(int32_t c) { return c > sclSuccess && c < sclNumResults; }

void check_error(Bytes payload) {
  sclResult_t code = sclSuccess;
  const std::string s = decode_error(payload, &code);
  FUZZ_CHECK(decode_error(payload) == s);  // the code out-parameter is optional
  // Success or an unknown code must not reach the caller as such: it reads as a remote error.
  const std::optional<int32_t> raw = leading_code(payload);
  FUZZ_CHECK(code == (raw && is_error_code(*raw) ? *raw : sclRemoteError));
  const Bytes text = raw ? payload.subspan(kCodeBytes) : payload;
  FUZZ_CHECK(s.size() == text.size());
  for (size_t i = 0; i < s.size(); ++i) {
    // Printable bytes pass through; everything else (control codes, bytes >= 0x7f) becomes '?'.
    const bool printable = text[i] >= 32 && text[i] <= 126;
    FUZZ_CHECK(s[i] == (printable ? char(text[i]) : '?'));
  }
  // What we would forward (the root relays errors) survives a round trip, cut at 1024 bytes.
  const std::string sent(s, 0, std::min<size_t>(s.size(), 1024));
  std::vector<uint8_t> expect(kCodeBytes);
  const int32_t c = code;
  std::memcpy(expect.data(), &c, kCodeBytes);
  expect.insert(expect.end(), sent.begin(), sent.end());
  const std::vector<uint8_t> msg = encode_error(s, code);
  check_encoded(msg, MsgType::kError, expect);
  sclResult_t code2 = sclSuccess;
  FUZZ_CHECK(decode_error(Bytes(msg).subspan(kHeaderBytes), &code2) == sent && code2 == code);
}

// The count a table payload claims, as decode_table's int: lets the fuzzer reach the per-entry
// checks without also having to guess the selector byte.
int claimed_ranks(Bytes payload) {
  uint32_t n = 0;
  if (payload.size() >= 4) std::memcpy(&n, payload.data(), 4);
  return int(n);
}

// Blobs (the network addresses of a job across hosts): whatever decodes re-encodes exactly.
std::vector<uint8_t> check_blob(Bytes payload) {
  Result<std::vector<uint8_t>> b = decode_blob(payload);
  if (!b.ok()) return {};
  FUZZ_CHECK(b->size() <= kMaxBlob);
  return encode_blob(*b);
}

std::vector<uint8_t> check_blobs(Bytes payload, int ranks) {
  Result<std::vector<std::vector<uint8_t>>> all = decode_blobs(payload, ranks);
  if (!all.ok()) return {};
  FUZZ_CHECK(int(all->size()) == ranks);
  for (const auto& b : *all) FUZZ_CHECK(b.size() <= kMaxBlob);
  return encode_blobs(*all);
}

void check_payload(Bytes payload, int selector_ranks) {
  check_blob(payload);
  check_blobs(payload, claimed_ranks(payload));
  check_hello(payload);
  check_table(payload, selector_ranks);
  check_table(payload, claimed_ranks(payload));
  check_error(payload);
}

// `frame` holds a header decode_header accepted and its complete payload. When the payload decodes
// as the header's type, the encoder must reproduce the frame byte for byte, header included.
void check_frame(Bytes frame, const Header& h) {
  Bytes payload = frame.subspan(kHeaderBytes);
  std::vector<uint8_t> again;
  switch (h.type) {
    case MsgType::kHello:
      again = check_hello(payload);
      break;
    case MsgType::kTable:
      again = check_table(payload, claimed_ranks(payload));
      break;
    case MsgType::kBlob:
      again = check_blob(payload);
      break;
    case MsgType::kBlobs:
      again = check_blobs(payload, claimed_ranks(payload));
      break;
    case MsgType::kError:
      // encode_error copies the text raw, so a valid code and text it can hold re-encode exactly.
      if (std::optional<int32_t> c = leading_code(payload);
          c && is_error_code(*c) && payload.size() - kCodeBytes <= 1024) {
        again =
            encode_error(std::string(payload.begin() + kCodeBytes, payload.end()), sclResult_t(*c));
      }
      break;
  }
  if (!again.empty()) FUZZ_CHECK(same_bytes(again, frame));
}

// The encoder-first direction, with the secret and RankInfo fields read raw from `raw`.
void check_encoders(Bytes raw) {
  static_assert(std::is_trivially_copyable_v<RankInfo> && sizeof(RankInfo) == kRankInfoBytes);
  Secret secret;
  RankInfo info;
  if (raw.size() < secret.size() + sizeof info) return;
  std::memcpy(secret.data(), raw.data(), secret.size());
  std::memcpy(&info, raw.data() + secret.size(), sizeof info);

  const std::vector<uint8_t> hello = encode_hello(secret, info);
  Result<Hello> h = decode_hello(Bytes(hello).subspan(kHeaderBytes));
  FUZZ_CHECK(h.ok() == in_range(info));
  if (h.ok()) FUZZ_CHECK(h->secret == secret && fuzz::same_info(h->info, info));

  // A table of such entries, numbered as the root numbers them: only the pid can spoil it.
  const int n = 1 + raw[0] % 4;
  std::vector<RankInfo> all(n, info);
  for (int r = 0; r < n; ++r) {
    all[r].rank = r;
    all[r].nranks = n;
  }
  const std::vector<uint8_t> table = encode_table(all);
  Result<std::vector<RankInfo>> t = decode_table(Bytes(table).subspan(kHeaderBytes), n);
  FUZZ_CHECK(t.ok() == (info.pid > 0));
  if (t.ok()) {
    for (int r = 0; r < n; ++r) FUZZ_CHECK(fuzz::same_info((*t)[r], all[r]));
  }
}

void fuzz_one(const uint8_t* data, size_t size) {
  if (size == 0) return;
  const int selector_ranks = int8_t(data[0]);
  Bytes stream(data + 1, size - 1);
  check_encoders(stream);
  for (;;) {
    Result<Header> h = decode_header(stream);
    if (stream.size() >= kHeaderBytes) {
      // The header is exactly 12 bytes: what follows must not change the verdict.
      Result<Header> alone = decode_header(stream.first(kHeaderBytes));
      FUZZ_CHECK(alone.ok() == h.ok());
      if (h.ok()) FUZZ_CHECK(alone->type == h->type && alone->length == h->length);
    } else {
      FUZZ_CHECK(!h.ok());
    }
    if (!h.ok()) {
      // Unframed bytes: still hand them to every decoder.
      check_payload(stream, selector_ranks);
      return;
    }
    FUZZ_CHECK(h->length <= kMaxPayload);
    const size_t avail = stream.size() - kHeaderBytes;
    const size_t len = std::min<size_t>(h->length, avail);
    check_payload(stream.subspan(kHeaderBytes, len), selector_ranks);
    if (len < h->length) return;  // truncated final frame
    check_frame(stream.first(kHeaderBytes + len), *h);
    stream = stream.subspan(kHeaderBytes + len);
  }
}

}  // namespace
}  // namespace stratacl::bootstrap

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  stratacl::bootstrap::fuzz_one(data, size);
  return 0;
}
