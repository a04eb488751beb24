// Fuzzes the rendezvous root with hostile connections. The root's parsing is private to root.cc
// and reads from sockets, so this drives a real serve_root: each input's connections (see
// fuzz_util.h) are connected to a listener and written in full before the root starts, then the
// root runs on this thread until the rendezvous completes or its short timeout passes. An input
// that does not complete a rendezvous costs the whole timeout, hence a separate, slower target.
//
// What each client then received must be consistent with what it sent: no reply at all unless it
// sent a valid hello with the job secret; otherwise one error, or a table that its own rendezvous()
// accepts, lists it, and is the same for every member. A table that spans hosts is followed by
// exactly one more message, the same for every member: every rank's blob, exactly as each sent it,
// if every member sent one after its hello, and an error otherwise.
#include <sys/socket.h>
#include <sys/un.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "bootstrap/rendezvous.h"
#include "bootstrap/root.h"
#include "bootstrap/wire.h"
#include "core/unique_fd.h"
#include "fuzz_util.h"

namespace stratacl::bootstrap {
namespace {

using Bytes = std::span<const uint8_t>;

// Long enough for the root to drain a handful of buffered connections, short enough for ~100s of
// inputs a second. Timing never decides a property below: a client the root did not get to before
// the deadline simply gets no reply or the timeout error.
constexpr int64_t kTimeoutMs = 5;
constexpr size_t kHelloPayload = 16 + kRankInfoBytes;  // the secret, then one RankInfo
constexpr size_t kCodeBytes = 4;                       // an error payload's leading int32 code

// AF_UNIX rather than TCP: the root needs only accept/recv/send, and unix sockets leave no
// TIME_WAIT entries or spent ports behind at thousands of connections a second.
struct Listener {
  int fd = -1;
  sockaddr_un addr{};
  socklen_t len = 0;
};

const Listener& listener() {
  static const Listener l = [] {
    Listener l;
    l.fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    // Binding just the family autobinds a unique abstract name: nothing on disk, and parallel
    // runs cannot collide.
    FUZZ_CHECK(l.fd >= 0 && bind(l.fd, reinterpret_cast<sockaddr*>(&a), sizeof(sa_family_t)) == 0);
    FUZZ_CHECK(listen(l.fd, 64) == 0);
    l.len = sizeof l.addr;
    FUZZ_CHECK(getsockname(l.fd, reinterpret_cast<sockaddr*>(&l.addr), &l.len) == 0);
    return l;
  }();
  return l;
}

struct Client {
  UniqueFd fd;
  Bytes sent;
  std::vector<uint8_t> received;
};

UniqueFd connect_and_send(Bytes bytes) {
  const Listener& l = listener();
  UniqueFd fd(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  // The connection waits in the backlog (64 > kRootMaxConnections) until the root accepts it, and
  // a record (< 64 KiB) fits in the socket buffer, so neither call waits for the root.
  FUZZ_CHECK(fd.valid());
  FUZZ_CHECK(connect(fd.get(), reinterpret_cast<const sockaddr*>(&l.addr), l.len) == 0);
  if (!bytes.empty()) {
    FUZZ_CHECK(send(fd.get(), bytes.data(), bytes.size(), MSG_NOSIGNAL) == ssize_t(bytes.size()));
  }
  shutdown(fd.get(), SHUT_WR);  // the root sees end-of-stream after these bytes
  return fd;
}

std::vector<uint8_t> read_all(int fd) {
  std::vector<uint8_t> out;
  uint8_t buf[4096];
  for (;;) {
    ssize_t r = recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    if (r <= 0) return out;  // the root has closed every connection by now
    out.insert(out.end(), buf, buf + r);
  }
}

// The rank a client claims if the root should admit it: a hello header, a payload decode_hello
// accepts, and the job secret.
std::optional<RankInfo> admissible(Bytes sent) {
  if (sent.size() < kHeaderBytes + kHelloPayload) return std::nullopt;
  Result<Header> h = decode_header(sent.first(kHeaderBytes));
  if (!h.ok() || h->type != MsgType::kHello || h->length != kHelloPayload) return std::nullopt;
  Result<Hello> hello = decode_hello(sent.subspan(kHeaderBytes, kHelloPayload));
  if (!hello.ok() || hello->secret != fuzz::kRootSecret) return std::nullopt;
  return hello->info;
}

// The blob a member sent right after its hello, if it is one the root must accept. Bytes after
// it are never read.
std::optional<std::vector<uint8_t>> blob_sent(Bytes sent) {
  Bytes rest = sent.subspan(kHeaderBytes + kHelloPayload);
  if (rest.size() < kHeaderBytes) return std::nullopt;
  Result<Header> h = decode_header(rest.first(kHeaderBytes));
  if (!h.ok() || h->type != MsgType::kBlob || rest.size() - kHeaderBytes < h->length) {
    return std::nullopt;
  }
  Result<std::vector<uint8_t>> blob = decode_blob(rest.subspan(kHeaderBytes, h->length));
  if (!blob.ok()) return std::nullopt;
  return *blob;
}

struct Message {
  MsgType type;
  Bytes payload;
};

// Whole messages, back to back, and nothing else.
std::vector<Message> split_messages(Bytes received) {
  std::vector<Message> out;
  while (!received.empty()) {
    FUZZ_CHECK(received.size() >= kHeaderBytes);
    Result<Header> h = decode_header(received.first(kHeaderBytes));
    FUZZ_CHECK(h.ok() && received.size() - kHeaderBytes >= h->length);
    out.push_back({h->type, received.subspan(kHeaderBytes, h->length)});
    received = received.subspan(kHeaderBytes + h->length);
  }
  return out;
}

// {int32 code, text}: a code decode_error keeps as is, and text that is non-empty and already
// printable (the root must not relay control codes it was sent).
void check_error(Bytes payload) {
  FUZZ_CHECK(payload.size() > kCodeBytes && payload.size() <= kCodeBytes + 1024);
  int32_t raw;
  std::memcpy(&raw, payload.data(), kCodeBytes);
  sclResult_t code = sclSuccess;
  const std::string text = decode_error(payload, &code);
  FUZZ_CHECK(code == raw && text == std::string(payload.begin() + kCodeBytes, payload.end()));
}

// Messages every member must have received identically.
struct Shared {
  std::optional<std::vector<uint8_t>> first;
  void check(Bytes msg) {
    if (!first) first.emplace(msg.begin(), msg.end());
    FUZZ_CHECK(std::equal(msg.begin(), msg.end(), first->begin(), first->end()));
  }
};

void check_replies(const std::vector<Client>& clients) {
  Shared table, second;
  std::map<int, std::optional<std::vector<uint8_t>>> members;  // rank -> the blob it sent
  int table_ranks = 0;
  bool spans = false;
  std::vector<Bytes> blob_tables;
  for (const Client& c : clients) {
    if (c.received.empty()) continue;
    // No secret, no reply: a stranger must learn nothing.
    std::optional<RankInfo> info = admissible(c.sent);
    FUZZ_CHECK(info.has_value());
    std::vector<Message> msgs = split_messages(c.received);
    FUZZ_CHECK(!msgs.empty());
    if (msgs[0].type == MsgType::kError) {
      FUZZ_CHECK(msgs.size() == 1);
      check_error(msgs[0].payload);
      continue;
    }
    FUZZ_CHECK(msgs[0].type == MsgType::kTable);
    // What rendezvous() does with it: decode for its own nranks, then find itself.
    Result<std::vector<RankInfo>> t = decode_table(msgs[0].payload, info->nranks);
    FUZZ_CHECK(t.ok() && fuzz::same_info((*t)[info->rank], *info));
    table.check(Bytes(c.received).first(kHeaderBytes + msgs[0].payload.size()));
    FUZZ_CHECK(members.emplace(info->rank, blob_sent(c.sent)).second);
    table_ranks = info->nranks;
    spans = spans_hosts(*t);
    FUZZ_CHECK(msgs.size() == (spans ? 2u : 1u));
    if (!spans) continue;
    second.check(Bytes(c.received).subspan(kHeaderBytes + msgs[0].payload.size()));
    if (msgs[1].type == MsgType::kError) {
      check_error(msgs[1].payload);
    } else {
      FUZZ_CHECK(msgs[1].type == MsgType::kBlobs);
      blob_tables.push_back(msgs[1].payload);
    }
  }
  if (!table.first) return;
  // A table goes to every member, and to nobody else.
  FUZZ_CHECK(members.size() == size_t(table_ranks));
  if (!spans) return;
  // Every rank's blob, as sent, exactly when every member sent one.
  bool all_sent = true;
  for (const auto& [rank, blob] : members) all_sent = all_sent && blob.has_value();
  FUZZ_CHECK(blob_tables.empty() != all_sent);
  if (blob_tables.empty()) return;
  Result<std::vector<std::vector<uint8_t>>> blobs = decode_blobs(blob_tables[0], table_ranks);
  FUZZ_CHECK(blobs.ok());
  for (const auto& [rank, blob] : members) FUZZ_CHECK((*blobs)[size_t(rank)] == *blob);
}

void fuzz_one(const uint8_t* data, size_t size) {
  std::vector<Client> clients;
  for (Bytes conn : fuzz::split_connections(Bytes(data, size))) {
    clients.push_back({connect_and_send(conn), conn, {}});
  }
  const Listener& l = listener();
  // serve_root closes the listener it is given; the dup keeps ours for the next input.
  serve_root(UniqueFd(dup(l.fd)), fuzz::kRootSecret, kTimeoutMs);
  // Connections the root never accepted must not leak into the next input.
  for (int c; (c = accept4(l.fd, nullptr, nullptr, SOCK_CLOEXEC)) >= 0;) close(c);
  for (Client& c : clients) c.received = read_all(c.fd.get());
  check_replies(clients);
}

}  // namespace
}  // namespace stratacl::bootstrap

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  stratacl::bootstrap::fuzz_one(data, size);
  return 0;
}
