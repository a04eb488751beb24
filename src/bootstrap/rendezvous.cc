#include "bootstrap/rendezvous.h"

#include <unistd.h>

#include <fstream>
#include <string>

#include "bootstrap/socket.h"
#include "core/config.h"

namespace stratacl::bootstrap {

Result<std::vector<RankInfo>> rendezvous(const IdData& id, const RankInfo& me,
                                         const Deadline& deadline) {
  Result<UniqueFd> fd = tcp_connect(id.root, deadline);
  if (!fd.ok()) return fd.status();
  std::vector<uint8_t> hello = encode_hello(id.secret, me);
  SCL_TRY(send_all(fd->get(), hello.data(), hello.size(), deadline));
  MsgType type;
  Result<std::vector<uint8_t>> reply = recv_message(fd->get(), deadline, &type);
  if (!reply.ok()) {
    Status s = reply.status();
    return Status(s.code(), s.message() + " (waiting for the other ranks at root " +
                                to_string(id.root) + ")");
  }
  if (type == MsgType::kError) {
    sclResult_t code;
    std::string text = decode_error(*reply, &code);
    return Errorf(code, "bootstrap root: %s", text.c_str());
  }
  if (type != MsgType::kTable) return Errorf(sclRemoteError, "bootstrap: unexpected reply");
  return decode_table(*reply, me.nranks);
}

uint64_t host_hash() {
  std::string ident = process_text(Var::kHostId);
  if (ident.empty()) {
    char host[256] = {0};
    gethostname(host, sizeof host - 1);
    std::ifstream boot("/proc/sys/kernel/random/boot_id");
    std::string boot_id;
    std::getline(boot, boot_id);
    ident = std::string(host) + "/" + boot_id;
  }
  uint64_t h = 1469598103934665603ull;  // FNV-1a
  for (unsigned char c : ident) h = (h ^ c) * 1099511628211ull;
  return h;
}

}  // namespace stratacl::bootstrap
