// TCP helpers for the bootstrap, every one bounded by a deadline.
#pragma once

#include <netinet/in.h>

#include <cstdint>
#include <string>
#include <vector>

#include "bootstrap/wire.h"
#include "core/deadline.h"
#include "core/status.h"
#include "core/unique_fd.h"

namespace stratacl::bootstrap {

// "host:port" (numeric IPv4 or a resolvable name) -> address. A name is resolved within the
// deadline: a resolver that never answers cannot stall init.
Result<sockaddr_in> parse_host_port(const std::string& text, const Deadline& deadline);
std::string to_string(const sockaddr_in& a);

Result<UniqueFd> tcp_listen(sockaddr_in* addr);  // binds addr (port 0: any); writes back the port
// Connects, retrying while the root is not listening yet, until the deadline. Each attempt is
// bounded by it too (an address that drops SYNs cannot hold it for the kernel's two minutes).
Result<UniqueFd> tcp_connect(const sockaddr_in& addr, const Deadline& deadline);

Status send_all(int fd, const void* data, size_t n, const Deadline& deadline);
// Waits until `fd` has something to read (or its end), until the deadline; `what` names the wait
// in the timeout's message.
Status wait_readable(int fd, const Deadline& deadline, const std::string& what);
Status recv_all(int fd, void* data, size_t n, const Deadline& deadline);
// One framed message: header, then its payload.
Result<std::vector<uint8_t>> recv_message(int fd, const Deadline& deadline, MsgType* type);

}  // namespace stratacl::bootstrap
