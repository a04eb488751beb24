// Generates the seed corpora in tests/fuzz/corpus: a few valid inputs per target and near-misses
// one field away from valid, so the fuzzer starts past the magic numbers and length checks. The
// seeds come from the library's own encoders, so they follow the format if it changes.
//
// Usage: fuzz_make_corpus DIR            writes DIR/{wire,unique_id,root}/*
//        fuzz_make_corpus --check DIR    fails unless DIR holds exactly what would be written
#include <arpa/inet.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "bootstrap/unique_id.h"
#include "bootstrap/wire.h"
#include "fuzz_util.h"

namespace stratacl::bootstrap {
namespace {

namespace fs = std::filesystem;
using Bytes = std::vector<uint8_t>;
using Corpus = std::map<std::string, Bytes>;  // file name -> contents

constexpr Secret kSeedSecret = {0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77,
                                0x88, 0x99, 0xaa, 0xbb, 0xcc, 0xdd, 0xee, 0xff};

RankInfo info(int rank, int nranks) {
  RankInfo r;
  r.rank = rank;
  r.nranks = nranks;
  r.pid = 4000 + rank;
  r.uid = 1000;
  r.host_hash = 0x243f6a8885a308d3;
  r.heap_nonce = 0x13198a2e03707344 + uint64_t(rank);
  r.heap_bytes = uint64_t(1) << 30;
  r.cb_offset = 4096;
  r.staging_bytes = uint64_t(1) << 20;
  r.staging_offset = uint64_t(1) << 29;
  r.doorbell_bytes = uint64_t(64) << 20;
  r.doorbell_offset = 256 * uint64_t(rank);
  for (size_t i = 0; i < r.exchange_name.size(); ++i) r.exchange_name[i] = uint8_t(17 * i + rank);
  return r;
}

std::vector<RankInfo> ranks(int n) {
  std::vector<RankInfo> all;
  for (int r = 0; r < n; ++r) all.push_back(info(r, n));
  return all;
}

Bytes cat(std::initializer_list<Bytes> parts) {
  Bytes out;
  for (const Bytes& p : parts) out.insert(out.end(), p.begin(), p.end());
  return out;
}

Bytes with_byte(Bytes b, size_t at, uint8_t v) {
  b.at(at) = v;
  return b;
}

// fuzz_wire: a rank-count byte, then framed messages.
Corpus wire_corpus() {
  const Bytes hello = encode_hello(kSeedSecret, info(1, 2));
  const Bytes table3 = encode_table(ranks(3));
  RankInfo pid0 = info(0, 1), rank_high = info(2, 2);
  pid0.pid = 0;
  std::vector<RankInfo> swapped = ranks(2);
  std::swap(swapped[0], swapped[1]);
  Bytes huge = hello;
  const uint32_t too_long = kMaxPayload + 1;
  std::memcpy(huge.data() + 8, &too_long, 4);

  Corpus c;
  c["hello"] = cat({{2}, hello});
  c["table_1"] = cat({{1}, encode_table(ranks(1))});
  c["table_3"] = cat({{3}, table3});
  c["error"] =
      cat({{0}, encode_error("rank 1 was started with nranks=4 but others with nranks=2")});
  c["error_timeout"] = cat({{0}, encode_error("rendezvous timed out", sclTimeout)});
  c["error_code_success"] = cat({{0}, with_byte(encode_error("odd", sclTimeout), 12, 0)});
  c["error_code_unknown"] = cat({{0}, with_byte(encode_error("odd", sclTimeout), 15, 0x80)});
  // An error payload too short to hold the code: decode_error takes it all as text.
  const Bytes error_header(hello.begin(), hello.begin() + kHeaderBytes);
  c["error_no_code"] = cat({{0}, with_byte(with_byte(error_header, 6, 3), 8, 2), {'h', 'i'}});
  c["stream_hello_table_error"] = cat({{2}, hello, encode_table(ranks(2)), encode_error("boom")});
  c["hello_bad_magic"] = cat({{2}, with_byte(hello, 0, 0x42)});
  c["hello_bad_version"] = cat({{2}, with_byte(hello, 4, 2)});
  c["hello_bad_type"] = cat({{2}, with_byte(hello, 6, 0x40)});
  c["blob"] = cat({{0}, encode_blob(Bytes{10, 213, 5, 1})});
  c["blobs_2"] = cat({{2}, encode_blobs({Bytes{1, 2, 3}, Bytes{}})});
  c["hello_too_long"] = cat({{2}, huge});
  c["hello_truncated"] = cat({{2}, Bytes(hello.begin(), hello.end() - 5)});
  c["hello_pid_zero"] = cat({{1}, encode_hello(kSeedSecret, pid0)});
  c["hello_rank_too_high"] = cat({{2}, encode_hello(kSeedSecret, rank_high)});
  c["table_out_of_order"] = cat({{2}, encode_table(swapped)});
  c["table_count_lies"] = cat({{3}, with_byte(encode_table(ranks(2)), kHeaderBytes, 3)});
  c["table_wrong_selector"] = cat({{2}, table3});
  c["error_control_codes"] = cat({{0}, encode_error("bad\x1b[31m\r\n\x7f\xff")});
  c["short_header"] = cat({{1}, Bytes(hello.begin(), hello.begin() + 7)});
  c["negative_ranks"] = cat({{0xff}, encode_table(ranks(1))});
  return c;
}

// fuzz_unique_id: the 128-byte id, then optionally a hex secret.
Corpus unique_id_corpus() {
  IdData d;
  d.root.sin_family = AF_INET;
  d.root.sin_port = htons(29500);
  d.root.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  d.secret = kSeedSecret;
  const sclUniqueId id = encode_id(d);
  const Bytes valid(id.internal, id.internal + sizeof id.internal);
  auto text = [](const std::string& s) { return Bytes(s.begin(), s.end()); };
  const std::string hex = secret_hex(kSeedSecret);
  Bytes trailing = valid;
  for (size_t i = 44; i < trailing.size(); ++i) trailing[i] = uint8_t(i);

  Corpus c;
  c["valid"] = valid;
  c["valid_secret_hex"] = cat({valid, text(hex)});
  c["valid_secret_hex_upper"] = cat({valid, text("00112233445566778899AABBCCDDEEFF")});
  c["secret_hex_bad_digit"] = cat({valid, text("00112233445566778899aabbccddeegf")});
  c["secret_hex_short"] = cat({valid, text(hex.substr(0, 31))});
  c["bad_magic"] = with_byte(valid, 0, 0);
  c["bad_version"] = with_byte(valid, 4, 2);
  c["family_inet6"] = with_byte(valid, 6, AF_INET6);
  c["port_zero"] = with_byte(with_byte(valid, 8, 0), 9, 0);
  c["trailing_bytes"] = trailing;
  c["all_zero"] = Bytes(sizeof id.internal, 0);
  c["short"] = Bytes(valid.begin(), valid.begin() + 40);
  return c;
}

// fuzz_root: connections, each {u16 length, bytes}.
Corpus root_corpus() {
  auto hello = [](int rank, int nranks, const Secret& s = fuzz::kRootSecret) {
    return encode_hello(s, info(rank, nranks));
  };
  auto conns = [](std::initializer_list<Bytes> each) {
    Bytes out;
    for (const Bytes& b : each) fuzz::append_connection(out, b);
    return out;
  };
  const Bytes garbage = {'G', 'E', 'T', ' ', '/', ' ', 'H', 'T', 'T', 'P', '/', '1', '.', '1'};
  const Bytes h = hello(0, 1);

  Corpus c;
  c["one_rank"] = conns({h});
  c["two_ranks"] = conns({hello(1, 2), hello(0, 2)});
  c["three_ranks_and_stranger"] =
      conns({hello(0, 3), hello(1, 3, kSeedSecret), hello(2, 3), hello(1, 3)});
  c["nranks_mismatch"] = conns({hello(0, 2), hello(1, 3)});
  c["duplicate_rank"] = conns({hello(0, 2), hello(0, 2)});
  c["incomplete"] = conns({hello(0, 3), hello(2, 3)});
  c["junk_then_rank"] = conns({garbage, encode_error("hi"), Bytes(h.begin(), h.end() - 1), h});
  c["trailing_bytes"] = conns({cat({h, garbage})});
  c["table_to_root"] = conns({encode_table(ranks(1))});
  // Across hosts: the second round's blobs follow each hello.
  auto on_host = [](int rank, int nranks, uint64_t host) {
    RankInfo r = info(rank, nranks);
    r.host_hash = host;
    return encode_hello(fuzz::kRootSecret, r);
  };
  const Bytes addr0 = {10, 213, 5, 1}, addr1 = {10, 213, 5, 2};
  const Bytes h0 = on_host(0, 2, 1), h1 = on_host(1, 2, 2);
  c["two_hosts"] = conns({cat({h1, encode_blob(addr1)}), cat({h0, encode_blob(addr0)})});
  c["two_hosts_one_blob"] = conns({h1, cat({h0, encode_blob(addr0)})});
  c["two_hosts_hello_twice"] = conns({cat({h1, h1}), cat({h0, encode_blob(Bytes{})})});
  return c;
}

bool check(const fs::path& dir, const Corpus& want) {
  if (!fs::is_directory(dir)) {
    std::fprintf(stderr, "%s: no such directory\n", dir.c_str());
    return false;
  }
  bool ok = true;
  for (const auto& [name, bytes] : want) {
    std::ifstream in(dir / name, std::ios::binary);
    const Bytes have((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (!in.is_open() || have != bytes) {
      std::fprintf(stderr, "%s: missing or stale\n", (dir / name).c_str());
      ok = false;
    }
  }
  for (const fs::directory_entry& e : fs::directory_iterator(dir)) {
    if (!want.count(e.path().filename().string())) {
      std::fprintf(stderr, "%s: not generated by make_corpus\n", e.path().c_str());
      ok = false;
    }
  }
  return ok;
}

void write(const fs::path& dir, const Corpus& corpus) {
  fs::create_directories(dir);
  for (const auto& [name, bytes] : corpus) {
    std::ofstream out(dir / name, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
  }
}

}  // namespace
}  // namespace stratacl::bootstrap

int main(int argc, char** argv) {
  namespace sb = stratacl::bootstrap;
  const bool check_only = argc == 3 && std::string(argv[1]) == "--check";
  if (argc != 2 && !check_only) {
    std::fprintf(stderr, "usage: %s [--check] DIR\n", argv[0]);
    return 2;
  }
  const sb::fs::path root = argv[argc - 1];
  const std::map<std::string, sb::Corpus> all = {
      {"wire", sb::wire_corpus()},
      {"unique_id", sb::unique_id_corpus()},
      {"root", sb::root_corpus()},
  };
  bool ok = true;
  for (const auto& [target, corpus] : all) {
    if (check_only) {
      ok = sb::check(root / target, corpus) && ok;
    } else {
      sb::write(root / target, corpus);
    }
  }
  if (check_only && !ok) std::fprintf(stderr, "regenerate with: fuzz_make_corpus %s\n", argv[2]);
  return ok ? 0 : 1;
}
