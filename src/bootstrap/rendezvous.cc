#include "bootstrap/rendezvous.h"

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "bootstrap/socket.h"
#include "core/config.h"

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
  Result<std::vector<uint8_t>> reply =
      reply_of(joined.root.get(), MsgType::kBlobs, deadline, "exchanging network addresses");
  if (!reply.ok()) return reply.status();
  return decode_blobs(*reply, int(joined.table.size()));
}

Result<Joined> rendezvous(const IdData& id, const RankInfo& me, const Deadline& deadline) {
  Result<UniqueFd> fd = tcp_connect(id.root, deadline);
  if (!fd.ok()) return fd.status();
  std::vector<uint8_t> hello = encode_hello(id.secret, me);
  SCL_TRY(send_all(fd->get(), hello.data(), hello.size(), deadline));
  Result<std::vector<uint8_t>> reply =
      reply_of(fd->get(), MsgType::kTable, deadline,
               "waiting for the other ranks at root " + to_string(id.root));
  if (!reply.ok()) return reply.status();
  Result<std::vector<RankInfo>> table = decode_table(*reply, me.nranks);
  if (!table.ok()) return table.status();
  return Joined{std::move(*table), std::move(*fd)};
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
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (unsigned char c : ident) h = (h ^ c) * 1099511628211ull;
  return h;
}

}  // namespace stratacl::bootstrap
