// Bootstrap messages. Every message is a 12-byte header {magic, version, type, payload length}
// followed by a payload of fixed-size little-endian fields. Decoders check every length before
// reading and never trust a count from the wire: they are the fuzzing surface.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "bootstrap/unique_id.h"
#include "core/status.h"

namespace stratacl::bootstrap {

// What every rank tells the others at init.
struct RankInfo {
  int32_t rank = 0;
  int32_t nranks = 0;
  int32_t pid = 0;
  uint32_t uid = 0;
  uint64_t host_hash = 0;      // ranks with equal hashes share memory
  uint64_t heap_nonce = 0;     // identity of the rank's heap
  uint64_t heap_bytes = 0;     // capacity of the rank's heap
  uint64_t cb_offset = 0;      // the communicator's control block in that heap
  uint64_t staging_bytes = 0;  // the rank's staging area size
  uint64_t staging_offset = 0;
  uint64_t doorbell_bytes = 0;   // capacity of the rank's doorbell heap
  uint64_t doorbell_offset = 0;  // the control block's doorbells in that heap
  // Random name of the rank's heap-exchange socket: unpredictable to anyone without the job
  // secret, so no local process can squat it or guess another rank's from it.
  std::array<uint8_t, 16> exchange_name{};
};

// After the table, a job that spans hosts runs a second round: every rank sends a blob (its
// network address) and receives every rank's (kBlobs).
enum class MsgType : uint16_t { kHello = 1, kTable = 2, kError = 3, kBlob = 4, kBlobs = 5 };

constexpr size_t kHeaderBytes = 12;
constexpr size_t kRankInfoBytes = 4 * 4 + 8 * 8 + 16;
constexpr uint32_t kMaxRanks = 1 << 16;
constexpr uint32_t kMaxPayload = kMaxRanks * kRankInfoBytes + 16;
constexpr size_t kMaxBlob = kRankInfoBytes - 4;  // a table of blobs fits in kMaxPayload too

struct Header {
  MsgType type;
  uint32_t length;
};

std::vector<uint8_t> encode_hello(const Secret& secret, const RankInfo& me);
std::vector<uint8_t> encode_table(const std::vector<RankInfo>& all);
// An error carries the sclResult_t the ranks should return, and a message.
std::vector<uint8_t> encode_error(const std::string& message, sclResult_t code = sclInvalidUsage);

// Parses a header; rejects bad magic, version, type or a length above kMaxPayload.
Result<Header> decode_header(std::span<const uint8_t> bytes);
struct Hello {
  Secret secret;
  RankInfo info;
};
Result<Hello> decode_hello(std::span<const uint8_t> payload);
// A table must hold exactly `expect_ranks` entries, each with its own rank in order.
Result<std::vector<RankInfo>> decode_table(std::span<const uint8_t> payload, int expect_ranks);
std::vector<uint8_t> encode_blob(std::span<const uint8_t> blob);
std::vector<uint8_t> encode_blobs(const std::vector<std::vector<uint8_t>>& blobs);
Result<std::vector<uint8_t>> decode_blob(std::span<const uint8_t> payload);
// Exactly `expect_ranks` blobs, each at most kMaxBlob bytes.
Result<std::vector<std::vector<uint8_t>>> decode_blobs(std::span<const uint8_t> payload,
                                                       int expect_ranks);
std::string decode_error(std::span<const uint8_t> payload, sclResult_t* code = nullptr);

}  // namespace stratacl::bootstrap
