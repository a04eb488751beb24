#include "bootstrap/rendezvous.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <fstream>
#include <string>
#include <thread>

#include "bootstrap/socket.h"
#include "core/config.h"
#include "core/hash.h"

namespace stratacl::bootstrap {

namespace {

// A reply of `want` type, or the error the root sent instead.
Result<std::vector<uint8_t>> reply_of(int fd, MsgType want, const Deadline& deadline,
                                      const std::string& waiting) {
  MsgType type;
  Result<std::vector<uint8_t>> reply = recv_message(fd, deadline, &type);
  if (!reply.ok()) {
    Status s = reply.status();
    return Status(s.code(), s.message() + " (" + waiting + ")");
  }
  if (type == MsgType::kError) {
    sclResult_t code;
    std::string text = decode_error(*reply, &code);
    return Errorf(code, "bootstrap root: %s", text.c_str());
  }
  if (type != want) return Errorf(sclRemoteError, "bootstrap: unexpected reply");
  return reply;
}

// Connects to the root and says hello. A root crowded by strangers may close a connection it
// took for a silent one before our hello was read (bootstrap/root.cc): the connection then ends
// before any reply, and we say hello again on a new one. A root that answers never closes first.
Result<UniqueFd> hello_root(const IdData& id, const RankInfo& me, const Deadline& deadline) {
  const std::vector<uint8_t> hello = encode_hello(id.secret, me);
  for (int backoff_ms = 1;; backoff_ms = std::min(2 * backoff_ms, 64)) {
    SCL_ASSIGN_OR_RETURN(UniqueFd fd, tcp_connect(id.root, deadline));
    SCL_TRY(send_all(fd.get(), hello.data(), hello.size(), deadline));
    SCL_TRY(wait_readable(fd.get(), deadline,
                          "waiting for the other ranks at root " + to_string(id.root)));
    char first;
    const ssize_t r = recv(fd.get(), &first, 1, MSG_PEEK | MSG_DONTWAIT);
    const bool dropped = r == 0 || (r < 0 && errno == ECONNRESET);
    if (!dropped) return fd;
    std::this_thread::sleep_for(std::chrono::milliseconds(backoff_ms));
  }
}

}  // namespace

bool spans_hosts(const std::vector<RankInfo>& table) {
  for (const RankInfo& r : table) {
    if (r.host_hash != table[0].host_hash) return true;
  }
  return false;
}

Result<std::vector<std::vector<uint8_t>>> share_blobs(const Joined& joined,
                                                      std::span<const uint8_t> mine,
                                                      const Deadline& deadline) {
  if (mine.size() > kMaxBlob) {
    return Errorf(sclInternalError, "bootstrap: a network address of %zu bytes", mine.size());
  }
  std::vector<uint8_t> msg = encode_blob(mine);
  SCL_TRY(send_all(joined.root.get(), msg.data(), msg.size(), deadline));
  SCL_ASSIGN_OR_RETURN(
      std::vector<uint8_t> reply,
      reply_of(joined.root.get(), MsgType::kBlobs, deadline, "exchanging network addresses"));
  return decode_blobs(reply, int(joined.table.size()));
}

Result<Joined> rendezvous(const IdData& id, const RankInfo& me, const Deadline& deadline) {
  SCL_ASSIGN_OR_RETURN(UniqueFd fd, hello_root(id, me, deadline));
  SCL_ASSIGN_OR_RETURN(std::vector<uint8_t> reply,
                       reply_of(fd.get(), MsgType::kTable, deadline,
                                "waiting for the other ranks at root " + to_string(id.root)));
  SCL_ASSIGN_OR_RETURN(std::vector<RankInfo> table, decode_table(reply, me.nranks));
  return Joined{std::move(table), std::move(fd)};
}

uint64_t host_hash() {
  std::string ident = process_text(Var::kHostId);
  if (ident.empty()) {
    // What ranks must share to share memory: the kernel (boot id), and the IPC and network
    // namespaces (the heap exchange uses an abstract Unix socket, which belongs to the network
    // namespace). The hostname says neither: containers on one machine may share or differ.
    std::ifstream boot("/proc/sys/kernel/random/boot_id");
    std::getline(boot, ident);
    struct stat st {};
    for (const char* ns : {"/proc/self/ns/net", "/proc/self/ns/ipc"}) {
      ident += '/';
      ident += std::to_string(stat(ns, &st) == 0 ? uint64_t(st.st_ino) : 0);
    }
  }
  return fnv1a(kFnvBasisShared, ident);
}

}  // namespace stratacl::bootstrap
