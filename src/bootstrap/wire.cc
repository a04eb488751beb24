#include "bootstrap/wire.h"

#include <cstring>

namespace stratacl::bootstrap {
namespace {
constexpr uint32_t kWireMagic = 0x53434c42;  // "SCLB"
constexpr uint16_t kWireVersion = 3;

class Writer {
 public:
  template <typename T>
  void put(T v) {
    uint8_t b[sizeof(T)];
    std::memcpy(b, &v, sizeof(T));  // the wire is little-endian, as is every supported host
    out_.insert(out_.end(), b, b + sizeof(T));
  }
  void put_bytes(const void* p, size_t n) {
    auto* b = static_cast<const uint8_t*>(p);
    out_.insert(out_.end(), b, b + n);
  }
  std::vector<uint8_t> finish(MsgType type) {
    std::vector<uint8_t> msg;
    Writer h;
    h.put(kWireMagic);
    h.put(kWireVersion);
    h.put(uint16_t(type));
    h.put(uint32_t(out_.size()));
    msg = std::move(h.out_);
    msg.insert(msg.end(), out_.begin(), out_.end());
    return msg;
  }

 private:
  std::vector<uint8_t> out_;
};

class Reader {
 public:
  explicit Reader(std::span<const uint8_t> b) : b_(b) {}
  template <typename T>
  bool get(T* v) {
    if (b_.size() - pos_ < sizeof(T)) return false;
    std::memcpy(v, b_.data() + pos_, sizeof(T));
    pos_ += sizeof(T);
    return true;
  }
  bool get_bytes(void* p, size_t n) {
    if (b_.size() - pos_ < n) return false;
    if (n) std::memcpy(p, b_.data() + pos_, n);  // an empty blob's vector may have no storage
    pos_ += n;
    return true;
  }
  size_t left() const { return b_.size() - pos_; }

 private:
  std::span<const uint8_t> b_;
  size_t pos_ = 0;
};

void put_info(Writer& w, const RankInfo& r) {
  w.put(r.rank), w.put(r.nranks), w.put(r.pid), w.put(r.uid);
  w.put(r.host_hash), w.put(r.heap_nonce), w.put(r.heap_bytes), w.put(r.cb_offset);
  w.put(r.staging_bytes), w.put(r.staging_offset), w.put(r.doorbell_bytes),
      w.put(r.doorbell_offset);
  w.put_bytes(r.exchange_name.data(), r.exchange_name.size());
}

bool get_info(Reader& rd, RankInfo* r) {
  return rd.get(&r->rank) && rd.get(&r->nranks) && rd.get(&r->pid) && rd.get(&r->uid) &&
         rd.get(&r->host_hash) && rd.get(&r->heap_nonce) && rd.get(&r->heap_bytes) &&
         rd.get(&r->cb_offset) && rd.get(&r->staging_bytes) && rd.get(&r->staging_offset) &&
         rd.get(&r->doorbell_bytes) && rd.get(&r->doorbell_offset) &&
         rd.get_bytes(r->exchange_name.data(), r->exchange_name.size());
}

Status check_info(const RankInfo& r) {
  if (r.nranks < 1 || uint32_t(r.nranks) > kMaxRanks || r.rank < 0 || r.rank >= r.nranks) {
    return Errorf(sclInvalidUsage, "bootstrap: rank %d of %d is out of range", r.rank, r.nranks);
  }
  if (r.pid <= 0) return Errorf(sclRemoteError, "bootstrap: rank %d sent pid %d", r.rank, r.pid);
  return Status::Ok();
}
}  // namespace

std::vector<uint8_t> encode_hello(const Secret& secret, const RankInfo& me) {
  Writer w;
  w.put_bytes(secret.data(), secret.size());
  put_info(w, me);
  return w.finish(MsgType::kHello);
}

std::vector<uint8_t> encode_table(const std::vector<RankInfo>& all) {
  Writer w;
  w.put(uint32_t(all.size()));
  for (const RankInfo& r : all) put_info(w, r);
  return w.finish(MsgType::kTable);
}

std::vector<uint8_t> encode_blob(std::span<const uint8_t> blob) {
  Writer w;
  w.put(uint32_t(blob.size()));
  w.put_bytes(blob.data(), blob.size());
  return w.finish(MsgType::kBlob);
}

std::vector<uint8_t> encode_blobs(const std::vector<std::vector<uint8_t>>& blobs) {
  Writer w;
  w.put(uint32_t(blobs.size()));
  for (const auto& b : blobs) w.put(uint32_t(b.size())), w.put_bytes(b.data(), b.size());
  return w.finish(MsgType::kBlobs);
}

namespace {
bool get_blob(Reader& rd, std::vector<uint8_t>* out) {
  uint32_t n;
  if (!rd.get(&n) || n > kMaxBlob) return false;
  out->resize(n);
  return rd.get_bytes(out->data(), n);
}
}  // namespace

Result<std::vector<uint8_t>> decode_blob(std::span<const uint8_t> payload) {
  Reader rd(payload);
  std::vector<uint8_t> blob;
  if (!get_blob(rd, &blob) || rd.left()) {
    return Errorf(sclRemoteError, "bootstrap: malformed blob (%zu bytes)", payload.size());
  }
  return blob;
}

Result<std::vector<std::vector<uint8_t>>> decode_blobs(std::span<const uint8_t> payload,
                                                       int expect_ranks) {
  Reader rd(payload);
  uint32_t n;
  // Bounded before allocating: every entry takes at least its 4-byte length.
  if (!rd.get(&n) || n != uint32_t(expect_ranks) || n > kMaxRanks || size_t(n) * 4 > rd.left()) {
    return Errorf(sclRemoteError, "bootstrap: malformed blob table for %d ranks", expect_ranks);
  }
  std::vector<std::vector<uint8_t>> all(n);
  for (auto& b : all) {
    if (!get_blob(rd, &b)) return Errorf(sclRemoteError, "bootstrap: truncated blob table");
  }
  if (rd.left()) return Errorf(sclRemoteError, "bootstrap: trailing bytes after the blob table");
  return all;
}

std::vector<uint8_t> encode_error(const std::string& message, sclResult_t code) {
  Writer w;
  w.put(int32_t(code));
  w.put_bytes(message.data(), message.size() > 1024 ? 1024 : message.size());
  return w.finish(MsgType::kError);
}

Result<Header> decode_header(std::span<const uint8_t> bytes) {
  Reader rd(bytes);
  uint32_t magic, length;
  uint16_t version, type;
  if (!rd.get(&magic) || !rd.get(&version) || !rd.get(&type) || !rd.get(&length)) {
    return Errorf(sclRemoteError, "bootstrap: short header");
  }
  if (magic != kWireMagic) return Errorf(sclRemoteError, "bootstrap: bad magic 0x%08x", magic);
  if (version != kWireVersion) {
    return Errorf(sclRemoteError, "bootstrap: peer speaks version %u, we speak %u", version,
                  kWireVersion);
  }
  if (type < uint16_t(MsgType::kHello) || type > uint16_t(MsgType::kBlobs)) {
    return Errorf(sclRemoteError, "bootstrap: unknown message type %u", type);
  }
  if (length > kMaxPayload) return Errorf(sclRemoteError, "bootstrap: message of %u bytes", length);
  return Header{MsgType(type), length};
}

Result<Hello> decode_hello(std::span<const uint8_t> payload) {
  Reader rd(payload);
  Hello h;
  if (!rd.get_bytes(h.secret.data(), h.secret.size()) || !get_info(rd, &h.info) || rd.left()) {
    return Errorf(sclRemoteError, "bootstrap: malformed hello (%zu bytes)", payload.size());
  }
  SCL_TRY(check_info(h.info));
  return h;
}

Result<std::vector<RankInfo>> decode_table(std::span<const uint8_t> payload, int expect_ranks) {
  Reader rd(payload);
  uint32_t n;
  if (!rd.get(&n) || n != uint32_t(expect_ranks) || rd.left() != size_t(n) * kRankInfoBytes) {
    return Errorf(sclRemoteError, "bootstrap: malformed table for %d ranks", expect_ranks);
  }
  std::vector<RankInfo> all(n);
  for (uint32_t i = 0; i < n; ++i) {
    if (!get_info(rd, &all[i])) return Errorf(sclRemoteError, "bootstrap: truncated table");
    SCL_TRY(check_info(all[i]));
    if (all[i].rank != int(i) || all[i].nranks != expect_ranks) {
      return Errorf(sclRemoteError, "bootstrap: table entry %u names rank %d of %d", i, all[i].rank,
                    all[i].nranks);
    }
  }
  return all;
}

std::string decode_error(std::span<const uint8_t> payload, sclResult_t* code) {
  Reader rd(payload);
  int32_t c = sclRemoteError;
  if (!rd.get(&c) || c <= sclSuccess || c >= sclNumResults) c = sclRemoteError;
  if (code) *code = sclResult_t(c);
  std::string s(payload.begin() + (payload.size() - rd.left()), payload.end());
  for (char& c : s) {
    if (c < 32 || c > 126) c = '?';  // a hostile peer must not write control codes to our logs
  }
  return s;
}

}  // namespace stratacl::bootstrap
